// Copyright 2026 The zbrokers Authors.

#include "tools/latency/csv_output.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/latency/output_test_util.h"

namespace zb::latency {
namespace {

std::vector<std::string> Lines(const std::string& s) {
  return absl::StrSplit(s, '\n', absl::SkipEmpty());
}

TEST(CsvOutputTest, HeaderAndOneRowPerStep) {
  std::vector<std::string> lines = Lines(ToCsv(SampleReport(false)));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "system,workers,clients,round_trips,avg_us,p50_us,p99_us,max_us,"
            "elapsed_s,failures,throughput_rps,cpu_us_per_rt");
  EXPECT_EQ(lines[1],
            "zbrokers,1,1,300,40.000,39.000,60.000,140.000,0.012,0,25000.0,"
            "80.00");
  for (const std::string& l : lines) {
    EXPECT_EQ(std::count(l.begin(), l.end(), ','), 11) << l;
  }
}

TEST(CsvOutputTest, BaselineRowsFollow) {
  std::vector<std::string> lines = Lines(ToCsv(SampleReport(true)));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_THAT(lines[3], ::testing::StartsWith("zbrokers,3,"));
  EXPECT_THAT(lines[4], ::testing::StartsWith("raw,1,1,300,33.000,"));
}

TEST(CsvOutputTest, UnknownCpuIsEmpty) {
  Report r = SampleReport(false);
  r.zbrokers.steps[0].cpu_us_per_rt = -1;
  std::vector<std::string> lines = Lines(ToCsv(r));
  EXPECT_THAT(lines[1], ::testing::EndsWith(",25000.0,"));
}

}  // namespace
}  // namespace zb::latency
