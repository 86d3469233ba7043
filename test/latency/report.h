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

#ifndef ZB_TEST_LATENCY_REPORT_H_
#define ZB_TEST_LATENCY_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "test/latency/options.h"
#include "test/latency/stats.h"

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

// The step of `s` with the same x as `step`, or null.
const StepResult* MatchingStep(const Series& s, const StepResult& step,
                               Grow grow);

}  // namespace zb::latency

#endif  // ZB_TEST_LATENCY_REPORT_H_
