// Copyright 2026 The zbrokers Authors.

#include "zbrokers/common/log_limiter.h"

#include <chrono>

#include "gtest/gtest.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using Clock = LogLimiter::Clock;

TEST(LogLimiterTest, AdmitsBurstThenRefusesAndCounts) {
  LogLimiter limiter({.period = std::chrono::seconds(1), .burst = 3});
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(limiter.Admit(t0));
  EXPECT_TRUE(limiter.Admit(t0));
  EXPECT_TRUE(limiter.Admit(t0));
  EXPECT_FALSE(limiter.Admit(t0));
  EXPECT_FALSE(limiter.Admit(t0 + milliseconds(100)));
  EXPECT_EQ(limiter.total_suppressed(), 2u);
  EXPECT_EQ(limiter.SuppressedNote(), " (2 similar lines suppressed)");
  EXPECT_EQ(limiter.SuppressedNote(), "");
  EXPECT_EQ(limiter.total_suppressed(), 2u);
}

TEST(LogLimiterTest, RefillsAtBurstPerPeriod) {
  LogLimiter limiter({.period = std::chrono::seconds(1), .burst = 4});
  Clock::time_point t = Clock::time_point() + std::chrono::hours(1);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limiter.Admit(t));
  EXPECT_FALSE(limiter.Admit(t));
  // One token comes back every 250 ms.
  t += milliseconds(249);
  EXPECT_FALSE(limiter.Admit(t));
  t += milliseconds(1);
  EXPECT_TRUE(limiter.Admit(t));
  EXPECT_FALSE(limiter.Admit(t));
  // A long quiet time refills the bucket, but never beyond `burst`.
  t += std::chrono::minutes(5);
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += limiter.Admit(t) ? 1 : 0;
  EXPECT_EQ(admitted, 4);
}

TEST(LogLimiterTest, SustainedFloodIsCappedAtTheRate) {
  LogLimiter limiter({.period = std::chrono::seconds(1), .burst = 10});
  Clock::time_point t = Clock::time_point() + std::chrono::hours(1);
  int admitted = 0;
  // 100,000 lines over 10 s: at most the burst plus 10 per second.
  for (int i = 0; i < 100'000; ++i) {
    admitted += limiter.Admit(t) ? 1 : 0;
    t += std::chrono::microseconds(100);
  }
  EXPECT_LE(admitted, 10 + 100);
  EXPECT_GE(admitted, 100);
  EXPECT_EQ(limiter.total_suppressed(), 100'000u - admitted);
}

TEST(LogLimiterTest, FlushReportsAFloodThatStopped) {
  LogLimiter limiter({.period = std::chrono::seconds(1), .burst = 1});
  Clock::time_point t = Clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(limiter.Admit(t));
  EXPECT_FALSE(limiter.Admit(t));
  EXPECT_FALSE(limiter.Admit(t));
  // Not before a period has passed since the last admitted line...
  EXPECT_EQ(limiter.Flush(t + milliseconds(500)), 0u);
  // ...then once, with the count.
  EXPECT_EQ(limiter.Flush(t + milliseconds(1000)), 2u);
  EXPECT_EQ(limiter.Flush(t + milliseconds(5000)), 0u);
}

TEST(LogLimiterTest, ZeroBurstIsTreatedAsOne) {
  LogLimiter limiter({.period = std::chrono::seconds(1), .burst = 0});
  const Clock::time_point t = Clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(limiter.Admit(t));
  EXPECT_FALSE(limiter.Admit(t));
}

}  // namespace
}  // namespace zb
