// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/logging.h"

#include <spdlog/sinks/ostream_sink.h>

#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(DaemonLoggerTest, FormatAndLevel) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto log = MakeDaemonLogger(DaemonLogLevel::kInfo, sink);
  log->debug("hidden {}", 1);
  log->info("majordomo: worker {} joined", "w1");
  log->warn("careful");
  const std::string text = out.str();
  EXPECT_THAT(text, Not(HasSubstr("hidden")));
  EXPECT_THAT(text,
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.+-]+ info    "
                           "\\[zb-broker\\] majordomo: worker w1 joined\n"
                           ".* warning \\[zb-broker\\] careful\n"));
}

TEST(DaemonLoggerTest, LevelsMapToSpdlog) {
  EXPECT_EQ(ToSpdlogLevel(DaemonLogLevel::kTrace), spdlog::level::trace);
  EXPECT_EQ(ToSpdlogLevel(DaemonLogLevel::kWarn), spdlog::level::warn);
  EXPECT_EQ(ToSpdlogLevel(DaemonLogLevel::kError), spdlog::level::err);
  EXPECT_EQ(ToSpdlogLevel(DaemonLogLevel::kOff), spdlog::level::off);
}

// Sets TZ for the test's lifetime (the logger's offset comes from the C
// library's local time).
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (old_.empty()) {
      unsetenv("TZ");
    } else {
      setenv("TZ", old_.c_str(), 1);
    }
    tzset();
  }

 private:
  std::string old_;
};

std::string LogOnce(LogFormat format, std::string_view message) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto log = MakeDaemonLogger(DaemonLogLevel::kInfo, format, sink);
  log->info("{}", message);
  return out.str();
}

// Log lines carried local time without a zone, so a reader could not tell
// when they were written.  They carry ISO 8601 with the UTC offset now.
TEST(DaemonLoggerTest, TimestampsCarryTheUtcOffset) {
  {
    ScopedTimeZone tz("XYZ-05:30");  // POSIX: 5:30 east of UTC
    EXPECT_THAT(LogOnce(LogFormat::kText, "hello"),
                MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                             "[0-9]{2}\\.[0-9]{3}\\+05:30 info    "
                             "\\[zb-broker\\] hello\n"));
  }
  {
    ScopedTimeZone tz("UTC0");
    EXPECT_THAT(LogOnce(LogFormat::kText, "hello"),
                MatchesRegex(".*T[0-9:.]+\\+00:00 info .*\n"));
  }
}

// One JSON object per line; the message is escaped so that any bytes a
// peer can put into a log line (service names, identities, reasons) keep it
// valid JSON: quotes, backslashes, control characters, and bytes that are
// not UTF-8 (written as U+FFFD).
TEST(DaemonLoggerTest, JsonLinesAreEscaped) {
  ScopedTimeZone tz("XYZ+02");  // 2 hours west of UTC
  const std::string line = LogOnce(LogFormat::kJson,
                                   "svc \"a\\b\"\n\t\x01\x1f\x7f caf\xc3\xa9 "
                                   "\xe2\x82\xac \xf0\x9f\x98\x80 bad:\xff\xc3("
                                   "\xe0\x80\xaf\xed\xa0\x80");
  EXPECT_THAT(line,
              MatchesRegex("\\{\"time\":\"[0-9]{4}-[0-9]{2}-[0-9]{2}T"
                           "[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}-02:00\","
                           "\"level\":\"info\",\"logger\":\"zb-broker\","
                           "\"message\":.*\\}\n"));
  const std::size_t at = line.find("\"message\":");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(line.substr(at),
            "\"message\":\"svc \\\"a\\\\b\\\"\\n\\t\\u0001\\u001f\\u007f "
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 bad:\\ufffd\\ufffd("
            "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"}\n");
  // Every level name, and no text-format leftovers.
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto log = MakeDaemonLogger(DaemonLogLevel::kTrace, LogFormat::kJson, sink);
  log->warn("w");
  log->error("e");
  log->debug("d");
  EXPECT_THAT(out.str(),
              MatchesRegex("\\{[^\n]*\"level\":\"warning\"[^\n]*\\}\n"
                           "\\{[^\n]*\"level\":\"error\"[^\n]*\\}\n"
                           "\\{[^\n]*\"level\":\"debug\"[^\n]*\\}\n"));
}

// SIGHUP switches the format of a running logger.
TEST(DaemonLoggerTest, SetLogFormatSwitchesARunningLogger) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto log = MakeDaemonLogger(DaemonLogLevel::kInfo, LogFormat::kText, sink);
  log->info("one");
  SetLogFormat(*log, LogFormat::kJson);
  log->info("two");
  SetLogFormat(*log, LogFormat::kText);
  log->info("three");
  EXPECT_THAT(out.str(), MatchesRegex("[^{][^\n]* one\n\\{[^\n]*"
                                      "\"message\":\"two\"\\}\n[^{][^\n]* "
                                      "three\n"));
}

}  // namespace
}  // namespace zb
