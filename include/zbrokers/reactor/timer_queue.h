// Copyright 2026 The zbrokers Authors.
//
// zb::TimerQueue holds the timers of one zb::Reactor: one-shot and periodic
// callbacks ordered by deadline.  It has no clock of its own: the caller
// passes "now" to FireDue(), which makes every rule below testable without
// sleeping.
//
//   zb::TimerQueue timers;
//   const auto t0 = zb::TimerQueue::Clock::now();
//   timers.Add(t0 + 5ms, {}, [] { /* once */ });
//   zb::TimerId beat = timers.Add(t0 + 1s, 1s, [] { /* every second */ });
//   ...
//   timers.FireDue(Clock::now(), [](std::exception_ptr) { /* report */ });
//   timers.Cancel(beat);
//
// Layout.  The queue is a std::vector sorted by deadline, latest first, so
// the earliest deadline sits at the back, where popping costs nothing; Add()
// finds its place by binary search.  An entry is 16 bytes (deadline and slot
// index); callbacks live in a separate slot table that is reused through a
// free list, so a steady-state reactor does not allocate for its timers.
// Inserting or cancelling moves the entries in front of the position (a
// memmove), which is cheapest for timers due soonest and costs O(n) for a
// timer that is due after all the others; docs/performance.md has numbers.
//
// Rules.
//   - Timers with equal deadlines fire in the order they were added.
//   - A periodic timer is re-armed from its previous deadline, not from the
//     time it fired, so lateness never accumulates.  When FireDue() is late
//     by one or more whole periods, the missed periods are skipped: the timer
//     fires once and its next deadline is the first point of its original
//     grid (first deadline + k * period) that lies strictly after `now`.
//   - Timers added while FireDue() runs (by a callback, or a periodic
//     re-arm) fire in a later call at the earliest, even when already due;
//     a callback that re-adds itself can therefore never spin one call.  A
//     deadline that is already in the past is treated as `now` of the
//     running call, so such a timer also waits behind every timer that was
//     already due.
//   - A callback may add or cancel any timer, its own included.  A cancelled
//     timer never fires.  While a one-shot callback runs its timer has
//     already fired, so cancelling it returns false; cancelling a periodic
//     timer from its own callback stops it.
//   - Exceptions thrown by callbacks go to the `on_error` sink given to
//     FireDue(); the queue stays consistent and the remaining due timers
//     still fire.
//
// Ids.  A TimerId packs a slot index and that slot's generation, so a stale
// id (a fired or cancelled timer whose slot was reused) is recognised and
// Cancel() returns false.  0 is never a valid id.  An id can only repeat
// after 2^32 timers have used the same slot.
//
// Thread-safety: none; one TimerQueue belongs to one thread (the reactor's).

#ifndef ZBROKERS_REACTOR_TIMER_QUEUE_H_
#define ZBROKERS_REACTOR_TIMER_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"

namespace zb {

// A timer's identity, returned when it is added and passed to Cancel().
using TimerId = std::uint64_t;

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = absl::AnyInvocable<void()>;
  // Receives an exception thrown by a callback.
  using ErrorSink = absl::FunctionRef<void(std::exception_ptr)>;

  TimerQueue() = default;
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Adds a timer that calls `cb` at `deadline` and then, when `period` is
  // positive, every `period` after it (see the re-arm rule above).  A
  // zero or negative period makes a one-shot timer.  `cb` must not be empty
  // (zb::Reactor refuses an empty one before it gets here).
  TimerId Add(Clock::time_point deadline, Clock::duration period, Callback cb);

  // Removes a timer.  Returns false when `id` is unknown, was cancelled
  // already, or is a one-shot timer that has fired (or is firing).
  bool Cancel(TimerId id);

  // Fires, in deadline order, every timer due at `now` (deadline <= now) that
  // was added before this call.  Returns the number of callbacks called.
  // Must not be called from one of the queue's own callbacks.
  int FireDue(Clock::time_point now, ErrorSink on_error);

  // The earliest deadline, or Clock::time_point::max() when there is none.
  Clock::time_point next_deadline() const {
    return queue_.empty() ? Clock::time_point::max()
                          : ToTime(queue_.back().deadline_ns);
  }

  // Number of live timers.
  std::size_t size() const { return queue_.size(); }
  bool empty() const { return queue_.empty(); }

 private:
  // One queued timer.  The insertion sequence number that breaks deadline
  // ties lives in the slot, which keeps entries small: inserts and cancels
  // move entries, and ties are rare.
  struct Entry {
    std::int64_t deadline_ns;
    std::uint32_t slot;
  };
  struct Slot {
    Callback cb;
    std::int64_t deadline_ns = 0;
    std::int64_t period_ns = 0;  // 0: one-shot
    std::uint64_t seq = 0;       // insertion order of its queue entry
    std::uint32_t generation = 1;
    bool live = false;
  };

  static std::int64_t ToNanos(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               t.time_since_epoch())
        .count();
  }
  static Clock::time_point ToTime(std::int64_t ns) {
    return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(ns)));
  }

  void Enqueue(std::int64_t deadline_ns, std::uint32_t slot);
  void Release(std::uint32_t slot);

  std::vector<Entry> queue_;  // latest first; the back fires next
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;  // capacity >= slots_.size()
  std::uint64_t next_seq_ = 0;
  // Set while FireDue() runs: its `now`, for the past-deadline rule.
  bool firing_ = false;
  std::int64_t round_now_ns_ = 0;
};

}  // namespace zb

#endif  // ZBROKERS_REACTOR_TIMER_QUEUE_H_
