// Copyright 2026 The zbrokers Authors.

#include "tools/latency/csv_output.h"

#include "absl/strings/str_format.h"

namespace zb::latency {
namespace {

void AppendRows(const Series& s, std::string* out) {
  for (const StepResult& st : s.steps) {
    // The series name is one of our own identifiers (no comma or quote), so
    // no CSV quoting is needed.
    absl::StrAppendFormat(out, "%s,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%d,%.1f,",
                          s.name, st.workers, st.clients, st.round_trips,
                          st.latency.avg_us, st.latency.p50_us,
                          st.latency.p99_us, st.latency.max_us, st.elapsed_s,
                          st.failures, st.throughput_rps);
    if (st.cpu_us_per_rt >= 0) {
      absl::StrAppendFormat(out, "%.2f", st.cpu_us_per_rt);
    }
    out->push_back('\n');
  }
}

}  // namespace

std::string ToCsv(const Report& report) {
  std::string out =
      "system,workers,clients,round_trips,avg_us,p50_us,p99_us,max_us,"
      "elapsed_s,failures,throughput_rps,cpu_us_per_rt\n";
  AppendRows(report.zbrokers, &out);
  if (report.raw) AppendRows(*report.raw, &out);
  return out;
}

}  // namespace zb::latency
