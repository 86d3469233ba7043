// Copyright 2026 The zbrokers Authors.
//
// zb-latency's --svg output: a self-contained SVG plot of round-trip latency
// against workers (or clients, with --grow clients), readable in a browser
// and by rsvg-convert:
//
//   - per system (zbrokers, and with --baseline the raw libzmq program): the
//     average per step as a thick line with a dot per step, the median (p50)
//     as a thinner line, the 99th percentile as a thin dotted line, and the
//     least-squares lines through the averages and through the medians;
//   - the y axis is scaled to the averages, medians and fits, so a far p99
//     (a busy machine's) is cut at the top of the plot instead of squeezing
//     the lines flat, and the legend says so; the p99 is drawn first, so it
//     never covers the other lines;
//   - integer ticks on the x axis (workers and clients are whole numbers);
//   - the legend below the plot, one column per system, always inside the
//     image (the image grows to fit it);
//   - when a fit is poor (report.h, PoorFits()), a red warning under the
//     title that points to --cpus and docs/latency.md.
//
// Elements a checker may look for: <g id="legend">, <g id="warning">,
// <g id="x-ticks">, <g id="y-ticks">, <rect id="plot-area">.
//
// Written by hand (no plotting library).  Pure functions; thread-compatible.

#ifndef TOOLS_LATENCY_SVG_OUTPUT_H_
#define TOOLS_LATENCY_SVG_OUTPUT_H_

#include <string>
#include <string_view>
#include <vector>

#include "tools/latency/report.h"

namespace zb::latency {

std::string ToSvg(const Report& report);

// "Nice" axis ticks covering [0, max]: multiples of 1, 2 or 5 times a power
// of ten, about `target` of them, starting at 0 and ending at or above max.
// With `integer`, the step is a whole number (at least 1), for axes that
// count things.  Exposed for tests.
std::vector<double> NiceTicks(double max, int target, bool integer = false);

// A generous estimate of the width of `text` (UTF-8) in the plot's
// sans-serif font at `font_size`, used to lay the legend out.  Exposed for
// tests.
double TextWidth(std::string_view text, double font_size);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_SVG_OUTPUT_H_
