// Copyright 2026 The zbrokers Authors.
//
// Timer structures under the same workloads, in one binary:
//   - SortedVector: zb::TimerQueue, the reactor's own timer queue (a vector
//     sorted latest-first, binary-search insert, eager erase on cancel);
//   - BinaryHeap:   a min-heap (std::push_heap/pop_heap) with lazy cancel,
//     written here as the textbook alternative;
//   - ZmqTimers:    libzmq's zmq_timers_* API (a std::multimap keyed by
//     deadline; cancel scans for the id and leaves the entry in place).
//
// Every benchmark keeps N live timers (N = 10, 1k, 10k, 100k) and measures
// one operation (ns/op = ns per iteration):
//   AddFireSoonest   add a timer that is due before all others, fire it
//                    (the post()/after(0) pattern);
//   AddFireRandom    "hold model": add a timer at a random point of the live
//                    range, advance the (virtual) clock to the earliest
//                    deadline and fire it.  Not for zmq_timers, which reads
//                    its own millisecond clock and cannot be driven;
//   AddCancelRandom  add a timer at a random point of the live range, cancel
//                    it;
//   AddCancelLatest  add a timer due after all others and cancel it (the
//                    request-timeout pattern: arm, reply arrives, disarm).
//
// zmq_timers keeps a cancelled timer in its map until the timer's deadline
// passes, so a loop of add+cancel grows it without bound.  The zmq
// add+cancel benchmarks therefore rebuild the set outside the timed region
// after every max(N, 1000) cancels: it holds at most that many dead entries
// (a real program holds cancel-rate x timeout of them).  The heap purges its
// dead entries itself once they outnumber the live ones (amortised O(1)),
// inside the timed region.

#include <benchmark/benchmark.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "zbrokers/reactor/timer_queue.h"

namespace zb {
namespace {

using Clock = TimerQueue::Clock;
using Callback = absl::AnyInvocable<void()>;

// Live timers are spread over this range (ns) after their base time.
constexpr std::int64_t kRangeNs = 1'000'000'000'000;  // 1000 s

// Precomputed random offsets in [0, kRangeNs), so that the RNG is not timed
// and every structure sees the same sequence.
const std::vector<std::int64_t>& Offsets() {
  static const std::vector<std::int64_t> offsets = [] {
    std::mt19937_64 rng(2026);
    std::uniform_int_distribution<std::int64_t> d(0, kRangeNs - 1);
    std::vector<std::int64_t> v(1 << 16);
    for (auto& x : v) x = d(rng);
    return v;
  }();
  return offsets;
}

// --- The binary heap
// -----------------------------------------------------------

// A min-heap on (deadline, seq) with the same slot/generation ids as
// zb::TimerQueue.  Cancel() only marks the slot; the stale entry is skipped
// when it reaches the top, and all stale entries are purged at once when
// they outnumber the live ones.
class HeapTimers {
 public:
  TimerId Add(std::int64_t deadline_ns, Callback cb) {
    std::uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& s = slots_[slot];
    s.cb = std::move(cb);
    s.live = true;
    heap_.push_back(Entry{deadline_ns, next_seq_++, slot, s.generation});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    ++live_;
    return (static_cast<std::uint64_t>(s.generation) << 32) | slot;
  }

  bool Cancel(TimerId id) {
    const auto slot = static_cast<std::uint32_t>(id & 0xffffffffu);
    const auto generation = static_cast<std::uint32_t>(id >> 32);
    if (slot >= slots_.size()) return false;
    Slot& s = slots_[slot];
    if (!s.live || s.generation != generation) return false;
    Release(slot);
    --live_;
    if (++dead_ > live_ && dead_ > 16) purge();
    return true;
  }

  int FireDue(std::int64_t now_ns) {
    int fired = 0;
    while (!heap_.empty() && heap_.front().deadline_ns <= now_ns) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      const Entry e = heap_.back();
      heap_.pop_back();
      Slot& s = slots_[e.slot];
      if (s.generation != e.generation) {  // cancelled
        --dead_;
        continue;
      }
      Callback cb = std::move(s.cb);
      Release(e.slot);
      --live_;
      cb();
      ++fired;
    }
    return fired;
  }

  std::int64_t next_deadline_ns() {
    while (!heap_.empty() &&
           slots_[heap_.front().slot].generation != heap_.front().generation) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      heap_.pop_back();
      --dead_;
    }
    return heap_.empty() ? INT64_MAX : heap_.front().deadline_ns;
  }

  std::size_t size() const { return live_; }

