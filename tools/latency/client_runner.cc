// Copyright 2026 The zbrokers Authors.

#include "tools/latency/client_runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "tools/latency/cache_evictor.h"

// Under valgrind --tool=callgrind, the measured part of every step is dumped
// on its own (instructions of every thread, zeroed when the measurement
// starts), so that instructions per round trip can be read without start-up,
// registration probes and warm-up (tools/latency/callgrind_per_rt.py).
// Outside valgrind the client requests are a few no-op instructions.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define ZB_LATENCY_CALLGRIND 1
#endif

namespace zb::latency {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t ProcessCpuNs() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) {
    return std::int64_t{t.tv_sec} * 1'000'000'000 +
           std::int64_t{t.tv_usec} * 1'000;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// A one-shot gate that many threads wait on and one opens.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Counts threads arriving; the caller waits for all of them.
class Counter {
 public:
  void Arrive() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  // True when `n` arrived within `timeout`.
  bool WaitFor(int n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// One client thread's state.  Aligned so that the progress counters of
// different threads do not share a cache line.
struct alignas(64) Lane {
  std::int64_t quota = 0;
  std::vector<std::int64_t> latencies;  // sized to quota before the step
  std::int64_t failures = 0;
  Clock::time_point finished;
  absl::Status status;
  std::atomic<std::int64_t> done{0};
};

}  // namespace

absl::StatusOr<StepSamples> RunClients(const ClientFactory& factory,
                                       const StepPlan& plan,
                                       const ProgressFn& progress) {
  const int c = std::max(1, plan.clients);
  std::vector<Lane> lanes(static_cast<std::size_t>(c));
  for (int i = 0; i < c; ++i) {
    Lane& l = lanes[static_cast<std::size_t>(i)];
    l.quota = plan.round_trips / c + (i < plan.round_trips % c ? 1 : 0);
    // Sized (and so touched) before the step, not during it.
    l.latencies.resize(static_cast<std::size_t>(l.quota));
  }

  Counter ready, measured;
  Gate go, release;
  std::atomic<bool> abort{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < c; ++i) {
    threads.emplace_back([&, &lane = lanes[static_cast<std::size_t>(i)]] {
      absl::StatusOr<std::unique_ptr<ClientEndpoint>> made = factory();
      if (!made.ok()) {
        lane.status = made.status();
      } else {
        // Wait until the broker has registered every expected worker.  The
        // bound is on progress, not on the whole wait: hundreds of workers
        // joining at once on a loaded machine (or under valgrind) may take
        // longer than register_timeout in all, but never that long without
        // one more of them answering.
        ClientEndpoint& client = **made;
        auto deadline = Clock::now() + plan.register_timeout;
        int seen = -1, most = -1;
        while ((seen = client.Probe()) != plan.expected_workers &&
               Clock::now() < deadline) {
          if (seen > most) {
            most = seen;
            deadline = Clock::now() + plan.register_timeout;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (seen != plan.expected_workers) {
          lane.status = absl::DeadlineExceededError(absl::StrFormat(
              "the broker did not answer with %d worker(s): no more of them "
              "answered for %d ms (last answer: %s)",
              plan.expected_workers, plan.register_timeout.count(),
              seen < 0 ? std::string("failure or timeout")
                       : absl::StrFormat("%d worker(s)", seen)));
        } else {
          for (std::int64_t k = 0; k < plan.warmup; ++k) {
            client.RoundTrip(plan.expected_workers);
          }
        }
      }
      ready.Arrive();
      go.Wait();
      if (lane.status.ok() && !abort.load()) {
        ClientEndpoint& client = **made;
        std::int64_t* out = lane.latencies.data();
        std::int64_t n = 0;
        CacheEvictor evictor(static_cast<std::size_t>(plan.evict_cache_bytes));
        for (std::int64_t k = 0; k < lane.quota; ++k) {
          evictor.Evict();  // not timed; nothing without --evict-cache
          const Clock::time_point t0 = Clock::now();
          const bool ok = client.RoundTrip(plan.expected_workers);
          const Clock::time_point t1 = Clock::now();
          if (ok) {
            out[n++] = (t1 - t0).count();
          } else {
            ++lane.failures;
          }
          lane.done.store(k + 1, std::memory_order_relaxed);
        }
        lane.latencies.resize(static_cast<std::size_t>(n));
        lane.finished = Clock::now();
      }
      measured.Arrive();
      // The client is destroyed only after the CPU time was read.
      release.Wait();
    });
  }

  // Every client ready (or failed) -> start; generous bound for the probes
  // and warm-up.
  ready.WaitFor(c, std::chrono::hours(24));
  absl::Status failed;
  for (const Lane& l : lanes) {
    if (!l.status.ok()) failed = l.status;
  }
  if (!failed.ok()) abort.store(true);
  const std::int64_t cpu0 = ProcessCpuNs();
#ifdef ZB_LATENCY_CALLGRIND
  CALLGRIND_ZERO_STATS;
#endif
  const Clock::time_point start = Clock::now();
  go.Open();
  if (progress && failed.ok()) {
    while (!measured.WaitFor(c, std::chrono::milliseconds(100))) {
      std::int64_t done = 0;
      for (const Lane& l : lanes)
        done += l.done.load(std::memory_order_relaxed);
      progress(done, plan.round_trips);
    }
  } else {
    measured.WaitFor(c, std::chrono::hours(24));
  }
  const std::int64_t cpu1 = ProcessCpuNs();
#ifdef ZB_LATENCY_CALLGRIND
  if (RUNNING_ON_VALGRIND) {
    const std::string desc =
        absl::StrFormat("zb-latency step: workers %d clients %d round_trips %d",
                        plan.expected_workers, c, plan.round_trips);
    CALLGRIND_DUMP_STATS_AT(desc.c_str());
  }
#endif
  release.Open();
  for (std::thread& t : threads) t.join();
  if (!failed.ok()) return failed;

  StepSamples s;
  s.cpu_ns = cpu1 - cpu0;
  Clock::time_point end = start;
  std::size_t total = 0;
  for (const Lane& l : lanes) total += l.latencies.size();
  s.latencies_ns.reserve(total);
  for (Lane& l : lanes) {
    s.latencies_ns.insert(s.latencies_ns.end(), l.latencies.begin(),
                          l.latencies.end());
    s.failures += l.failures;
    s.round_trips += l.quota;
    end = std::max(end, l.finished);
  }
  s.elapsed_ns = (end - start).count();
  return s;
}

}  // namespace zb::latency
