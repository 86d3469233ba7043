// Copyright 2026 The zbrokers Authors.
//
// zb::latency::ChunkPlan says in which order zb-latency --baseline runs its
// systems (zbrokers and the raw program, or two copies of the raw program
// in the control run) through one step, so that neither is favoured by its
// place in the run.
//
// A step is measured in chunks of about kBaselineChunk round trips, the
// systems taking turns in ABBA order (A B, B A, A B, ...; odd steps start
// with B), so that both see the same machine conditions: on a shared VM
// they change from second to second.
//
// Before the first measured chunk the systems *settle*: they run
// unmeasured chunks of the same size, in the same alternating order, for
// at least kSettleTime.  Without it the system measured first after the
// step's set-up (its deployment, its new workers) came out slower than the
// other: in the control run (the raw program against itself, 1 worker,
// inproc, two cores) raw-a/raw-b was 1.14 in the median of 40 runs, and
// deploying raw-b first moved it the other way; settling brought it to
// 1.03 whichever system was deployed first (docs/latency.md, "Settling").
// Settling runs an odd number of pairs, the last one in the first measured
// chunk's order reversed, so that a system's first measured chunk follows
// a chunk just as its later ones do.
//
//   ChunkPlan plan(step, systems.size(), rounds_per_step);
//   for (std::int64_t pair = 1;; ++pair) {
//     for (std::size_t k : plan.SettleOrder(pair)) Run(k, plan.ChunkSize());
//     if (plan.SettleDone(pair, elapsed)) break;
//   }
//   for (std::int64_t c = 0; c < plan.measured_chunks(); ++c)
//     for (std::size_t k : plan.MeasuredOrder(c))
//       Measure(k, plan.MeasuredRoundTrips(c));
//
// With one system there is nothing to alternate: one measured chunk of
// the whole step, and no settling.
//
// Immutable after construction; thread-compatible.

#ifndef TOOLS_LATENCY_CHUNK_PLAN_H_
#define TOOLS_LATENCY_CHUNK_PLAN_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace zb::latency {

class ChunkPlan {
 public:
  // Round trips per chunk, when a step has more systems than one.
  static constexpr std::int64_t kBaselineChunk = 1000;
  // How long the systems settle, at least, before a step's measurement.
  static constexpr std::chrono::milliseconds kSettleTime{500};

  // `step`: the step's index in the run (0 for the first); `systems`: how
  // many systems take turns (1 or more); `rounds_per_step`: measured round
  // trips per system in the step (1 or more).
  ChunkPlan(std::size_t step, std::size_t systems,
            std::int64_t rounds_per_step);

  bool settles() const { return systems_ > 1; }
  std::int64_t measured_chunks() const { return chunks_; }
  // Round trips of a settling chunk.
  std::int64_t ChunkSize() const;
  // Measured round trips of chunk `chunk` (0 <= chunk < measured_chunks());
  // they add up to rounds_per_step.
  std::int64_t MeasuredRoundTrips(std::int64_t chunk) const;

  // The systems' order (indexes 0..systems-1) in measured chunk `chunk`
  // (>= 0) and in settling pair `pair` (>= 1).
  std::vector<std::size_t> MeasuredOrder(std::int64_t chunk) const;
  std::vector<std::size_t> SettleOrder(std::int64_t pair) const;
  // True when settling is over after pair `pair`, `elapsed` after it began:
  // at least kSettleTime, and an odd number of pairs.
  bool SettleDone(std::int64_t pair,
                  std::chrono::steady_clock::duration elapsed) const;

 private:
  // The order at position `turn` of the alternation (settling pair p is
  // turn -p, measured chunk c is turn c).
  std::vector<std::size_t> Order(std::int64_t turn) const;

  std::size_t step_;
  std::size_t systems_;
  std::int64_t rounds_per_step_;
  std::int64_t chunks_;
};

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_CHUNK_PLAN_H_