 private:
  struct Entry {
    std::int64_t deadline_ns;
    std::uint64_t seq;
    std::uint32_t slot;
    std::uint32_t generation;
  };
  struct Slot {
    Callback cb;
    std::uint32_t generation = 1;
    bool live = false;
  };
  // std::*_heap build a max-heap; "later" as "less" puts the earliest on top.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.deadline_ns != b.deadline_ns) return a.deadline_ns > b.deadline_ns;
      return a.seq > b.seq;
    }
  };

  void Release(std::uint32_t slot) {
    Slot& s = slots_[slot];
    s.live = false;
    s.cb = nullptr;
    if (++s.generation == 0) s.generation = 1;
    free_slots_.push_back(slot);
  }

  void purge() {
    std::erase_if(heap_, [this](const Entry& e) {
      return slots_[e.slot].generation != e.generation;
    });
    std::make_heap(heap_.begin(), heap_.end(), Later{});
    dead_ = 0;
  }

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
  std::size_t dead_ = 0;
};

// --- Adapters: the same calls for TimerQueue and the heap
// -------------------------

struct SortedVector {
  TimerQueue q;
  TimerId Add(std::int64_t deadline_ns, Callback cb) {
    return q.Add(Clock::time_point(std::chrono::nanoseconds(deadline_ns)),
                 Clock::duration::zero(), std::move(cb));
  }
  bool Cancel(TimerId id) { return q.Cancel(id); }
  int FireDue(std::int64_t now_ns) {
    return q.FireDue(Clock::time_point(std::chrono::nanoseconds(now_ns)),
                     [](std::exception_ptr) {});
  }
  std::int64_t next_deadline_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               q.next_deadline().time_since_epoch())
        .count();
  }
  std::size_t size() const { return q.size(); }
};

struct BinaryHeap {
  HeapTimers q;
  TimerId Add(std::int64_t deadline_ns, Callback cb) {
    return q.Add(deadline_ns, std::move(cb));
  }
  bool Cancel(TimerId id) { return q.Cancel(id); }
  int FireDue(std::int64_t now_ns) { return q.FireDue(now_ns); }
  std::int64_t next_deadline_ns() { return q.next_deadline_ns(); }
  std::size_t size() const { return q.size(); }
};

// The virtual "now" of the workloads; live timers lie after it.
constexpr std::int64_t kNow = 1'000'000'000'000'000;  // ~11.6 days of uptime

template <typename Impl>
void Fill(Impl& impl, int n, std::int64_t base, std::int64_t* counter) {
  const auto& off = Offsets();
  for (int i = 0; i < n; ++i) {
    impl.Add(base + off[i % off.size()] + i, [counter] { ++*counter; });
  }
}

template <typename Impl>
void CheckLive(benchmark::State& state, const Impl& impl, std::size_t n) {
  if (impl.size() != n) state.SkipWithError("live timer count drifted");
}

template <typename Impl>
void BM_AddFireSoonest(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Impl impl;
  std::int64_t live_fired = 0, fired = 0;
  Fill(impl, n, kNow + kRangeNs, &live_fired);
  std::int64_t* counter = &fired;
  for (auto _ : state) {
    impl.Add(kNow, [counter] { ++*counter; });
    benchmark::DoNotOptimize(impl.FireDue(kNow));
  }
  if (fired != static_cast<std::int64_t>(state.iterations()) || live_fired) {
    state.SkipWithError("wrong timers fired");
  }
  CheckLive(state, impl, static_cast<std::size_t>(n));
}

template <typename Impl>
void BM_AddFireRandom(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto& off = Offsets();
  Impl impl;
  std::int64_t fired = 0;
  std::int64_t now = kNow;
  Fill(impl, n, now, &fired);
  std::size_t i = 0;
  for (auto _ : state) {
    impl.Add(now + off[i++ & (off.size() - 1)], [&fired] { ++fired; });
    now = impl.next_deadline_ns();
    benchmark::DoNotOptimize(impl.FireDue(now));
  }
  if (fired < static_cast<std::int64_t>(state.iterations())) {
    state.SkipWithError("timers did not fire");
  }
  // Equal random deadlines may fire together, so allow a little drift.
  if (impl.size() + 16 < static_cast<std::size_t>(n)) {
    state.SkipWithError("live timer count drifted");
  }
}

template <typename Impl>
void BM_AddCancelRandom(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto& off = Offsets();
  Impl impl;
  std::int64_t fired = 0;
  Fill(impl, n, kNow, &fired);
  std::size_t i = 0;
  bool all_cancelled = true;
  for (auto _ : state) {
    const TimerId id =
        impl.Add(kNow + off[i++ & (off.size() - 1)], [&fired] { ++fired; });
    all_cancelled &= impl.Cancel(id);
  }
  if (!all_cancelled) state.SkipWithError("cancel failed");
  CheckLive(state, impl, static_cast<std::size_t>(n));
}

