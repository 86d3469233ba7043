// Copyright 2026 The zbrokers Authors.
//
// What one zb-latency run measured, in the shape the output writers
// (csv_output.h, json_output.h, svg_output.h) and the console share.
//
//   zb::latency::Report r;
//   r.options = options;
//   r.zbrokers.steps.push_back(step);        // after each step
//   r.zbrokers.Refit(r.options.grow);        // at the end
//   std::string json = zb::latency::ToJson(r);
//
// Plain value types; thread-compatible.

#ifndef TOOLS_LATENCY_REPORT_H_
#define TOOLS_LATENCY_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/latency/options.h"
#include "tools/latency/stats.h"

namespace zb::latency {

// One step of one system.
struct StepResult {
  int workers = 0;
  int clients = 0;
  // Round trips measured (successful and failed); warm-up not included.
  std::int64_t round_trips = 0;
  // Latency of the successful round trips; a client's round trip is the time
  // from just before its request is handed to the client library (or socket)
  // to just after the reply is checked.
  LatencySummary latency;
  double elapsed_s = 0;
  // Round trips that failed, timed out, or came back with the wrong number
  // of payloads.  Must be 0.
  std::int64_t failures = 0;
  // Successful round trips per second, all clients together.
  double throughput_rps = 0;
  // CPU time (user + system, every thread of the process) per round trip, in
  // microseconds; negative when unknown (--placement processes).
  double cpu_us_per_rt = -1;

  // The x value of this step for the fit and the plot.
  int X(Grow grow) const { return grow == Grow::kWorkers ? workers : clients; }
};

// The steps of one system ("zbrokers" or "raw") and their fit.
struct Series {
  std::string name;
  std::vector<StepResult> steps;
  // avg_us ~= intercept + slope * X.
  LinearFit fit;
  // p50_us ~= intercept + slope * X: the same line through the medians,
  // which a busy machine's scheduling outliers move much less.
  LinearFit fit_p50;

  void Refit(Grow grow);
};

struct Report {
  Options options;
  // "embedded" or the --broker endpoint.
  std::string broker;
  Series zbrokers{"zbrokers", {}, {}, {}};
  // Present with --baseline: the hand-written libzmq program.
  std::optional<Series> raw;
};

// a / b, or NaN when b is not positive (writers print NaN as null / "n/a").
double Ratio(double a, double b);

// "a + b x" as text with the sign of b folded into the operator:
// FormatLine(306.3, -28.86, 1, 2, "", " x") is "306.3 - 28.86 x", never
// "306.3 + -28.86 x".  `a_digits` and `b_digits` are the decimals printed;
// `unit` follows both numbers (e.g. " us") and `x` follows b's unit (e.g.
// " x workers").  A value that rounds to zero prints as 0, without a sign.
std::string FormatLine(double a, double b, int a_digits, int b_digits,
                       std::string_view unit, std::string_view x);

// Below this r^2 a fit is reported as poor (zb-latency prints a warning and
// the plot shows it).
inline constexpr double kPoorFitR2 = 0.9;

// A fit that does not describe its steps: r^2 below kPoorFitR2 (latency did
// not grow linearly with the workers) or a negative intercept (a round trip
// through no workers cannot take negative time; the steps curve).
struct PoorFit {
  std::string series;  // "zbrokers" or "raw"
  std::string fit;     // "average" or "p50"
  double r2 = 0;
  double intercept = 0;
  bool low_r2 = false;
  bool negative_intercept = false;

  // E.g. "zbrokers average fit has r^2 = 0.432, below 0.9".  `r2_name` is how
  // r squared is written ("r^2" on a console, "r\u00b2" in the plot).
  std::string Describe(std::string_view r2_name) const;
};

// The poor fits of a report (zbrokers, then raw; average, then p50), in
// that order; empty when every valid fit is fine.  Fits through fewer than
// three steps are not judged by r^2 (two points always fit exactly).
std::vector<PoorFit> PoorFits(const Report& report);

// The console's warning about the poor fits, several lines ending in a
// newline, or "" when there are none.  It names each poor fit and points to
// --cpus (or, when the run was pinned, to other load) and to
// docs/latency.md's explanation.
std::string FitWarning(const Report& report);

// The step of `s` with the same x as `step`, or null.
const StepResult* MatchingStep(const Series& s, const StepResult& step,
                               Grow grow);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_REPORT_H_
