// Copyright 2026 The zbrokers Authors.

#include "tools/latency/report.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace zb::latency {

void Series::Refit(Grow grow) {
  std::vector<double> x, y, y50;
  for (const StepResult& s : steps) {
    if (s.latency.count == 0) continue;  // nothing measured: no point
    x.push_back(s.X(grow));
    y.push_back(s.latency.avg_us);
    y50.push_back(s.latency.p50_us);
  }
  fit = FitLine(x, y);
  fit_p50 = FitLine(x, y50);
}

double Ratio(double a, double b) {
  if (!(b > 0)) return std::numeric_limits<double>::quiet_NaN();
  return a / b;
}

namespace {

// `v` with `digits` decimals; a value that rounds to zero prints as zero,
// never as "-0.00".
std::string Fixed(double v, int digits) {
  if (std::abs(v) < 0.5 * std::pow(10.0, -digits)) v = 0;
  return absl::StrFormat("%.*f", digits, v);
}

}  // namespace

std::string FormatLine(double a, double b, int a_digits, int b_digits,
                       std::string_view unit, std::string_view x) {
  const std::string magnitude = Fixed(std::abs(b), b_digits);
  const bool minus = b < 0 && Fixed(b, b_digits) != magnitude;
  return absl::StrFormat("%s%s %c %s%s%s", Fixed(a, a_digits), unit,
                         minus ? '-' : '+', magnitude, unit, x);
}

std::string PoorFit::Describe(std::string_view r2_name) const {
  std::string why;
  if (low_r2) {
    why = absl::StrFormat("%s = %.3f, below %.1f", r2_name, r2, kPoorFitR2);
  }
  if (negative_intercept) {
    if (!why.empty()) why += ", and ";
    why += absl::StrFormat("intercept %s us, below 0", Fixed(intercept, 1));
  }
  return absl::StrFormat("%s %s fit has %s", series, fit, why);
}

std::vector<PoorFit> PoorFits(const Report& report) {
  std::vector<PoorFit> out;
  auto judge = [&](const Series& s, const LinearFit& f, const char* which) {
    if (!f.valid) return;
    std::size_t points = 0;
    for (const StepResult& st : s.steps) points += st.latency.count > 0;
    PoorFit p{s.name, which, f.r2, f.intercept, false, false};
    p.low_r2 = points >= 3 && f.r2 < kPoorFitR2;
    // Rounding noise around zero is not a negative intercept.
    p.negative_intercept = Fixed(f.intercept, 1).starts_with('-');
    if (p.low_r2 || p.negative_intercept) out.push_back(p);
  };
  for (const Series* s :
       {&report.zbrokers, report.raw ? &*report.raw : nullptr}) {
    if (s == nullptr) continue;
    judge(*s, s->fit, "average");
    judge(*s, s->fit_p50, "p50");
  }
  return out;
}

std::string FitWarning(const Report& report) {
  const std::vector<PoorFit> poor = PoorFits(report);
  if (poor.empty()) return "";
  std::string out = absl::StrFormat(
      "\nWARNING: poor fit, the cost per added %s above is not reliable:\n",
      report.options.grow == Grow::kWorkers ? "worker" : "client");
  for (const PoorFit& p : poor) {
    absl::StrAppendFormat(&out, "  - %s\n", p.Describe("r^2"));
  }
  if (report.options.cpus.empty()) {
    out +=
        "  This run was not pinned: on a VM with several cores, cross-core\n"
        "  wake-ups rather than the broker decide most round trips.  Rerun\n"
        "  with --cpus 0 (one core) or --cpus 0-1 (two cores, pinned).\n";
  } else {
    absl::StrAppendFormat(
        &out,
        "  The run was pinned (--cpus %s): other load on the machine is the\n"
        "  likely cause.  Rerun when it is quiet, with more round trips per\n"
        "  step.\n",
        FormatCpuList(report.options.cpus));
  }
  out += "  docs/latency.md, \"Noisy fits and --cpus\", explains.\n";
  return out;
}

const StepResult* MatchingStep(const Series& s, const StepResult& step,
                               Grow grow) {
  for (const StepResult& other : s.steps) {
    if (other.X(grow) == step.X(grow)) return &other;
  }
  return nullptr;
}

}  // namespace zb::latency
