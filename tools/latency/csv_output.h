// Copyright 2026 The zbrokers Authors.
//
// zb-latency's --csv output: one row per step and system, with a header row.
//
//   system,workers,clients,round_trips,avg_us,p50_us,p99_us,max_us,
//   elapsed_s,failures,throughput_rps,cpu_us_per_rt
//   zbrokers,1,1,10000,45.210,44.000,60.120,230.000,0.452,0,22119.0,80.10
//   raw,1,1,10000,41.020,...
//
// `system` is "zbrokers" or "raw" (--baseline); cpu_us_per_rt is empty when
// unknown.  Latencies are microseconds.  Pure function; thread-compatible.

#ifndef TOOLS_LATENCY_CSV_OUTPUT_H_
#define TOOLS_LATENCY_CSV_OUTPUT_H_

#include <string>

#include "tools/latency/report.h"

namespace zb::latency {

std::string ToCsv(const Report& report);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_CSV_OUTPUT_H_
