// Copyright 2026 The zbrokers Authors.

#include "tools/latency/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace zb::latency {

std::int64_t NearestRank(std::span<const std::int64_t> sorted, double p) {
  if (sorted.empty()) return 0;
  // rank = ceil(p/100 * n), 1-based; clamp so that p -> 0 still picks the
  // smallest sample and rounding never walks off the end.
  const double n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

LatencySummary Summarize(std::span<std::int64_t> ns) {
  LatencySummary s;
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  // Sum in integers: 10^4 samples of at most seconds each stay far below
  // 2^63 ns, and integer sums do not depend on the order of addition.
  std::int64_t sum = 0;
  for (std::int64_t v : ns) sum += v;
  s.count = static_cast<std::int64_t>(ns.size());
  s.avg_us = static_cast<double>(sum) / static_cast<double>(ns.size()) / 1e3;
  s.p50_us = static_cast<double>(NearestRank(ns, 50)) / 1e3;
  s.p99_us = static_cast<double>(NearestRank(ns, 99)) / 1e3;
  s.max_us = static_cast<double>(ns.back()) / 1e3;
  return s;
}

LinearFit FitLine(std::span<const double> x, std::span<const double> y) {
  LinearFit fit;
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return fit;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  // Centred sums keep the arithmetic well conditioned.
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx <= 0) return fit;  // all x equal: no line through them
  fit.valid = true;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  double ss_res = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = y[i] - (fit.intercept + fit.slope * x[i]);
    ss_res += e * e;
  }
  fit.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
  return fit;
}

}  // namespace zb::latency
