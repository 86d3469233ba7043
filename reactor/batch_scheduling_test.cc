// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/batch_scheduling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

namespace zb {
namespace {

int Policy() { return ::sched_getscheduler(0); }

// Each test runs on a fresh thread so that a failure cannot leave the test
// runner's own thread under another policy.
template <typename Fn>
void OnNewThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(BatchSchedulingTest, SwitchesTheThreadAndSwitchesItBack) {
  OnNewThread([] {
    ASSERT_EQ(Policy(), SCHED_OTHER);
    {
      BatchScheduling batch;
      EXPECT_TRUE(batch.status().ok()) << batch.status();
      EXPECT_EQ(Policy(), SCHED_BATCH);
    }
    EXPECT_EQ(Policy(), SCHED_OTHER);
  });
}

TEST(BatchSchedulingTest, ActsOnTheCallingThreadOnly) {
  std::promise<void> switched;
  std::promise<void> looked;
  int other_policy = -1;
  // Started first, and looks at its own policy while the thread below is a
  // batch thread.
  std::thread other([&] {
    switched.get_future().wait();
    other_policy = Policy();
    looked.set_value();
  });
  OnNewThread([&] {
    BatchScheduling batch;
    EXPECT_EQ(Policy(), SCHED_BATCH);
    switched.set_value();
    looked.get_future().wait();
  });
  other.join();
  EXPECT_EQ(other_policy, SCHED_OTHER);
  EXPECT_EQ(Policy(), SCHED_OTHER);
}

TEST(BatchSchedulingTest, AThreadAlreadyUnderBatchStaysSo) {
  OnNewThread([] {
    sched_param param{};
    ASSERT_EQ(::sched_setscheduler(0, SCHED_BATCH, &param), 0);
    {
      BatchScheduling batch;
      EXPECT_TRUE(batch.status().ok()) << batch.status();
    }
    // It did not switch the thread, so it does not switch it back either.
    EXPECT_EQ(Policy(), SCHED_BATCH);
  });
}

TEST(BatchSchedulingTest, AnIdleThreadIsLeftAlone) {
  OnNewThread([] {
    sched_param param{};
    ASSERT_EQ(::sched_setscheduler(0, SCHED_IDLE, &param), 0);
    {
      BatchScheduling batch;
      EXPECT_EQ(batch.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(std::string(batch.status().message()),
                  testing::HasSubstr("SCHED_IDLE"));
      EXPECT_EQ(Policy(), SCHED_IDLE);
    }
    EXPECT_EQ(Policy(), SCHED_IDLE);
  });
}

// The policy of this process's libzmq I/O thread ("ZMQbg/IO/0"); the test
// keeps one context alive at a time, so there is one such thread.  libzmq's
// new thread names itself, so the name can lag its start: look for up to
// 5 s.  -1 when there is none.
int IoThreadPolicy() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != "ZMQbg/IO/0") continue;
      return ::sched_getscheduler(std::stoi(task.path().filename().string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

// What StartContextThreads() is for: without it, the first socket opened on
// a batch thread makes libzmq's I/O thread a batch thread too.
TEST(BatchSchedulingTest, LibzmqThreadsStartedByABatchThreadInheritIt) {
  zmq::context_t context;
  OnNewThread([&] {
    BatchScheduling batch;
    zmq::socket_t first(context, zmq::socket_type::pair);
    EXPECT_EQ(IoThreadPolicy(), SCHED_BATCH);
  });
}

TEST(BatchSchedulingTest, StartContextThreadsKeepsThemOffTheBatchThread) {
  zmq::context_t context;
  StartContextThreads(context);
  ASSERT_EQ(IoThreadPolicy(), SCHED_OTHER);
  OnNewThread([&] {
    BatchScheduling batch;
    zmq::socket_t first(context, zmq::socket_type::pair);
    EXPECT_EQ(IoThreadPolicy(), SCHED_OTHER);
  });
}

}  // namespace
}  // namespace zb
