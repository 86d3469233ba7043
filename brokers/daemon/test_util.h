// Copyright 2026 The zbrokers Authors.
//
// Pieces shared by the daemon's in-process tests (daemon_test.cc,
// ops_test.cc, titanic_runtime_test.cc).  The fixtures every folder's tests
// share are in test/testing/.

#ifndef BROKERS_DAEMON_TEST_UTIL_H_
#define BROKERS_DAEMON_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "brokers/daemon/daemon.h"
#include "brokers/daemon/logging.h"

namespace zb::daemon_test {

// A daemon logger writing into a string, at debug level.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> logger = MakeDaemonLogger(
      DaemonLogLevel::kDebug,
      std::make_shared<spdlog::sinks::ostream_sink_mt>(out, true));
  // Only after the daemon has stopped (its threads are joined), so that
  // nothing writes to `out` concurrently.
  std::string text() {
    logger->flush();
    return out.str();
  }
};

// The value of the first sample line of a /metrics page that starts with
// `series`, or -1.
inline double Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

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
