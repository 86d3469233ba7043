// Copyright 2026 The zbrokers Authors.

#include "tools/latency/chunk_plan.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb::latency {
namespace {

using ::testing::ElementsAre;

TEST(ChunkPlanTest, OneSystemMeasuresTheWholeStepAtOnceWithoutSettling) {
  ChunkPlan plan(0, 1, 5000);
  EXPECT_FALSE(plan.settles());
  EXPECT_EQ(plan.measured_chunks(), 1);
  EXPECT_EQ(plan.MeasuredRoundTrips(0), 5000);
  EXPECT_THAT(plan.MeasuredOrder(0), ElementsAre(0));
}

TEST(ChunkPlanTest, ChunksAddUpToTheStep) {
  for (std::int64_t rounds : {1, 999, 1000, 1001, 4000, 5000, 12345}) {
    ChunkPlan plan(0, 2, rounds);
    EXPECT_TRUE(plan.settles());
    EXPECT_EQ(plan.measured_chunks(), (rounds + ChunkPlan::kBaselineChunk - 1) /
                                          ChunkPlan::kBaselineChunk);
    std::int64_t sum = 0;
    for (std::int64_t c = 0; c < plan.measured_chunks(); ++c) {
      EXPECT_LE(plan.MeasuredRoundTrips(c), ChunkPlan::kBaselineChunk);
      EXPECT_LE(std::llabs(plan.MeasuredRoundTrips(c) - plan.ChunkSize()), 1);
      sum += plan.MeasuredRoundTrips(c);
    }
    EXPECT_EQ(sum, rounds) << rounds;
    EXPECT_GE(plan.ChunkSize(), 1);
  }
}

TEST(ChunkPlanTest, SystemsTakeTurnsInAbbaOrderAndOddStepsStartWithB) {
  ChunkPlan even(0, 2, 4000), odd(1, 2, 4000);
  EXPECT_THAT(even.MeasuredOrder(0), ElementsAre(0, 1));
  EXPECT_THAT(even.MeasuredOrder(1), ElementsAre(1, 0));
  EXPECT_THAT(even.MeasuredOrder(2), ElementsAre(0, 1));
  EXPECT_THAT(odd.MeasuredOrder(0), ElementsAre(1, 0));
  EXPECT_THAT(odd.MeasuredOrder(1), ElementsAre(0, 1));
}

TEST(ChunkPlanTest, SettlingEndsWithTheFirstChunksOrderReversed) {
  for (std::size_t step : {0, 1}) {
    ChunkPlan plan(step, 2, 4000);
    std::vector<std::size_t> first = plan.MeasuredOrder(0);
    std::vector<std::size_t> reversed(first.rbegin(), first.rend());
    EXPECT_EQ(plan.SettleOrder(1), reversed);
    EXPECT_EQ(plan.SettleOrder(2), first);
    EXPECT_EQ(plan.SettleOrder(3), reversed);
  }
}

TEST(ChunkPlanTest, SettlingLastsAtLeastTheSettleTimeAndAnOddNumberOfPairs) {
  using std::chrono::milliseconds;
  ChunkPlan plan(0, 2, 4000);
  EXPECT_FALSE(plan.SettleDone(1, milliseconds(499)));
  EXPECT_TRUE(plan.SettleDone(1, milliseconds(500)));
  EXPECT_FALSE(plan.SettleDone(2, milliseconds(5000)));
  EXPECT_TRUE(plan.SettleDone(3, milliseconds(5000)));
}

// What settling is for: no system's measured chunk is the first thing run
// after the step's set-up, and (with an even number of measured chunks)
// each system's measured chunks follow its own chunk and the other's
// equally often.  Without settling, system 0's first chunk followed the
// set-up in every even step, and an A/A run of the raw program measured
// the first system 1.14x slower than the second (chunk_plan.h).
TEST(ChunkPlanTest, EachSystemsMeasuredChunksFollowTheSameMix) {
  for (std::size_t step : {0, 1, 2}) {
    ChunkPlan plan(step, 2, 4000);
    struct Turn {
      std::size_t system;
      bool measured;
    };
    std::vector<Turn> run;
    for (std::int64_t pair = 1;; ++pair) {
      for (std::size_t k : plan.SettleOrder(pair)) run.push_back({k, false});
      if (plan.SettleDone(pair, pair * std::chrono::milliseconds(200))) break;
    }
    ASSERT_EQ(run.size(), 6u);  // 3 pairs: 600 ms, the first odd count
    for (std::int64_t c = 0; c < plan.measured_chunks(); ++c) {
      for (std::size_t k : plan.MeasuredOrder(c)) run.push_back({k, true});
    }
    int after_itself[2] = {0, 0}, after_other[2] = {0, 0};
    ASSERT_FALSE(run.front().measured);
    for (std::size_t t = 1; t < run.size(); ++t) {
      if (!run[t].measured) continue;
      (run[t - 1].system == run[t].system ? after_itself
                                          : after_other)[run[t].system]++;
    }
    EXPECT_EQ(after_itself[0], after_itself[1]) << "step " << step;
    EXPECT_EQ(after_other[0], after_other[1]) << "step " << step;
    EXPECT_EQ(after_itself[0] + after_other[0], 4);
  }
}

}  // namespace
}  // namespace zb::latency
