// Copyright 2026 The zbrokers Authors.

#include "tools/latency/cpu_pin.h"

#include <sched.h>

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace zb::latency {
namespace {

std::vector<int> Affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Each test runs on a thread of its own, so that pinning it cannot leak
// into the other tests.
template <typename F>
void OnOwnThread(F f) {
  std::thread t(f);
  t.join();
}

TEST(CpuPinTest, ThreadsStartedInsideRunOnCpuStayThereAndTheCallerIsRestored) {
  OnOwnThread([] {
    const std::vector<int> before = Affinity();
    ASSERT_FALSE(before.empty());
    const int cpu = before.back();
    std::vector<int> inside, started;
    absl::Status st = RunOnCpu(cpu, [&] {
      inside = Affinity();
      std::thread t([&] { started = Affinity(); });
      t.join();
      return absl::OkStatus();
    });
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(inside, std::vector<int>{cpu});
    EXPECT_EQ(started, std::vector<int>{cpu});
    EXPECT_EQ(Affinity(), before);
  });
}

TEST(CpuPinTest, ReturnsWhatTheFunctionReturnsAndRestoresOnFailureToo) {
  OnOwnThread([] {
    const std::vector<int> before = Affinity();
    absl::Status st = RunOnCpu(before.front(), [] {
      return absl::UnavailableError("the role did not start");
    });
    EXPECT_EQ(st, absl::UnavailableError("the role did not start"));
    EXPECT_EQ(Affinity(), before);
  });
}

TEST(CpuPinTest, NegativeCpuRunsTheFunctionUnpinned) {
  OnOwnThread([] {
    const std::vector<int> before = Affinity();
    std::vector<int> inside;
    absl::Status st = RunOnCpu(-1, [&] {
      inside = Affinity();
      return absl::OkStatus();
    });
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(inside, before);
  });
}

TEST(CpuPinTest, ACpuOutsideTheAllowedSetFailsWithoutRunningTheFunction) {
  OnOwnThread([] {
    const std::vector<int> before = Affinity();
    bool ran = false;
    // The highest CPU number a cpu_set_t holds: no test machine has it.
    absl::Status st = RunOnCpu(CPU_SETSIZE - 1, [&] {
      ran = true;
      return absl::OkStatus();
    });
    EXPECT_FALSE(st.ok());
    EXPECT_FALSE(ran);
    EXPECT_EQ(Affinity(), before);
    EXPECT_FALSE(PinCallingThread(CPU_SETSIZE).ok());
    EXPECT_FALSE(PinCallingThread(-1).ok());
  });
}

TEST(CpuPinTest, PinCallingThreadPinsForGood) {
  OnOwnThread([] {
    const int cpu = Affinity().front();
    ASSERT_TRUE(PinCallingThread(cpu).ok());
    EXPECT_EQ(Affinity(), std::vector<int>{cpu});
    std::vector<int> started;
    std::thread t([&] { started = Affinity(); });
    t.join();
    EXPECT_EQ(started, std::vector<int>{cpu});
  });
}

}  // namespace
}  // namespace zb::latency
