// Copyright 2026 The zbrokers Authors.

#include "test/testing/wait.h"

#include <gtest/gtest.h>

#include <thread>

namespace zb::test {

using Clock = std::chrono::steady_clock;

bool RunUntil(Reactor& reactor, const std::function<bool()>& done,
              std::chrono::milliseconds limit, std::chrono::milliseconds step) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= end) return done();
    EXPECT_TRUE(reactor.RunOnce(step).ok());
  }
  return true;
}

void RunFor(Reactor& reactor, std::chrono::milliseconds d) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
    EXPECT_TRUE(reactor.RunOnce(std::chrono::milliseconds(5)).ok());
  }
}

void RunBothAtOnce(int round, const std::function<void()>& first,
                   const std::function<void()>& second) {
  std::thread other(first);
  std::this_thread::sleep_for(std::chrono::microseconds(250 * (round % 5)));
  second();
  other.join();
}

bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

}  // namespace zb::test
