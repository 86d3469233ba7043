// Copyright 2026 The zbrokers Authors.
//
// Pieces shared by the daemon's in-process tests (daemon_test.cc,
// ops_test.cc).  The fixtures every folder's tests share are in
// test/testing/.

#ifndef BROKERS_DAEMON_TEST_UTIL_H_
#define BROKERS_DAEMON_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "absl/status/status.h"
#include "brokers/daemon/daemon.h"

namespace zb::daemon_test {

// Waits (bounded) until d.Wait() returns; returns its status, or
// DeadlineExceeded (and a test failure) when the daemon did not stop in
// time.  On a timeout the call still returns only once Wait() has (the
// future's destructor joins it), so the test does not crash on exit.
inline absl::Status WaitBounded(Daemon& d, std::chrono::seconds bound) {
  auto result = std::async(std::launch::async, [&d] { return d.Wait(); });
  if (result.wait_for(bound) != std::future_status::ready) {
    ADD_FAILURE() << "daemon did not stop within " << bound.count() << "s";
    return absl::DeadlineExceededError("daemon did not stop");
  }
  return result.get();
}

}  // namespace zb::daemon_test

#endif  // BROKERS_DAEMON_TEST_UTIL_H_
