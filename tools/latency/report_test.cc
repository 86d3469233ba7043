// Copyright 2026 The zbrokers Authors.

#include "tools/latency/report.h"

#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/latency/output_test_util.h"

namespace zb::latency {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

TEST(FormatLineTest, SignGoesIntoTheOperator) {
  EXPECT_EQ(FormatLine(306.3, -28.86, 1, 2, "", " x"), "306.3 - 28.86 x");
  EXPECT_EQ(FormatLine(306.3, 28.86, 1, 2, "", " x"), "306.3 + 28.86 x");
  EXPECT_EQ(FormatLine(-12.345, 3.5, 2, 2, " us", " x workers"),
            "-12.35 us + 3.50 us x workers");
  EXPECT_EQ(FormatLine(-12.345, -3.5, 1, 1, "", " x"), "-12.3 - 3.5 x");
}

TEST(FormatLineTest, NoSignedZeros) {
  EXPECT_EQ(FormatLine(-0.004, -0.004, 2, 2, "", " x"), "0.00 + 0.00 x");
  EXPECT_EQ(FormatLine(5, -0.006, 1, 2, "", " x"), "5.0 - 0.01 x");
  EXPECT_EQ(FormatLine(0, 0, 1, 1, "", " x"), "0.0 + 0.0 x");
}

Report WithSteps(std::vector<double> avg) {
  Report r;
  for (std::size_t i = 0; i < avg.size(); ++i) {
    StepResult st;
    st.workers = static_cast<int>(i) + 1;
    st.clients = 1;
    st.latency.count = 100;
    st.latency.avg_us = avg[i];
    st.latency.p50_us = avg[i];
    r.zbrokers.steps.push_back(st);
  }
  r.zbrokers.Refit(Grow::kWorkers);
  return r;
}

TEST(PoorFitsTest, GoodFitsAreNotReported) {
  EXPECT_THAT(PoorFits(SampleReport(true)), IsEmpty());
  // Two steps always fit exactly; a single step has no fit.
  EXPECT_THAT(PoorFits(WithSteps({50, 40})), IsEmpty());
  EXPECT_THAT(PoorFits(WithSteps({50})), IsEmpty());
}

TEST(PoorFitsTest, LowRSquaredIsReportedForEachFit) {
  const std::vector<PoorFit> p = PoorFits(WithSteps({300, 200, 320, 210}));
  ASSERT_THAT(p, SizeIs(2));
  EXPECT_EQ(p[0].series, "zbrokers");
  EXPECT_EQ(p[0].fit, "average");
  EXPECT_EQ(p[1].fit, "p50");
  EXPECT_TRUE(p[0].low_r2);
  EXPECT_FALSE(p[0].negative_intercept);
  EXPECT_LT(p[0].r2, kPoorFitR2);
  EXPECT_EQ(p[0].Describe("r^2"),
            absl::StrFormat("zbrokers average fit has r^2 = %.3f, below 0.9",
                            p[0].r2));
}

TEST(PoorFitsTest, NegativeInterceptIsReported) {
  // Straight but curving up from 10 at 1 worker: the line crosses zero.
  const std::vector<PoorFit> p = PoorFits(WithSteps({10, 100, 200, 300, 400}));
  ASSERT_THAT(p, SizeIs(2));
  EXPECT_FALSE(p[0].low_r2);
  EXPECT_TRUE(p[0].negative_intercept);
  EXPECT_THAT(p[0].Describe("r^2"),
              ::testing::MatchesRegex(
                  "zbrokers average fit has intercept -[0-9.]+ us, below 0"));
}

TEST(PoorFitsTest, TheBaselineIsJudgedToo) {
  Report r = SampleReport(true);
  r.raw->steps[1].latency.avg_us = 500;
  r.raw->Refit(Grow::kWorkers);
  const std::vector<PoorFit> p = PoorFits(r);
  ASSERT_THAT(p, SizeIs(1));
  EXPECT_EQ(p[0].series, "raw");
  EXPECT_EQ(p[0].fit, "average");
}

TEST(FitWarningTest, NamesTheFitsAndPointsToCpus) {
  EXPECT_EQ(FitWarning(SampleReport(true)), "");
  Report r = WithSteps({300, 200, 320, 210});
  std::string w = FitWarning(r);
  EXPECT_THAT(w,
              ::testing::StartsWith("\nWARNING: poor fit, the cost per "
                                    "added worker above is not reliable:\n"));
  EXPECT_THAT(w, HasSubstr("  - zbrokers average fit has r^2 = "));
  EXPECT_THAT(w, HasSubstr("  - zbrokers p50 fit has r^2 = "));
  EXPECT_THAT(w, HasSubstr("not pinned"));
  EXPECT_THAT(w, HasSubstr("--cpus 0"));
  EXPECT_THAT(w, HasSubstr("docs/latency.md, \"Noisy fits and --cpus\""));
  EXPECT_TRUE(w.ends_with("\n"));

  r.options.cpus = {0, 1};
  w = FitWarning(r);
  EXPECT_THAT(w, HasSubstr("pinned (--cpus 0-1)"));
  EXPECT_THAT(w, Not(HasSubstr("not pinned")));
  r.options.grow = Grow::kClients;
  EXPECT_THAT(FitWarning(r), HasSubstr("cost per added client"));
}

}  // namespace
}  // namespace zb::latency
