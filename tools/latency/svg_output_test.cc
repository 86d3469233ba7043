// Copyright 2026 The zbrokers Authors.
//
// The SVG's content and geometry, read back from the text.  check_svg.py
// renders the same plots with rsvg-convert and checks the pixels.

#include "tools/latency/svg_output.h"

#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/latency/output_test_util.h"

namespace zb::latency {
namespace {

using ::testing::AllOf;
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

// The text between <g id="NAME" ...> and its </g> (groups do not nest).
std::string Group(const std::string& svg, const std::string& name) {
  const auto start = svg.find("<g id=\"" + name + "\"");
  if (start == std::string::npos) return "";
  return svg.substr(start, svg.find("</g>", start) - start);
}

double Attr(const std::string& element, const std::string& name) {
  std::smatch m;
  const std::regex re(" " + name + "=\"([-0-9.]+)\"");
  EXPECT_TRUE(std::regex_search(element, m, re)) << name << " in " << element;
  return m.empty() ? 0 : std::stod(m[1]);
}

struct Text {
  double x, y;
  std::string text;
};

std::vector<Text> Texts(const std::string& fragment) {
  std::vector<Text> out;
  const std::regex re("<text ([^>]*)>([^<]*)</text>");
  for (std::sregex_iterator it(fragment.begin(), fragment.end(), re), end;
       it != end; ++it) {
    const std::string attrs = " " + (*it)[1].str();
    out.push_back({Attr(attrs, "x"), Attr(attrs, "y"), (*it)[2].str()});
  }
  return out;
}

double SvgHeight(const std::string& svg) {
  return Attr(svg.substr(svg.find("<svg "), 200), "height");
}

// Every legend text, at its estimated width, ends inside the image and the
// legend box lies below the plot area.
void ExpectLegendInside(const std::string& svg) {
  const std::string legend = Group(svg, "legend");
  ASSERT_FALSE(legend.empty());
  const double font = Attr(legend.substr(0, legend.find('>')), "font-size");
  const std::vector<Text> texts = Texts(legend);
  ASSERT_FALSE(texts.empty());
  for (const Text& t : texts) {
    EXPECT_GE(t.x, 0);
    EXPECT_LE(t.x + TextWidth(t.text, font), 960 - 10) << t.text;
    EXPECT_LE(t.y + font, SvgHeight(svg)) << t.text;
  }
  const auto plot = svg.substr(svg.find("<rect id=\"plot-area\""), 200);
  const auto box = legend.substr(legend.find("<rect "), 200);
  EXPECT_GE(Attr(box, "y"), Attr(plot, "y") + Attr(plot, "height"));
  EXPECT_LE(Attr(box, "y") + Attr(box, "height"), SvgHeight(svg));
}

std::vector<std::string> TickLabels(const std::string& svg,
                                    const std::string& axis) {
  std::vector<std::string> out;
  for (const Text& t : Texts(Group(svg, axis))) out.push_back(t.text);
  return out;
}

TEST(NiceTicksTest, OneTwoFive) {
  EXPECT_THAT(NiceTicks(10, 5), ElementsAre(0, 2, 4, 6, 8, 10));
  EXPECT_THAT(NiceTicks(9.5, 10),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_THAT(NiceTicks(230, 8), ElementsAre(0, 50, 100, 150, 200, 250));
  EXPECT_THAT(NiceTicks(0, 4), ElementsAre(0, 0.5, 1));
  EXPECT_THAT(NiceTicks(3, 10), ElementsAre(0, 0.5, 1, 1.5, 2, 2.5, 3));
}

TEST(NiceTicksTest, IntegerAxesGetWholeSteps) {
  EXPECT_THAT(NiceTicks(3, 10, true), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(NiceTicks(2, 10, true), ElementsAre(0, 1, 2));
  EXPECT_THAT(NiceTicks(1, 10, true), ElementsAre(0, 1));
  EXPECT_THAT(NiceTicks(8, 10, true), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(NiceTicks(16, 10, true),
              ElementsAre(0, 2, 4, 6, 8, 10, 12, 14, 16));
  EXPECT_THAT(NiceTicks(256, 10, true),
              ElementsAre(0, 50, 100, 150, 200, 250, 300));
}

TEST(SvgOutputTest, PlotElements) {
  const std::string svg = ToSvg(SampleReport(false));
  EXPECT_THAT(svg, ::testing::StartsWith("<?xml"));
  EXPECT_EQ(Count(svg, "<svg "), 1);
  EXPECT_EQ(Count(svg, "</svg>"), 1);
  EXPECT_EQ(Count(svg, "<polygon"), 0);  // no filled band over the lines
  // One dot per step and one in the legend.
  EXPECT_EQ(Count(svg, "<circle"), 3 + 1);
  // avg, p50, p99 and the two fits (the legend draws <line>s).
  EXPECT_EQ(Count(svg, "<polyline"), 5);
  EXPECT_THAT(svg, HasSubstr(">workers</text>"));
  EXPECT_THAT(svg, HasSubstr("round-trip latency"));
  EXPECT_THAT(svg, HasSubstr(">zbrokers median (p50)</text>"));
  EXPECT_THAT(svg, HasSubstr(">zbrokers p99</text>"));
  EXPECT_THAT(svg, HasSubstr(">fit (avg): 30.0 + 10.00 x, r\xC2\xB2 1.000<"));
  EXPECT_THAT(svg, HasSubstr(">fit (p50): 29.0 + 10.00 x, r\xC2\xB2 1.000<"));
  EXPECT_THAT(svg, Not(HasSubstr("raw libzmq")));
  EXPECT_THAT(svg, Not(HasSubstr("id=\"warning\"")));
  // Every element that opens also closes (self-closing or paired).
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<g "), Count(svg, "</g>"));
  ExpectLegendInside(svg);
  EXPECT_THAT(TickLabels(svg, "x-ticks"), ElementsAre("0", "1", "2", "3"));
}

TEST(SvgOutputTest, BaselineIsDrawn) {
  const std::string svg = ToSvg(SampleReport(true));
  EXPECT_EQ(Count(svg, "<circle"), 6 + 2);
  EXPECT_EQ(Count(svg, "<polyline"), 10);
  EXPECT_THAT(svg, HasSubstr(">raw libzmq average</text>"));
  EXPECT_THAT(svg, HasSubstr(">raw libzmq median (p50)</text>"));
  ExpectLegendInside(svg);
}

TEST(SvgOutputTest, TheAveragesAreDrawnLast) {
  const std::string svg = ToSvg(SampleReport(true));
  const std::string data = Group(svg, "data");
  // The zbrokers average line (thickest stroke) is the last polyline: no
  // band, percentile or fit is painted over it.
  const auto last = data.rfind("<polyline");
  ASSERT_NE(last, std::string::npos);
  EXPECT_THAT(data.substr(last, 120),
              AllOf(HasSubstr("#1f5fbf"), HasSubstr("stroke-width=\"2.5\"")));
  EXPECT_LT(data.find("stroke-dasharray=\"1.5 3\""), data.find("\"7 4\""));
  EXPECT_LT(data.find("\"7 4\""), data.find("stroke-width=\"1.4\""));
}

TEST(SvgOutputTest, FarP99IsCutAtTheTopAndSaid) {
  Report r = SampleReport(false);
  EXPECT_THAT(ToSvg(r), Not(HasSubstr(", cut)")));
  r.zbrokers.steps[1].latency.p99_us = 10000;  // 200x the average
  const std::string svg = ToSvg(r);
  EXPECT_THAT(svg, HasSubstr("zbrokers p99 (up to 10000 \xC2\xB5s, cut)"));
  EXPECT_THAT(svg, HasSubstr("clip-path=\"url(#plot)\""));
  // The y axis follows the lines (highest 60 us), not the p99.
  const std::vector<std::string> y = TickLabels(svg, "y-ticks");
  ASSERT_FALSE(y.empty());
  EXPECT_LE(std::stod(y.back()), 100);
  // Every average dot lies inside the plot area, well below its top.
  const auto plot = svg.substr(svg.find("<rect id=\"plot-area\""), 200);
  const double top = Attr(plot, "y"), bottom = top + Attr(plot, "height");
  const std::regex dot("<circle cx=\"[0-9.]+\" cy=\"([0-9.]+)\"");
  const std::string data = Group(svg, "data");
  int dots = 0;
  for (std::sregex_iterator it(data.begin(), data.end(), dot), end; it != end;
       ++it, ++dots) {
    const double cy = std::stod((*it)[1]);
    EXPECT_GT(cy, top + 0.05 * (bottom - top));
    EXPECT_LT(cy, bottom);
  }
  EXPECT_EQ(dots, 3);
}

TEST(SvgOutputTest, GrowClientsHasWholeNumberTicks) {
  Report r = SampleReport(false);
  r.options.grow = Grow::kClients;
  // Two client counts: the old plot put ticks at 0.5 steps.
  for (StepResult& s : r.zbrokers.steps) s.clients = s.workers;
  r.zbrokers.steps.pop_back();
  r.zbrokers.Refit(Grow::kClients);
  const std::string svg = ToSvg(r);
  EXPECT_THAT(svg, HasSubstr(">clients</text>"));
  EXPECT_THAT(TickLabels(svg, "x-ticks"), ElementsAre("0", "1", "2"));
  ExpectLegendInside(svg);
}

TEST(SvgOutputTest, NegativeSlopeKeepsItsSignInTheOperator) {
  Report r = SampleReport(false);
  for (StepResult& s : r.zbrokers.steps) {
    s.latency.avg_us = 306.3 - 28.86 * s.workers;
  }
  r.zbrokers.Refit(Grow::kWorkers);
  const std::string svg = ToSvg(r);
  EXPECT_THAT(svg, HasSubstr("fit (avg): 306.3 - 28.86 x"));
  EXPECT_THAT(svg, Not(HasSubstr("+ -")));
}

TEST(SvgOutputTest, PoorFitShowsAWarningThatPointsToCpus) {
  Report r = SampleReport(true);
  r.zbrokers.steps[1].latency.avg_us = 300;  // far off the line
  r.zbrokers.Refit(Grow::kWorkers);
  std::string svg = ToSvg(r);
  const std::string warning = Group(svg, "warning");
  ASSERT_FALSE(warning.empty());
  EXPECT_THAT(warning, AllOf(HasSubstr("poor fit"),
                             HasSubstr("--cpus\xC2\xA0"
                                       "0"),
                             HasSubstr("docs/latency.md"),
                             HasSubstr("zbrokers average fit")));
  EXPECT_THAT(warning, HasSubstr("Not pinned"));
  // Warning lines are wrapped to the image width and come before the plot.
  const auto plot = svg.substr(svg.find("<rect id=\"plot-area\""), 200);
  for (const Text& t : Texts(warning)) {
    EXPECT_LE(t.x + TextWidth(t.text, 13), 960 - 10) << t.text;
    EXPECT_LT(t.y, Attr(plot, "y"));
  }
  ExpectLegendInside(svg);

  r.options.cpus = {0};
  svg = ToSvg(r);
  EXPECT_THAT(Group(svg, "warning"), HasSubstr("Pinned"));
  EXPECT_THAT(svg, HasSubstr("pinned to cpus 0"));
}

TEST(TextWidthTest, CountsCharactersNotBytes) {
  EXPECT_DOUBLE_EQ(TextWidth("abc", 10), TextWidth("r\xC2\xB2x", 10));
  EXPECT_GT(TextWidth("abcd", 10), TextWidth("abc", 10));
}

}  // namespace
}  // namespace zb::latency
