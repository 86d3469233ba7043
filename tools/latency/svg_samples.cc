// Copyright 2026 The zbrokers Authors.
//
// latency_svg_samples DIR: writes zb-latency plots of known shape into DIR
// for check_svg.py, which renders them with rsvg-convert and checks the
// pixels.  The reports are synthetic, so every case (a noisy machine's far
// p99 and poor fits included) is reproducible.

#include <cmath>
#include <cstdio>
#include <string>

#include "tools/latency/report.h"
#include "tools/latency/svg_output.h"

namespace zb::latency {
namespace {

// `n` steps at x = first, first + step, ...; avg = a + b x + wobble(x).
Series Make(const char* name, Grow grow, int first, int step, int n, double a,
            double b, double wobble, double p99_factor) {
  Series s;
  s.name = name;
  for (int i = 0; i < n; ++i) {
    const int x = first + i * step;
    StepResult st;
    st.workers = grow == Grow::kWorkers ? x : 1;
    st.clients = grow == Grow::kClients ? x : 1;
    st.round_trips = 1000;
    st.latency.count = 1000;
    st.latency.avg_us = a + b * x + wobble * std::sin(1.7 * i);
    st.latency.p50_us = 0.9 * st.latency.avg_us;
    st.latency.p99_us = p99_factor * st.latency.avg_us;
    st.latency.max_us = 2 * st.latency.p99_us;
    s.steps.push_back(st);
  }
  s.Refit(grow);
  return s;
}

bool Write(const std::string& dir, const char* name, const Report& r) {
  const std::string path = dir + "/" + name + ".svg";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const std::string svg = ToSvg(r);
  const bool ok = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  return std::fclose(f) == 0 && ok;
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: latency_svg_samples DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;

  Report clean;
  clean.options.baseline = true;
  clean.options.rounds_per_step = 10000;
  clean.zbrokers = Make("zbrokers", Grow::kWorkers, 1, 1, 16, 50, 20, 0, 1.6);
  clean.raw = Make("raw", Grow::kWorkers, 1, 1, 16, 47, 19, 0, 1.6);
  ok = Write(dir, "clean", clean) && ok;

  // A loaded, unpinned two-core VM: averages all over the place, p99 50x.
  Report noisy = clean;
  noisy.zbrokers = Make("zbrokers", Grow::kWorkers, 1, 1, 8, 300, 5, 200, 50);
  noisy.raw = Make("raw", Grow::kWorkers, 1, 1, 8, 280, 8, 250, 60);
  ok = Write(dir, "noisy", noisy) && ok;

  // --grow clients with two client counts (the old plot ticked at 0.5).
  Report clients;
  clients.options.grow = Grow::kClients;
  clients.options.max_clients = 2;
  clients.zbrokers = Make("zbrokers", Grow::kClients, 1, 1, 3, 80, 30, 40, 3);
  ok = Write(dir, "clients", clients) && ok;

  // Latency falling with workers: a negative slope and a poor fit.
  Report negative = clean;
  negative.zbrokers =
      Make("zbrokers", Grow::kWorkers, 1, 1, 6, 306.3, -28.86, 30, 2);
  negative.raw = Make("raw", Grow::kWorkers, 1, 1, 6, 290, -25, 30, 2);
  ok = Write(dir, "negative", negative) && ok;

  // 1..256 workers in steps of 32, five-digit latencies: the longest
  // legend texts.
  Report many = clean;
  many.options.max_workers = 256;
  many.options.step = 32;
  many.zbrokers =
      Make("zbrokers", Grow::kWorkers, 1, 32, 9, 12345.6, 123.45, 0, 1.5);
  many.raw = Make("raw", Grow::kWorkers, 1, 32, 9, 11111.1, 120.5, 0, 1.5);
  ok = Write(dir, "many", many) && ok;

  // A poor fit in a pinned run.
  Report pinned = noisy;
  pinned.options.cpus = {0};
  pinned.options.cpus_text = "0";
  ok = Write(dir, "pinned", pinned) && ok;

  if (!ok)
    std::fprintf(stderr, "latency_svg_samples: cannot write %s\n", argv[1]);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace zb::latency

int main(int argc, char** argv) { return zb::latency::Main(argc, argv); }
