// Copyright 2026 The zbrokers Authors.
//
// A small, known Report for the output writers' tests.

#ifndef TOOLS_LATENCY_OUTPUT_TEST_UTIL_H_
#define TOOLS_LATENCY_OUTPUT_TEST_UTIL_H_

#include "tools/latency/report.h"

namespace zb::latency {

// Three steps (1, 2, 3 workers) of zbrokers at 30 + 10x us, and, when
// `baseline`, raw at 25 + 8x us.
inline Report SampleReport(bool baseline) {
  Report r;
  r.options.rounds_per_step = 300;
  r.options.max_workers = 3;
  r.broker = "embedded";
  auto series = [](const char* name, double a, double b) {
    Series s;
    s.name = name;
    for (int w = 1; w <= 3; ++w) {
      StepResult st;
      st.workers = w;
      st.clients = 1;
      st.round_trips = 300;
      st.latency.count = 300;
      st.latency.avg_us = a + b * w;
      st.latency.p50_us = st.latency.avg_us - 1;
      st.latency.p99_us = st.latency.avg_us + 20;
      st.latency.max_us = st.latency.avg_us + 100;
      st.elapsed_s = 300 * st.latency.avg_us / 1e6;
      st.throughput_rps = 300 / st.elapsed_s;
      st.cpu_us_per_rt = 2 * st.latency.avg_us;
      s.steps.push_back(st);
    }
    s.Refit(Grow::kWorkers);
    return s;
  };
  r.zbrokers = series("zbrokers", 30, 10);
  if (baseline) {
    r.options.baseline = true;
    r.raw = series("raw", 25, 8);
  }
  return r;
}

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_OUTPUT_TEST_UTIL_H_
