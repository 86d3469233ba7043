// Copyright 2026 The zbrokers Authors.

#include "tools/latency/stats.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace zb::latency {
namespace {

TEST(SummarizeTest, EmptyIsAllZero) {
  std::vector<std::int64_t> none;
  LatencySummary s = Summarize(none);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.avg_us, 0);
  EXPECT_EQ(s.max_us, 0);
}

TEST(SummarizeTest, OneToHundredMicroseconds) {
  // 100 samples, 1..100 us, shuffled: avg 50.5, p50 50, p99 99, max 100.
  std::vector<std::int64_t> ns;
  for (int i = 100; i >= 1; --i) ns.push_back((i * 37 % 100 + 1) * 1000);
  LatencySummary s = Summarize(ns);
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.avg_us, 50.5);
  EXPECT_DOUBLE_EQ(s.p50_us, 50);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.max_us, 100);
  EXPECT_TRUE(std::is_sorted(ns.begin(), ns.end()));
}

TEST(SummarizeTest, SingleSample) {
  std::vector<std::int64_t> ns = {1500};
  LatencySummary s = Summarize(ns);
  EXPECT_DOUBLE_EQ(s.avg_us, 1.5);
  EXPECT_DOUBLE_EQ(s.p50_us, 1.5);
  EXPECT_DOUBLE_EQ(s.p99_us, 1.5);
  EXPECT_DOUBLE_EQ(s.max_us, 1.5);
}

TEST(NearestRankTest, Definition) {
  std::vector<std::int64_t> v = {10, 20, 30, 40};
  EXPECT_EQ(NearestRank(v, 25), 10);
  EXPECT_EQ(NearestRank(v, 26), 20);
  EXPECT_EQ(NearestRank(v, 50), 20);
  EXPECT_EQ(NearestRank(v, 99), 40);
  EXPECT_EQ(NearestRank(v, 100), 40);
  EXPECT_EQ(NearestRank(v, 0), 10);
}

TEST(FitLineTest, ExactLine) {
  std::vector<double> x = {1, 2, 3, 4, 5};
  std::vector<double> y;
  for (double xi : x) y.push_back(30 + 15 * xi);
  LinearFit f = FitLine(x, y);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.intercept, 30, 1e-9);
  EXPECT_NEAR(f.slope, 15, 1e-9);
  EXPECT_NEAR(f.r2, 1, 1e-12);
}

TEST(FitLineTest, NoisyLine) {
  // y = {3, 3, 5, 9} lies around y = 2x with residuals +1, -1, -1, +1:
  // SS_res = 4; mean(y) = 5, so SS_tot = 4 + 4 + 0 + 16 = 24.
  std::vector<double> x = {1, 2, 3, 4};
  std::vector<double> y = {3, 3, 5, 9};
  LinearFit f = FitLine(x, y);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.slope, 2, 1e-12);
  EXPECT_NEAR(f.intercept, 0, 1e-12);
  EXPECT_NEAR(f.r2, 1 - 4.0 / 24.0, 1e-12);
}

TEST(FitLineTest, FlatLineHasRSquaredOne) {
  std::vector<double> x = {1, 2, 3};
  std::vector<double> y = {7, 7, 7};
  LinearFit f = FitLine(x, y);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.slope, 0, 1e-12);
  EXPECT_NEAR(f.intercept, 7, 1e-12);
  EXPECT_EQ(f.r2, 1);
}

TEST(FitLineTest, NotEnoughPoints) {
  std::vector<double> one = {1};
  EXPECT_FALSE(FitLine(one, one).valid);
  std::vector<double> x = {2, 2, 2};
  std::vector<double> y = {1, 2, 3};
  EXPECT_FALSE(FitLine(x, y).valid);
}

}  // namespace
}  // namespace zb::latency
