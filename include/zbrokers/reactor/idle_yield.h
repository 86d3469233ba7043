// Copyright 2026 The zbrokers Authors.
//
// zb::IdleYield decides when a reactor thread that is about to sleep should
// first give its CPU to other runnable threads (sched_yield()) and look at
// its sockets once more.  zb::Reactor owns one (Reactor::Options::
// yield_before_sleep); it is a class of its own so that its rule can be
// tested with made-up timings.
//
// Why.  When the threads of a pipeline share a core (a broker and the
// workers it fans a request out to, all on one CPU), a reactor that sleeps
// as soon as its sockets are empty is woken by the very next message, and
// the scheduler lets the woken, lightly loaded thread preempt the producer
// at once: one wake-up (two context switches and a mailbox check on each
// side) per message or two.  Yielding once before sleeping lets the
// runnable producers go first; the reactor then finds a batch waiting
// instead of one message.  On a core of its own the yield returns at once,
// and costs one system call per sleep.  docs/performance.md ("Yield before
// sleep") has the measurements.
//
// The yield must pay for itself.  When the thread that runs instead is not
// a producer but unrelated CPU-bound work, the yield hands it a time slice
// during which an arriving message waits.  So a yield is *productive* when,
// right after it, at least kMinBatch callbacks were ready and the yield took
// at most kMaxYieldPerCallback for each of them; an unproductive yield
// doubles the number of sleeps that skip the yield (up to 2^kMaxBackoffShift
// - 1 of them), and a productive one resets it.  Only a sleep that follows
// an iteration that did some work yields: a reactor that woke for nothing
// goes back to sleep at once.
//
// Thread-safety: none; one per reactor, used on its owner thread.

#ifndef ZBROKERS_REACTOR_IDLE_YIELD_H_
#define ZBROKERS_REACTOR_IDLE_YIELD_H_

#include <chrono>
#include <cstdint>

namespace zb {

class IdleYield {
 public:
  using Clock = std::chrono::steady_clock;

  // A yield that found fewer callbacks ready than this did not pay for its
  // system call and its risk.
  static constexpr int kMinBatch = 2;
  // A producer on the same core makes a message in a few microseconds; an
  // unrelated CPU-bound thread takes a time slice (0.75 ms and up) and
  // makes none.  50 us per callback tells the two apart with a wide margin.
  static constexpr Clock::duration kMaxYieldPerCallback =
      std::chrono::microseconds(50);
  // After repeated unproductive yields, at most one sleep in 1,024 yields.
  static constexpr int kMaxBackoffShift = 10;

  struct Stats {
    std::uint64_t yields = 0;      // sched_yield() calls before a sleep
    std::uint64_t productive = 0;  // those that found a batch waiting
  };

  explicit IdleYield(bool enabled) : enabled_(enabled) {}

  // The reactor has nothing ready and is about to sleep.  `worked`: the
  // iteration before this one ran at least one callback.  True when the
  // caller should yield now, look at its sockets again, and report what it
  // found with AfterYield().
  bool BeforeSleep(bool worked);
  // What the yield that BeforeSleep() asked for found: it took `yield_time`
  // and `ready` callbacks were ready after it (0: the reactor sleeps now).
  void AfterYield(Clock::duration yield_time, int ready);

  bool enabled() const { return enabled_; }
  const Stats& stats() const { return stats_; }
  // Sleeps that skip the yield before the next one yields (0: the next
  // one yields, if it follows work).
  int sleeps_to_skip() const { return skip_; }

 private:
  const bool enabled_;
  int skip_ = 0;   // sleeps left that do not yield
  int shift_ = 0;  // log2 of the current backoff
  Stats stats_;
};

}  // namespace zb

#endif  // ZBROKERS_REACTOR_IDLE_YIELD_H_
