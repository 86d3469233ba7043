// Copyright 2026 The zbrokers Authors.

#include "tools/latency/json_output.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/latency/output_test_util.h"

namespace zb::latency {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Brackets balance outside of strings (a cheap well-formedness check; the
// meson test parses the real output with Python's json module).
bool Balanced(const std::string& s) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (depth < 0) return false;
  }
  return depth == 0 && !in_string;
}

TEST(JsonOutputTest, KeysToolsRead) {
  const std::string j = ToJson(SampleReport(false));
  EXPECT_TRUE(Balanced(j)) << j;
  for (const char* key :
       {"\"config\"",
        "\"steps\"",
        "\"workers\": 1",
        "\"clients\": 1",
        "\"round_trips\": 300",
        "\"avg_us\": 40",
        "\"p50_us\": 39",
        "\"p99_us\": 60",
        "\"max_us\": 140",
        "\"elapsed_s\": 0.012",
        "\"failures\": 0",
        "\"fit\"",
        "\"intercept_us\": 30",
        "\"slope_us_per_worker\": 10",
        "\"r2\": 1",
        "\"transport\": \"tcp\"",
        "\"fit_p50\": {\"x\": \"workers\", \"intercept_us\": 29,",
        "\"rounds_per_step\": 300",
        "\"broker\": \"embedded\"",
        "\"payload_bytes\": 16, \"evict_cache_bytes\": 0, "}) {
    EXPECT_THAT(j, HasSubstr(key));
  }
  EXPECT_THAT(j, Not(HasSubstr("\"baseline\": {")));
  EXPECT_THAT(j, Not(HasSubstr("\"ratio\"")));
  EXPECT_THAT(j, HasSubstr("\"cpus\": null, \"role_cpus\": null, "
                           "\"yield_before_sleep\": false, "
                           "\"batch_scheduling\": true}"));
  EXPECT_THAT(j, HasSubstr("\"warnings\": []\n}"));
}

// The strings come from the command line (an endpoint such as a broker
// address or an ipc:// path), so they may hold any bytes: control bytes are
// escaped and bytes that are not UTF-8, which no JSON text may hold
// (RFC 8259), are written as U+FFFD, as in the daemon's JSON log lines.
TEST(JsonOutputTest, AnyBytesInAStringStayValidJson) {
  Report r = SampleReport(false);
  r.broker = "ipc:///tmp/\x01\x1f\x7f\"\\caf\xc3\xa9\xff\xc3(";
  const std::string j = ToJson(r);
  EXPECT_TRUE(Balanced(j)) << j;
  EXPECT_THAT(j, HasSubstr("\"broker\": \"ipc:///tmp/\\u0001\\u001f\\u007f"
                           "\\\"\\\\caf\xc3\xa9\\ufffd\\ufffd(\""));
}

TEST(JsonOutputTest, CpusAndWarnings) {
  Report r = SampleReport(true);
  r.options.cpus = {0, 1};
  r.options.yield_before_sleep = true;
  r.options.batch_scheduling = false;
  r.options.evict_cache_bytes = 8 << 20;
  r.zbrokers.steps[1].latency.avg_us = 500;  // a poor fit
  r.zbrokers.Refit(Grow::kWorkers);
  const std::string j = ToJson(r);
  EXPECT_TRUE(Balanced(j)) << j;
  EXPECT_THAT(j, HasSubstr("\"cpus\": \"0-1\", \"role_cpus\": null, "));
  EXPECT_THAT(j, HasSubstr("\"evict_cache_bytes\": 8388608, "));
  r.options.pin_roles = true;
  EXPECT_THAT(ToJson(r),
              HasSubstr("\"cpus\": \"0-1\", \"role_cpus\": {\"broker\": 0, "
                        "\"workers\": 1, \"clients\": 0}, "));
  EXPECT_THAT(j, HasSubstr("\"yield_before_sleep\": true, "
                           "\"batch_scheduling\": false}"));
  EXPECT_THAT(j, HasSubstr("\"warnings\": [\"zbrokers average fit has r^2 = "));
}

TEST(JsonOutputTest, BaselineAndRatios) {
  const std::string j = ToJson(SampleReport(true));
  EXPECT_TRUE(Balanced(j)) << j;
  EXPECT_THAT(j, HasSubstr("\"baseline\": {\"steps\""));
  EXPECT_THAT(j, HasSubstr("\"intercept_us\": 25"));
  EXPECT_THAT(j, HasSubstr("\"slope_us_per_worker\": 8"));
  // 10 / 8 and 30 / 25; first step 40 / 33.
  EXPECT_THAT(j, HasSubstr("\"slope\": 1.25"));
  EXPECT_THAT(j, HasSubstr("\"intercept\": 1.2,"));
  EXPECT_THAT(j, HasSubstr("\"first_step_avg\": 1.21212"));
  EXPECT_THAT(j, HasSubstr("\"slope_p50\": 1.25}"));
}

TEST(JsonOutputTest, MissingValuesAreNull) {
  Report r = SampleReport(false);
  r.zbrokers.steps.resize(1);
  r.zbrokers.steps[0].cpu_us_per_rt = -1;
  r.zbrokers.Refit(Grow::kWorkers);
  r.broker = "tcp://\"odd\"\n";
  const std::string j = ToJson(r);
  EXPECT_TRUE(Balanced(j)) << j;
  EXPECT_THAT(j, HasSubstr("\"slope_us_per_worker\": null"));
  EXPECT_THAT(j, HasSubstr("\"cpu_us_per_rt\": null"));
  EXPECT_THAT(j, HasSubstr(R"("broker": "tcp://\"odd\"\n")"));
  EXPECT_THAT(j, Not(HasSubstr("nan")));
}

}  // namespace
}  // namespace zb::latency
