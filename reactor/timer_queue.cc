// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/timer_queue.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

namespace zb {
namespace {

constexpr std::int64_t kMaxNanos = std::numeric_limits<std::int64_t>::max();

TimerId MakeId(std::uint32_t generation, std::uint32_t slot) {
  return (static_cast<std::uint64_t>(generation) << 32) | slot;
}

// a + b for b >= 0, saturating: a periodic timer with an absurd period must
// not wrap around to the past.
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  return a > kMaxNanos - b ? kMaxNanos : a + b;
}

}  // namespace

TimerId TimerQueue::Add(Clock::time_point deadline, Clock::duration period,
                        Callback cb) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
    // Room for every slot, so that freeing one (a one-shot timer firing, a
    // cancel) never allocates: a timer re-armed from its own callback is
    // allocation-free from the first time.
    free_slots_.reserve(slots_.capacity());
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.period_ns = std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(period).count());
  s.live = true;
  std::int64_t deadline_ns = ToNanos(deadline);
  // See the header: during FireDue() a past deadline counts as the round's
  // `now`, so the new timer queues behind every timer that was already due
  // instead of in front of them (where it would stop the round early).
  if (firing_ && deadline_ns < round_now_ns_) deadline_ns = round_now_ns_;
  Enqueue(deadline_ns, slot);
  return MakeId(s.generation, slot);
}

void TimerQueue::Enqueue(std::int64_t deadline_ns, std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.deadline_ns = deadline_ns;
  s.seq = next_seq_++;
  // The new entry has the largest sequence number, so among equal deadlines
  // it belongs in front of all of them (it fires after them).  Its place is
  // therefore the first entry that is not strictly later.
  auto pos = std::partition_point(
      queue_.begin(), queue_.end(),
      [deadline_ns](const Entry& e) { return e.deadline_ns > deadline_ns; });
  queue_.insert(pos, Entry{deadline_ns, slot});
}

void TimerQueue::Release(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.live = false;
  s.cb = nullptr;
  // Generation 0 would let slot 0 produce the invalid id 0.
  if (++s.generation == 0) s.generation = 1;
  free_slots_.push_back(slot);
}

bool TimerQueue::Cancel(TimerId id) {
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(id >> 32);
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (!s.live || s.generation != generation) return false;
  // Entries in front of ours are later, or equally late and added after it.
  const std::int64_t deadline_ns = s.deadline_ns;
  const std::uint64_t seq = s.seq;
  auto pos =
      std::partition_point(queue_.begin(), queue_.end(), [&](const Entry& e) {
        return e.deadline_ns > deadline_ns ||
               (e.deadline_ns == deadline_ns && slots_[e.slot].seq > seq);
      });
  // A live slot always has exactly one entry; a periodic timer that is
  // firing right now has already been re-queued.
  assert(pos != queue_.end() && pos->slot == slot);
  queue_.erase(pos);
  Release(slot);
  return true;
}

int TimerQueue::FireDue(Clock::time_point now, ErrorSink on_error) {
  assert(!firing_ && "TimerQueue::FireDue called from a timer callback");
  if (queue_.empty()) return 0;
  const std::int64_t now_ns = ToNanos(now);
  // Entries queued from here on have seq >= round_end and wait for the next
  // call.  Because their deadlines are >= now_ns (see Add()), every older due
  // entry lies behind them, so stopping at the first one loses nothing.
  const std::uint64_t round_end = next_seq_;
  firing_ = true;
  round_now_ns_ = now_ns;
  // Cleared however this call ends (an error sink may throw).
  struct ResetFiring {
    bool& flag;
    ~ResetFiring() { flag = false; }
  } reset_firing{firing_};
  int fired = 0;
  while (!queue_.empty()) {
    const Entry e = queue_.back();
    if (e.deadline_ns > now_ns) break;
    Slot* s = &slots_[e.slot];
    if (s->seq >= round_end) break;
    queue_.pop_back();
    const std::uint32_t generation = s->generation;
    const std::int64_t period = s->period_ns;
    // The callback runs from this stack frame, so it may cancel its own
    // timer (which empties the slot) or add timers (which may move slots_).
    Callback cb = std::move(s->cb);
    if (period > 0) {
      // Stay on the original grid; skip the periods that were missed.
      std::int64_t next = SaturatingAdd(e.deadline_ns, period);
      if (next <= now_ns) {
        next = SaturatingAdd(next, ((now_ns - next) / period + 1) * period);
      }
      Enqueue(next, e.slot);
    } else {
      Release(e.slot);
    }
    try {
      cb();
    } catch (...) {
      on_error(std::current_exception());
    }
    ++fired;
    if (period > 0) {
      s = &slots_[e.slot];
      // Still the same timer (not cancelled, slot not reused): give the
      // callback back for its next deadline.
      if (s->live && s->generation == generation) s->cb = std::move(cb);
    }
  }
  return fired;
}

}  // namespace zb
