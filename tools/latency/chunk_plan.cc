// Copyright 2026 The zbrokers Authors.

#include "tools/latency/chunk_plan.h"

#include <algorithm>
#include <cstdlib>

namespace zb::latency {

ChunkPlan::ChunkPlan(std::size_t step, std::size_t systems,
                     std::int64_t rounds_per_step)
    : step_(step),
      systems_(std::max<std::size_t>(1, systems)),
      rounds_per_step_(std::max<std::int64_t>(1, rounds_per_step)),
      chunks_(systems_ > 1
                  ? (rounds_per_step_ + kBaselineChunk - 1) / kBaselineChunk
                  : 1) {}

std::int64_t ChunkPlan::ChunkSize() const { return rounds_per_step_ / chunks_; }

std::int64_t ChunkPlan::MeasuredRoundTrips(std::int64_t chunk) const {
  return rounds_per_step_ / chunks_ + (chunk < rounds_per_step_ % chunks_);
}

std::vector<std::size_t> ChunkPlan::MeasuredOrder(std::int64_t chunk) const {
  return Order(chunk);
}

std::vector<std::size_t> ChunkPlan::SettleOrder(std::int64_t pair) const {
  return Order(-pair);
}

bool ChunkPlan::SettleDone(std::int64_t pair,
                           std::chrono::steady_clock::duration elapsed) const {
  return pair % 2 == 1 && elapsed >= kSettleTime;
}

std::vector<std::size_t> ChunkPlan::Order(std::int64_t turn) const {
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < systems_; ++k) order.push_back(k);
  if ((step_ + static_cast<std::size_t>(std::llabs(turn))) % 2 == 1) {
    std::reverse(order.begin(), order.end());
  }
  return order;
}

}  // namespace zb::latency
