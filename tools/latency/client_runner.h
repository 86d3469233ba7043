// Copyright 2026 The zbrokers Authors.
//
// Runs one measured step: C clients, each on its own thread (the measuring
// thread, which also runs the zbrokers client's reactor), send requests one
// after another and time every round trip with std::chrono::steady_clock
// into a vector allocated before the step starts.
//
// Per client: make the client; probe until every expected worker answers
// (the broker registers new workers asynchronously); run the warm-up round
// trips (not counted); then, when all clients are ready, measure together.
// The step's round trips are split evenly between the clients.
//
//   StepPlan plan{.clients = 1, .round_trips = 10000, .warmup = 500,
//                 .expected_workers = 3};
//   absl::StatusOr<StepSamples> s = RunClients(factory, plan, nullptr);
//
// Thread-safety: RunClients may be called from any thread; `progress` is
// called on the calling thread.

#ifndef TOOLS_LATENCY_CLIENT_RUNNER_H_
#define TOOLS_LATENCY_CLIENT_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/latency/fanout.h"

namespace zb::latency {

struct StepPlan {
  int clients = 1;
  std::int64_t round_trips = 0;  // all clients together
  std::int64_t warmup = 0;       // per client
  int expected_workers = 1;
  // How long a client may probe without one more of the expected workers
  // answering (the broker registers them asynchronously).
  std::chrono::milliseconds register_timeout{10000};
  // --evict-cache: each client writes a buffer of this many bytes before
  // each measured round trip, outside the timed part (cache_evictor.h);
  // 0: not.
  std::int64_t evict_cache_bytes = 0;
};

struct StepSamples {
  // Latencies of the successful measured round trips, in nanoseconds.
  std::vector<std::int64_t> latencies_ns;
  std::int64_t round_trips = 0;
  std::int64_t failures = 0;
  // From the moment all clients start measuring to the moment the last one
  // finishes.
  std::int64_t elapsed_ns = 0;
  // CPU time of this whole process (every thread) during the measurement;
  // meaningful when broker and workers are threads of this process.
  std::int64_t cpu_ns = 0;
};

// Makes a client; called on the thread that will use it.
using ClientFactory =
    std::function<absl::StatusOr<std::unique_ptr<ClientEndpoint>>()>;
// Told how many measured round trips are done, every ~100 ms.
using ProgressFn = std::function<void(std::int64_t done, std::int64_t total)>;

absl::StatusOr<StepSamples> RunClients(const ClientFactory& factory,
                                       const StepPlan& plan,
                                       const ProgressFn& progress);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_CLIENT_RUNNER_H_
