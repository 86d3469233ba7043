// Copyright 2026 The zbrokers Authors.
//
// zb-latency's --json output.  The key names are an interface: tools read
// them, so they do not change.
//
//   {
//     "config": {"rounds_per_step": 10000, "max_workers": 30, "step": 1,
//                "grow": "workers", "transport": "tcp", ...},
//     "steps": [{"workers": 1, "clients": 1, "round_trips": 10000,
//                "avg_us": 45.2, "p50_us": 44.0, "p99_us": 60.1,
//                "max_us": 230.0, "elapsed_s": 0.45, "failures": 0,
//                "throughput_rps": 22119.0, "cpu_us_per_rt": 80.1}, ...],
//     "fit": {"x": "workers", "intercept_us": 30.1,
//             "slope_us_per_worker": 14.9, "r2": 0.998},
//     "fit_p50": {...the same keys, fitted through the medians...},
//     // only with --baseline:
//     "baseline": {"steps": [...same keys...], "fit": {...same keys...},
//                  "fit_p50": {...}},
//     "ratio": {"steps": [{"workers": 1, "clients": 1, "avg": 1.08,
//                          "p50": 1.07, "p99": 1.10}, ...],
//               "slope": 1.04, "intercept": 1.09, "first_step_avg": 1.08,
//               "slope_p50": 1.03}
//   }
//
// "fit" is fitted against workers (--grow workers) or clients (--grow
// clients), named by "x"; slope_us_per_worker keeps its name in both modes.
// A value that does not exist (a fit through fewer than two steps, a ratio
// over zero, an unknown cpu_us_per_rt) is null.  Pure function;
// thread-compatible.

#ifndef TOOLS_LATENCY_JSON_OUTPUT_H_
#define TOOLS_LATENCY_JSON_OUTPUT_H_

#include <string>

#include "tools/latency/report.h"

namespace zb::latency {

std::string ToJson(const Report& report);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_JSON_OUTPUT_H_
