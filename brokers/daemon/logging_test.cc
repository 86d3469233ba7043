// Copyright 2026 The zbrokers Authors.

#include "brokers/daemon/logging.h"

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(PrintableIdTest, KeepsPrintableAscii) {
  EXPECT_EQ(PrintableId("worker-1"), "worker-1");
}

TEST(PrintableIdTest, HexForBinary) {
  // libzmq's generated identities: a zero byte and four random bytes.
  EXPECT_EQ(PrintableId(std::string_view("\x00\x6b\x8b\x45\x67", 5)),
            "006b8b4567");
  EXPECT_EQ(PrintableId("a b"), "612062");  // a space is not kept either
  EXPECT_EQ(PrintableId(""), "\"\"");
}

TEST(PrintableIdTest, Truncates) {
  const std::string id = PrintableId(std::string(100, 'x'));
  EXPECT_EQ(id, std::string(64, 'x') + "...");
}

TEST(DaemonLoggerTest, FormatAndLevel) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto log = MakeDaemonLogger(LogLevel::kInfo, sink);
  log->debug("hidden {}", 1);
  log->info("majordomo: worker {} joined", "w1");
  log->warn("careful");
  const std::string text = out.str();
  EXPECT_THAT(text, Not(HasSubstr("hidden")));
  EXPECT_THAT(text, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+ info    "
                                 "\\[zb-broker\\] majordomo: worker w1 joined\n"
                                 ".* warning \\[zb-broker\\] careful\n"));
}

TEST(DaemonLoggerTest, LevelsMapToSpdlog) {
  EXPECT_EQ(ToSpdlogLevel(LogLevel::kTrace), spdlog::level::trace);
  EXPECT_EQ(ToSpdlogLevel(LogLevel::kWarn), spdlog::level::warn);
  EXPECT_EQ(ToSpdlogLevel(LogLevel::kError), spdlog::level::err);
  EXPECT_EQ(ToSpdlogLevel(LogLevel::kOff), spdlog::level::off);
}

}  // namespace
}  // namespace zb
