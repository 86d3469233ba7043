// Copyright 2026 The zbrokers Authors.
//
// Statistics for the per-worker latency test: a summary of one step's
// round-trip latencies (average, median, 99th percentile, maximum) and the
// least-squares line latency ~= a + b * x through the steps' averages.
//
//   std::vector<std::int64_t> ns = ...;      // one entry per round trip
//   zb::latency::LatencySummary s = zb::latency::Summarize(ns);
//   zb::latency::LinearFit fit = zb::latency::FitLine(workers, averages);
//   if (fit.valid) printf("%.2f us per added worker\n", fit.slope);
//
// Pure functions, no state; thread-compatible.

#ifndef TOOLS_LATENCY_STATS_H_
#define TOOLS_LATENCY_STATS_H_

#include <cstdint>
#include <span>

namespace zb::latency {

// A step's latencies in microseconds.  All zero when there were no samples.
struct LatencySummary {
  std::int64_t count = 0;
  double avg_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

// Summarizes round-trip latencies given in nanoseconds.  Sorts `ns` in place
// (the caller's buffer is reused step after step, so no copy is made).
// Percentiles use the nearest-rank definition: the p-th percentile is the
// smallest sample such that at least p% of the samples are <= it.
LatencySummary Summarize(std::span<std::int64_t> ns);

// The nearest-rank percentile `p` (0 < p <= 100) of sorted samples.
std::int64_t NearestRank(std::span<const std::int64_t> sorted, double p);

// y ~= intercept + slope * x, fitted by ordinary least squares.
struct LinearFit {
  // False when fewer than two distinct x values were given: a line is then
  // not determined, and the other fields are zero.
  bool valid = false;
  double intercept = 0;
  double slope = 0;
  // Coefficient of determination, 1 - SS_res / SS_tot.  1 when every y is
  // equal (the line explains everything there is to explain).
  double r2 = 0;
};

// Fits a line through the points (x[i], y[i]); x and y have the same size.
LinearFit FitLine(std::span<const double> x, std::span<const double> y);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_STATS_H_
