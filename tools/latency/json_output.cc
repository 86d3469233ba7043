// Copyright 2026 The zbrokers Authors.

#include "tools/latency/json_output.h"

#include <cmath>
#include <string_view>

#include "absl/strings/str_format.h"
#include "brokers/common/json.h"

namespace zb::latency {
namespace {

// A JSON number, or null for NaN/infinity (JSON has neither).
std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.6g", v);
}

std::string StepJson(const StepResult& s) {
  return absl::StrFormat(
      "{\"workers\": %d, \"clients\": %d, \"round_trips\": %d, "
      "\"avg_us\": %s, \"p50_us\": %s, \"p99_us\": %s, \"max_us\": %s, "
      "\"elapsed_s\": %s, \"failures\": %d, \"throughput_rps\": %s, "
      "\"cpu_us_per_rt\": %s}",
      s.workers, s.clients, s.round_trips, Number(s.latency.avg_us),
      Number(s.latency.p50_us), Number(s.latency.p99_us),
      Number(s.latency.max_us), Number(s.elapsed_s), s.failures,
      Number(s.throughput_rps),
      s.cpu_us_per_rt >= 0 ? Number(s.cpu_us_per_rt) : "null");
}

std::string StepsJson(const Series& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += StepJson(s.steps[i]);
  }
  out += s.steps.empty() ? "]" : "\n  ]";
  return out;
}

std::string FitJson(const LinearFit& f, Grow grow) {
  const double nan = std::nan("");
  return absl::StrFormat(
      "{\"x\": %s, \"intercept_us\": %s, \"slope_us_per_worker\": %s, "
      "\"r2\": %s}",
      JsonQuote(GrowName(grow)), Number(f.valid ? f.intercept : nan),
      Number(f.valid ? f.slope : nan), Number(f.valid ? f.r2 : nan));
}

// null without --pin-roles; else the CPU of each role.
std::string RoleCpusJson(const Options& o) {
  if (!o.pin_roles) return "null";
  const Options::RoleCpus r = o.PinnedRoleCpus();
  return absl::StrFormat("{\"broker\": %d, \"workers\": %d, \"clients\": %d}",
                         r.broker, r.workers, r.clients);
}

}  // namespace

std::string ToJson(const Report& r) {
  const Options& o = r.options;
  const Grow grow = o.grow;
  std::string out = "{\n  \"config\": {";
  absl::StrAppendFormat(
      &out,
      "\"rounds_per_step\": %d, \"warmup\": %d, \"max_workers\": %d, "
      "\"step\": %d, \"grow\": %s, \"workers\": %d, \"max_clients\": %d, "
      "\"transport\": %s, \"placement\": %s, \"payload_bytes\": %d, "
      "\"evict_cache_bytes\": %d, "
      "\"client_wait\": %s, \"timeout_ms\": %d, \"broker\": %s, "
      "\"baseline\": %s, \"raw_only\": %s, \"cpus\": %s, "
      "\"role_cpus\": %s, \"yield_before_sleep\": %s, "
      "\"batch_scheduling\": %s},\n",
      o.rounds_per_step, o.EffectiveWarmup(), o.max_workers, o.step,
      JsonQuote(GrowName(grow)), o.workers, o.max_clients,
      JsonQuote(TransportName(o.transport)),
      JsonQuote(PlacementName(o.placement)), o.payload_bytes,
      o.evict_cache_bytes, JsonQuote(ClientWaitName(o.client_wait)),
      o.timeout.count(), JsonQuote(r.broker), o.baseline ? "true" : "false",
      o.raw_only ? "true" : "false",
      o.cpus.empty() ? std::string("null") : JsonQuote(FormatCpuList(o.cpus)),
      RoleCpusJson(o), o.YieldBeforeSleep() ? "true" : "false",
      o.batch_scheduling ? "true" : "false");
  absl::StrAppendFormat(&out, "  \"steps\": %s,\n", StepsJson(r.zbrokers));
  absl::StrAppendFormat(&out, "  \"fit\": %s,\n  \"fit_p50\": %s",
                        FitJson(r.zbrokers.fit, grow),
                        FitJson(r.zbrokers.fit_p50, grow));
  if (r.raw) {
    const Series& raw = *r.raw;
    // The baseline's steps print one level deeper; the indentation is only
    // cosmetic.
    absl::StrAppendFormat(&out,
                          ",\n  \"baseline\": {\"steps\": %s,\n  \"fit\": "
                          "%s,\n  \"fit_p50\": %s}",
                          StepsJson(raw), FitJson(raw.fit, grow),
                          FitJson(raw.fit_p50, grow));
    out += ",\n  \"ratio\": {\"steps\": [";
    bool first = true;
    for (const StepResult& s : r.zbrokers.steps) {
      const StepResult* b = MatchingStep(raw, s, grow);
      if (b == nullptr) continue;
      absl::StrAppendFormat(
          &out,
          "%s\n    {\"workers\": %d, \"clients\": %d, \"avg\": %s, "
          "\"p50\": %s, \"p99\": %s}",
          first ? "" : ",", s.workers, s.clients,
          Number(Ratio(s.latency.avg_us, b->latency.avg_us)),
          Number(Ratio(s.latency.p50_us, b->latency.p50_us)),
          Number(Ratio(s.latency.p99_us, b->latency.p99_us)));
      first = false;
    }
    const double nan = std::nan("");
    const bool fits = r.zbrokers.fit.valid && raw.fit.valid;
    const double first_ratio =
        !r.zbrokers.steps.empty() && !raw.steps.empty()
            ? Ratio(r.zbrokers.steps.front().latency.avg_us,
                    raw.steps.front().latency.avg_us)
            : nan;
    const bool fits50 = r.zbrokers.fit_p50.valid && raw.fit_p50.valid;
    absl::StrAppendFormat(
        &out,
        "%s],\n    \"slope\": %s, \"intercept\": %s, \"first_step_avg\": %s, "
        "\"slope_p50\": %s}",
        first ? "" : "\n  ",
        Number(fits ? Ratio(r.zbrokers.fit.slope, raw.fit.slope) : nan),
        Number(fits ? Ratio(r.zbrokers.fit.intercept, raw.fit.intercept) : nan),
        Number(first_ratio),
        Number(fits50 ? Ratio(r.zbrokers.fit_p50.slope, raw.fit_p50.slope)
                      : nan));
  }
  // The poor fits (report.h), as the console's warning lists them.
  out += ",\n  \"warnings\": [";
  const std::vector<PoorFit> poor = PoorFits(r);
  for (std::size_t i = 0; i < poor.size(); ++i) {
    absl::StrAppendFormat(&out, "%s%s", i == 0 ? "" : ", ",
                          JsonQuote(poor[i].Describe("r^2")));
  }
  out += "]\n}\n";
  return out;
}

}  // namespace zb::latency
