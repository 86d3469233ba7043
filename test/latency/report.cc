// Copyright 2026 The zbrokers Authors.

#include "test/latency/report.h"

#include <limits>

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

const StepResult* MatchingStep(const Series& s, const StepResult& step,
                               Grow grow) {
  for (const StepResult& other : s.steps) {
    if (other.X(grow) == step.X(grow)) return &other;
  }
  return nullptr;
}

}  // namespace zb::latency
