// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/idle_yield.h"

#include <gtest/gtest.h>

#include <chrono>

namespace zb {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(IdleYieldTest, DisabledNeverYields) {
  IdleYield y(false);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(y.BeforeSleep(true));
  EXPECT_EQ(y.stats().yields, 0u);
}

TEST(IdleYieldTest, OnlyASleepAfterWorkYields) {
  IdleYield y(true);
  EXPECT_FALSE(y.BeforeSleep(false));  // woke for nothing: sleep at once
  EXPECT_TRUE(y.BeforeSleep(true));
  EXPECT_EQ(y.stats().yields, 1u);
}

TEST(IdleYieldTest, AProducerOnTheSameCoreKeepsItYielding) {
  IdleYield y(true);
  // 128 replies found after a 1.5 ms yield: a fan-in on one core.
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(y.BeforeSleep(true)) << i;
    y.AfterYield(microseconds(1500), 128);
  }
  EXPECT_EQ(y.stats().yields, 100u);
  EXPECT_EQ(y.stats().productive, 100u);
}

TEST(IdleYieldTest, ABatchMustBeBigEnoughAndQuickEnough) {
  {
    IdleYield y(true);
    ASSERT_TRUE(y.BeforeSleep(true));
    y.AfterYield(microseconds(5), 1);  // one message: not worth it
    EXPECT_EQ(y.stats().productive, 0u);
    EXPECT_EQ(y.sleeps_to_skip(), 1);
  }
  {
    IdleYield y(true);
    ASSERT_TRUE(y.BeforeSleep(true));
    // An unrelated CPU-bound thread took a 3 ms slice; three messages
    // piled up meanwhile, 1 ms each: the yield delayed them.
    y.AfterYield(milliseconds(3), 3);
    EXPECT_EQ(y.stats().productive, 0u);
    EXPECT_EQ(y.sleeps_to_skip(), 1);
  }
  {
    IdleYield y(true);
    ASSERT_TRUE(y.BeforeSleep(true));
    y.AfterYield(IdleYield::kMaxYieldPerCallback * 2, 2);  // just enough
    EXPECT_EQ(y.stats().productive, 1u);
    EXPECT_EQ(y.sleeps_to_skip(), 0);
  }
}

// Counts the sleeps (after work) that yielded, out of `sleeps`, when every
// yield is unproductive.
int YieldsWhenNothingComes(IdleYield& y, int sleeps) {
  int yields = 0;
  for (int i = 0; i < sleeps; ++i) {
    if (y.BeforeSleep(true)) {
      ++yields;
      y.AfterYield(microseconds(1), 0);
    }
  }
  return yields;
}

TEST(IdleYieldTest, UnproductiveYieldsBackOffExponentiallyToABound) {
  IdleYield y(true);
  // Yields at sleeps 0, 2, 6, 14, ...: the gaps double (1, 3, 7, ... skipped).
  EXPECT_EQ(YieldsWhenNothingComes(y, 1), 1);
  EXPECT_EQ(y.sleeps_to_skip(), 1);
  EXPECT_EQ(YieldsWhenNothingComes(y, 2), 1);
  EXPECT_EQ(y.sleeps_to_skip(), 3);
  EXPECT_EQ(YieldsWhenNothingComes(y, 4), 1);
  EXPECT_EQ(y.sleeps_to_skip(), 7);
  // Once at the bound, one yield per 2^kMaxBackoffShift sleeps.
  YieldsWhenNothingComes(y, 100'000);
  const int period = 1 << IdleYield::kMaxBackoffShift;
  EXPECT_EQ(YieldsWhenNothingComes(y, 10 * period), 10);
}

TEST(IdleYieldTest, OneProductiveYieldEndsTheBackoff) {
  IdleYield y(true);
  YieldsWhenNothingComes(y, 10'000);
  ASSERT_GT(y.sleeps_to_skip(), 0);
  // Sleeps that follow no work neither yield nor use up the backoff.
  const int skip = y.sleeps_to_skip();
  EXPECT_FALSE(y.BeforeSleep(false));
  EXPECT_EQ(y.sleeps_to_skip(), skip);
  while (!y.BeforeSleep(true)) {
  }
  y.AfterYield(microseconds(100), 20);
  EXPECT_EQ(y.sleeps_to_skip(), 0);
  EXPECT_TRUE(y.BeforeSleep(true));
}

}  // namespace
}  // namespace zb
