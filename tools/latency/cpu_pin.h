// Copyright 2026 The zbrokers Authors.
//
// Pinning the threads of one role of the latency test (broker, workers,
// clients) to one CPU, for --pin-roles.
//
// Linux gives a new thread the CPU affinity of the thread that creates it.
// So a role's threads are pinned by creating them inside RunOnCpu(): the
// calling thread is pinned to the role's CPU while `fn` runs (and starts
// the role's threads), then gets its own mask back.
//
//   absl::Status st = RunOnCpu(1, [&] { return StartWorkerThread(); });
//
// Thread-safety: affects only the calling thread (and the threads it starts
// meanwhile); any thread may call it.

#ifndef TOOLS_LATENCY_CPU_PIN_H_
#define TOOLS_LATENCY_CPU_PIN_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace zb::latency {

// Runs `fn` with the calling thread pinned to `cpu`, then restores the
// calling thread's previous affinity, and returns what `fn` returned.
// `cpu` < 0: runs `fn` as is.  Fails without running `fn` when the thread
// cannot be pinned there (e.g. the CPU is not in its allowed set); fails
// after running it when the old mask cannot be restored.
absl::Status RunOnCpu(int cpu, absl::FunctionRef<absl::Status()> fn);

// Pins the calling thread, and the threads and processes it starts later,
// to `cpu` for good.  A --placement processes role calls it first thing.
absl::Status PinCallingThread(int cpu);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_CPU_PIN_H_