template <typename Impl>
void BM_AddCancelLatest(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Impl impl;
  std::int64_t fired = 0;
  Fill(impl, n, kNow, &fired);
  std::int64_t deadline = kNow + 2 * kRangeNs;
  bool all_cancelled = true;
  for (auto _ : state) {
    const TimerId id = impl.Add(++deadline, [&fired] { ++fired; });
    all_cancelled &= impl.Cancel(id);
  }
  if (!all_cancelled) state.SkipWithError("cancel failed");
  CheckLive(state, impl, static_cast<std::size_t>(n));
}

// --- zmq_timers
// ------------------------------------------------------------------

// Owns one zmq_timers set.
class ZmqTimers {
 public:
  ZmqTimers() : timers_(zmq_timers_new()) {}
  ~ZmqTimers() { zmq_timers_destroy(&timers_); }
  ZmqTimers(const ZmqTimers&) = delete;
  ZmqTimers& operator=(const ZmqTimers&) = delete;

  int Add(std::size_t interval_ms, zmq_timer_fn* fn, void* arg) {
    return zmq_timers_add(timers_, interval_ms, fn, arg);
  }
  bool Cancel(int id) { return zmq_timers_cancel(timers_, id) == 0; }
  int execute() { return zmq_timers_execute(timers_); }

  // N live timers due in one hour and more (they never fire here).
  void Fill(int n) {
    const auto& off = Offsets();
    for (int i = 0; i < n; ++i) {
      Add(kHourMs + static_cast<std::size_t>(off[i % off.size()] / 1'000'000),
          &Never, nullptr);
    }
  }

  static constexpr std::size_t kHourMs = 3'600'000;
  static void Never(int, void*) {}

 private:
  void* timers_;
};

// The fired timer cancels itself: zmq timers are periodic, and this is how a
// one-shot timer is written with them.
struct SoonestState {
  ZmqTimers* timers;
  std::int64_t fired = 0;
};
void FireOnceAndCancel(int id, void* arg) {
  auto* s = static_cast<SoonestState*>(arg);
  ++s->fired;
  s->timers->Cancel(id);
}

void BM_AddFireSoonest_ZmqTimers(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  ZmqTimers timers;
  timers.Fill(n);
  SoonestState s{&timers};
  for (auto _ : state) {
    timers.Add(0, &FireOnceAndCancel, &s);
    benchmark::DoNotOptimize(timers.execute());
  }
  if (s.fired != static_cast<std::int64_t>(state.iterations())) {
    state.SkipWithError("wrong timers fired");
  }
}

// Add+cancel with a rebuild (untimed) after every max(N, 1000) cancels; see
// the file comment.
template <typename IntervalFn>
void ZmqAddCancel(benchmark::State& state, IntervalFn interval_ms) {
  const int n = static_cast<int>(state.range(0));
  const std::int64_t rebuild_every = std::max(n, 1000);
  auto timers = std::make_unique<ZmqTimers>();
  timers->Fill(n);
  std::int64_t dead = 0;
  std::size_t i = 0;
  bool all_cancelled = true;
  for (auto _ : state) {
    const int id = timers->Add(interval_ms(i++), &ZmqTimers::Never, nullptr);
    all_cancelled &= timers->Cancel(id);
    if (++dead == rebuild_every) {
      state.PauseTiming();
      timers = std::make_unique<ZmqTimers>();
      timers->Fill(n);
      dead = 0;
      state.ResumeTiming();
    }
  }
  if (!all_cancelled) state.SkipWithError("cancel failed");
}

void BM_AddCancelRandom_ZmqTimers(benchmark::State& state) {
  const auto& off = Offsets();
  ZmqAddCancel(state, [&off](std::size_t i) {
    return ZmqTimers::kHourMs +
           static_cast<std::size_t>(off[i & (off.size() - 1)] / 1'000'000);
  });
}

void BM_AddCancelLatest_ZmqTimers(benchmark::State& state) {
  ZmqAddCancel(state, [](std::size_t) {
    return 2 * ZmqTimers::kHourMs;  // after every live timer
  });
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(10)->Arg(1'000)->Arg(10'000)->Arg(100'000);
}

BENCHMARK_TEMPLATE(BM_AddFireSoonest, SortedVector)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddFireSoonest, BinaryHeap)->Apply(Sizes);
BENCHMARK(BM_AddFireSoonest_ZmqTimers)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddFireRandom, SortedVector)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddFireRandom, BinaryHeap)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddCancelRandom, SortedVector)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddCancelRandom, BinaryHeap)->Apply(Sizes);
BENCHMARK(BM_AddCancelRandom_ZmqTimers)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddCancelLatest, SortedVector)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_AddCancelLatest, BinaryHeap)->Apply(Sizes);
BENCHMARK(BM_AddCancelLatest_ZmqTimers)->Apply(Sizes);

}  // namespace
}  // namespace zb

BENCHMARK_MAIN();
