// Copyright 2026 The zbrokers Authors.

#include "test/latency/svg_output.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/latency/output_test_util.h"

namespace zb::latency {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) {
    ++n;
  }
  return n;
}

TEST(NiceTicksTest, OneTwoFive) {
  EXPECT_THAT(NiceTicks(10, 5), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(NiceTicks(9.5, 10),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_THAT(NiceTicks(230, 8), ElementsAre(0, 50, 100, 150, 200, 250));
  EXPECT_THAT(NiceTicks(0, 4), ElementsAre(0, 0.5, 1));
}

TEST(SvgOutputTest, PlotElements) {
  const std::string svg = ToSvg(SampleReport(false));
  EXPECT_THAT(svg, ::testing::StartsWith("<?xml"));
  EXPECT_EQ(Count(svg, "<svg "), 1);
  EXPECT_EQ(Count(svg, "</svg>"), 1);
  EXPECT_EQ(Count(svg, "<polygon"), 1);          // the p50-p99 band
  EXPECT_EQ(Count(svg, "<circle"), 3);           // one dot per step
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 2);  // fit line + its legend
  EXPECT_THAT(svg, HasSubstr(">workers</text>"));
  EXPECT_THAT(svg, HasSubstr("round-trip latency"));
  EXPECT_THAT(svg, Not(HasSubstr("raw libzmq")));
  // Every element that opens also closes (self-closing or paired).
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<g "), Count(svg, "</g>"));
}

TEST(SvgOutputTest, BaselineIsDrawn) {
  const std::string svg = ToSvg(SampleReport(true));
  EXPECT_EQ(Count(svg, "<circle"), 6);
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 4);
  EXPECT_THAT(svg, HasSubstr("raw libzmq average"));
}

TEST(SvgOutputTest, FarP99IsClippedAndSaid) {
  Report r = SampleReport(false);
  EXPECT_THAT(ToSvg(r), Not(HasSubstr("(clipped)")));
  r.zbrokers.steps[1].latency.p99_us = 10000;  // 200x the average
  const std::string svg = ToSvg(r);
  EXPECT_THAT(svg, HasSubstr("p50 to p99 (clipped)"));
  EXPECT_THAT(svg, HasSubstr("clip-path=\"url(#plot)\""));
  // The y axis ends near 3x the highest line (60 us), not at 10,000.
  EXPECT_THAT(svg, Not(HasSubstr(">10000</text>")));
  EXPECT_THAT(svg, HasSubstr(">150</text>"));
}

TEST(SvgOutputTest, GrowClientsLabelsTheAxis) {
  Report r = SampleReport(false);
  r.options.grow = Grow::kClients;
  EXPECT_THAT(ToSvg(r), HasSubstr(">clients</text>"));
}

}  // namespace
}  // namespace zb::latency
