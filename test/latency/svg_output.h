// Copyright 2026 The zbrokers Authors.
//
// zb-latency's --svg output: a self-contained SVG plot of round-trip latency
// against workers (or clients, with --grow clients), readable in a browser:
//
//   - the zbrokers average as a line with a dot per step,
//   - a shaded band from p50 to p99 per step,
//   - the least-squares line through the averages (dashed),
//   - with --baseline, the raw libzmq average and its fitted line,
//   - axes with ticks and labels, a title and a legend.
//
// Written by hand (no plotting library).  Pure function; thread-compatible.

#ifndef ZB_TEST_LATENCY_SVG_OUTPUT_H_
#define ZB_TEST_LATENCY_SVG_OUTPUT_H_

#include <string>
#include <vector>

#include "test/latency/report.h"

namespace zb::latency {

std::string ToSvg(const Report& report);

// "Nice" axis ticks covering [0, max]: multiples of 1, 2 or 5 times a power
// of ten, about `target` of them, starting at 0 and ending at or above max.
// Exposed for tests.
std::vector<double> NiceTicks(double max, int target);

}  // namespace zb::latency

#endif  // ZB_TEST_LATENCY_SVG_OUTPUT_H_
