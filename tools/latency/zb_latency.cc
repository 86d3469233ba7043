// Copyright 2026 The zbrokers Authors.
//
// zb-latency: the per-worker latency test.  One client sends CCp100
// consensus requests one after another through a consensus broker; each
// step adds workers (every request is answered by all of them) and prints
// the round-trip latency for that worker count; at the end, the
// least-squares line latency ~= a + b * workers, b being the cost of one
// more worker.  `zb-latency --help` lists the options; docs/latency.md
// explains the test and how to read it.

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/latency/chunk_plan.h"
#include "tools/latency/client_runner.h"
#include "tools/latency/csv_output.h"
#include "tools/latency/deployment.h"
#include "tools/latency/json_output.h"
#include "tools/latency/options.h"
#include "tools/latency/report.h"
#include "tools/latency/stats.h"
#include "tools/latency/svg_output.h"

namespace zb::latency {
namespace {

// An output file opened before the run, so that an unwritable path is
// reported at once (exit code 2) rather than after minutes of measuring.
// Written once, at the end.  Any file works: a regular file, /dev/stdout,
// /dev/null, a pipe or a terminal.
class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile() {
    if (f_ != nullptr) std::fclose(f_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool Open(const std::string& flag, const std::string& path) {
    if (path.empty()) return true;
    path_ = path;
    f_ = std::fopen(path.c_str(), "w");
    if (f_ == nullptr) {
      std::fprintf(stderr, "zb-latency: cannot write %s %s: %s\n", flag.c_str(),
                   path.c_str(), std::strerror(errno));
      return false;
    }
    return true;
  }
  // Writes `content` and flushes it.  (An earlier version rewound and
  // truncated the file to replace what a previous call wrote, which fails
  // with EINVAL on anything but a regular file.)
  bool Write(const std::string& content) {
    if (f_ == nullptr) return true;
    errno = 0;
    const bool ok =
        std::fwrite(content.data(), 1, content.size(), f_) == content.size() &&
        std::fflush(f_) == 0;
    if (!ok) {
      std::fprintf(stderr, "zb-latency: writing %s failed: %s\n", path_.c_str(),
                   std::strerror(errno != 0 ? errno : EIO));
    }
    return ok;
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

struct System {
  Impl impl;
  std::unique_ptr<Deployment> deployment;
  Series* series;
};

constexpr const char* kHeader =
    "%-9s %7s %7s %11s %9s %9s %9s %9s %9s %8s %9s %9s\n";

void PrintHeader() {
  std::printf(kHeader, "system", "workers", "clients", "round-trips", "avg-us",
              "p50-us", "p99-us", "max-us", "elapsed-s", "failures", "rt/s",
              "cpu-us/rt");
}

void PrintStep(const std::string& name, const StepResult& s) {
  std::printf(
      "%-9s %7d %7d %11lld %9.2f %9.2f %9.2f %9.2f %9.3f %8lld %9.0f "
      "%9s\n",
      name.c_str(), s.workers, s.clients, static_cast<long long>(s.round_trips),
      s.latency.avg_us, s.latency.p50_us, s.latency.p99_us, s.latency.max_us,
      s.elapsed_s, static_cast<long long>(s.failures), s.throughput_rps,
      s.cpu_us_per_rt >= 0 ? absl::StrFormat("%.2f", s.cpu_us_per_rt).c_str()
                           : "n/a");
}

std::string R(double v) {
  return std::isfinite(v) ? absl::StrFormat("%.3f", v) : std::string("n/a");
}

void PrintRatio(const StepResult& zb, const StepResult& raw) {
  std::printf("%-9s %7d %7d %11s %9s %9s %9s %9s %9s %8s %9s %9s\n", "ratio",
              zb.workers, zb.clients, "",
              R(Ratio(zb.latency.avg_us, raw.latency.avg_us)).c_str(),
              R(Ratio(zb.latency.p50_us, raw.latency.p50_us)).c_str(),
              R(Ratio(zb.latency.p99_us, raw.latency.p99_us)).c_str(),
              R(Ratio(zb.latency.max_us, raw.latency.max_us)).c_str(), "", "",
              R(Ratio(zb.throughput_rps, raw.throughput_rps)).c_str(),
              zb.cpu_us_per_rt >= 0 && raw.cpu_us_per_rt >= 0
                  ? R(Ratio(zb.cpu_us_per_rt, raw.cpu_us_per_rt)).c_str()
                  : "");
}

void PrintFit(const Series& s, Grow grow) {
  const char* x = grow == Grow::kWorkers ? "worker" : "client";
  if (!s.fit.valid) {
    std::printf("fit %-9s needs at least two steps\n", (s.name + ":").c_str());
    return;
  }
  const std::string per = absl::StrFormat(" x %ss", x);
  std::printf(
      "fit %-9s latency = %s, r^2 = %.4f; cost per added %s: %.2f us\n",
      (s.name + ":").c_str(),
      FormatLine(s.fit.intercept, s.fit.slope, 2, 2, " us", per).c_str(),
      s.fit.r2, x, s.fit.slope);
  std::printf("    (medians: p50 = %s, r^2 = %.4f)\n",
              FormatLine(s.fit_p50.intercept, s.fit_p50.slope, 2, 2, " us", per)
                  .c_str(),
              s.fit_p50.r2);
}

// The file descriptors a run needs, generously: over tcp and ipc every
// worker and every client is a socket (its mailbox eventfd) and a
// connection with a descriptor at each end; over inproc only the socket.
// Each system also has a broker, contexts with I/O threads, a few eventfds.
rlim_t FdsNeeded(const Options& o) {
  const rlim_t per_peer = o.transport == Transport::kInproc ? 1 : 3;
  const rlim_t peers = static_cast<rlim_t>(o.MostWorkers() + o.MostClients());
  const rlim_t systems = o.baseline ? 2 : 1;
  return systems * (per_peer * peers + 64) + 64;
}

// Raises the soft RLIMIT_NOFILE (1024 on most systems, too few for a few
// hundred workers over tcp) towards the hard limit when the run needs more.
// Child processes inherit it.  False, with a message, when even the hard
// limit is too low.
bool RaiseFdLimit(const Options& o) {
  const rlim_t needed = FdsNeeded(o);
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return true;  // try anyway
  // RLIM_INFINITY is the largest rlim_t: no special case needed.
  if (lim.rlim_cur >= needed) return true;
  if (lim.rlim_max < needed) {
    std::fprintf(stderr,
                 "zb-latency: %d workers and %d client(s)%s over %s need about "
                 "%llu file descriptors, but this process may open at most "
                 "%llu (ulimit -Hn); raise the limit or use fewer workers\n",
                 o.MostWorkers(), o.MostClients(),
                 o.baseline ? " with --baseline" : "",
                 std::string(TransportName(o.transport)).c_str(),
                 static_cast<unsigned long long>(needed),
                 static_cast<unsigned long long>(lim.rlim_max));
    return false;
  }
  lim.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    std::fprintf(stderr,
                 "zb-latency: cannot raise the open file limit to %llu: %s\n",
                 static_cast<unsigned long long>(needed), std::strerror(errno));
    return false;
  }
  return true;
}

// The CPUs this process may run on.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Pins the calling thread to `cpus`.  Called while it is the process's only
// thread: every thread and child process started later inherits the mask,
// so the whole test (threads, libzmq's I/O threads, --placement processes'
// children) runs there.
bool PinToCpus(const Options& o) {
  const std::vector<int> allowed = AllowedCpus();
  std::vector<int> missing;
  for (int c : o.cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) {
      missing.push_back(c);
    }
  }
  if (!missing.empty()) {
    std::fprintf(stderr,
                 "zb-latency: --cpus %s: CPU %s not available to this "
                 "process (it may use %s)\n",
                 o.cpus_text.c_str(), FormatCpuList(missing).c_str(),
                 FormatCpuList(allowed).c_str());
    return false;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : o.cpus) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "zb-latency: --cpus %s: %s\n", o.cpus_text.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

int Run(const Options& o) {
  if (!o.cpus.empty() && !PinToCpus(o)) return 2;
  if (!RaiseFdLimit(o)) return 2;
  OutputFile csv, json, svg;
  if (!csv.Open("--csv", o.csv_path) || !json.Open("--json", o.json_path) ||
      !svg.Open("--svg", o.svg_path)) {
    return 2;
  }
  const bool tty = ::isatty(STDOUT_FILENO) == 1;

  Report report;
  report.options = o;
  if (o.baseline) {
    report.raw = Series{o.IsControl() ? "raw-b" : "raw", {}, {}, {}};
  }
  report.broker = o.broker.empty() ? "embedded" : o.broker;

  // A service name of our own, so that a shared --broker has no other
  // workers for it.
  const std::string service =
      absl::StrFormat("zb-latency.%d.%08x", ::getpid(), std::random_device{}());
  std::vector<System> systems;
  if (o.raw_only) report.zbrokers.name = o.IsControl() ? "raw-a" : "raw";
  systems.push_back(
      {o.raw_only ? Impl::kRaw : Impl::kZbrokers, nullptr, &report.zbrokers});
  if (o.baseline) systems.push_back({Impl::kRaw, nullptr, &*report.raw});
  for (System& sys : systems) {
    DeployConfig cfg;
    cfg.impl = sys.impl;
    cfg.transport = o.transport;
    // The baseline always runs its own raw broker.
    if (sys.impl == Impl::kZbrokers) cfg.external_broker = o.broker;
    cfg.service = service;
    cfg.payload_bytes = o.payload_bytes;
    cfg.client_uses_reactor = o.client_wait == ClientWait::kReactor;
    cfg.yield_before_sleep = o.YieldBeforeSleep();
    cfg.batch_scheduling = o.batch_scheduling;
    cfg.timeout = o.timeout;
    cfg.role_cpus = o.PinnedRoleCpus();
    // Every worker and client socket, the broker, and a margin for clients
    // being replaced between chunks.
    cfg.max_sockets = o.MostWorkers() + 2 * o.MostClients() + 16;
    auto d = Deploy(o.placement, cfg);
    if (!d.ok()) {
      std::fprintf(stderr, "zb-latency: cannot start the %s system: %s\n",
                   std::string(ImplName(sys.impl)).c_str(),
                   std::string(d.status().message()).c_str());
      return 1;
    }
    sys.deployment = std::move(*d);
  }

  const std::vector<int> sizes = o.StepSizes();
  const std::int64_t warmup = o.EffectiveWarmup();
  const Options::RoleCpus roles = o.PinnedRoleCpus();
  const std::string cpus =
      o.cpus.empty() ? absl::StrFormat("cpus %s (not pinned)",
                                       FormatCpuList(AllowedCpus()))
      : o.pin_roles
          ? absl::StrFormat(
                "cpus %s (pinned; broker %d, workers %d, clients %d)",
                FormatCpuList(o.cpus), roles.broker, roles.workers,
                roles.clients)
          : absl::StrFormat("cpus %s (pinned)", FormatCpuList(o.cpus));
  // Said only when not the default (zb-broker's defaults).
  const bool embedded = o.broker.empty();
  const std::string broker =
      systems[0].deployment->endpoint() +
      (o.YieldBeforeSleep() ? ", yield before sleep on" : "") +
      (embedded && !o.batch_scheduling ? ", batch scheduling off" : "") +
      (o.IsControl() ? ", control run: the raw program against itself" : "");
  // What both growth modes print after the sizes.
  const std::string evict =
      o.evict_cache_bytes > 0
          ? absl::StrFormat(", caches evicted before each round trip (%d B)",
                            o.evict_cache_bytes)
          : "";
  const std::string setup = absl::StrFormat(
      "payload %d B%s, client wait %s, %s, %s, %s, broker %s", o.payload_bytes,
      evict, ClientWaitName(o.client_wait), TransportName(o.transport),
      PlacementName(o.placement), cpus, broker);
  if (o.grow == Grow::kWorkers) {
    std::printf(
        "# zb-latency: 1 client, workers %d..%d (step %d), %lld round trips "
        "per step (+%lld warm-up), %s\n",
        sizes.front(), sizes.back(), o.step,
        static_cast<long long>(o.rounds_per_step),
        static_cast<long long>(warmup), setup.c_str());
  } else {
    std::printf(
        "# zb-latency: %d worker(s), clients %d..%d (step %d), %lld round "
        "trips per step in all (+%lld warm-up per client), %s\n",
        o.workers, sizes.front(), sizes.back(), o.step,
        static_cast<long long>(o.rounds_per_step),
        static_cast<long long>(warmup), setup.c_str());
  }
  PrintHeader();
  std::fflush(stdout);

  auto write_outputs = [&] {
    report.zbrokers.Refit(o.grow);
    if (report.raw) report.raw->Refit(o.grow);
    // The console lines come first when a file is the console too
    // (--json /dev/stdout).
    std::fflush(stdout);
    bool ok = csv.Write(ToCsv(report));
    ok = json.Write(ToJson(report)) && ok;
    ok = svg.Write(ToSvg(report)) && ok;
    return ok;
  };

  std::int64_t failures = 0;
  if (o.grow == Grow::kClients) {
    for (System& sys : systems) {
      if (absl::Status st = sys.deployment->AddWorkers(o.workers); !st.ok()) {
        std::fprintf(stderr, "zb-latency: cannot start workers: %s\n",
                     std::string(st.message()).c_str());
        return 1;
      }
    }
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int n = sizes[i];
    if (o.grow == Grow::kWorkers) {
      for (System& sys : systems) {
        Deployment& d = *sys.deployment;
        if (absl::Status st = d.AddWorkers(n - d.workers()); !st.ok()) {
          std::fprintf(stderr, "zb-latency: cannot add workers: %s\n",
                       std::string(st.message()).c_str());
          write_outputs();
          return 1;
        }
      }
    }
    const int clients = o.grow == Grow::kWorkers ? 1 : n;
    // With --baseline the systems take turns in chunks, after settling
    // (chunk_plan.h says why).
    const ChunkPlan turns(i, systems.size(), o.rounds_per_step);
    // One chunk of system k; nullopt when it failed (said on stderr).
    auto run_chunk = [&](std::size_t k, std::int64_t round_trips,
                         std::int64_t chunk_warmup,
                         std::int64_t before) -> std::optional<StepSamples> {
      System& sys = systems[k];
      StepPlan plan;
      plan.clients = clients;
      plan.expected_workers = sys.deployment->workers();
      plan.register_timeout = RegistrationBound(o);
      plan.round_trips = round_trips;
      plan.warmup = chunk_warmup;
      plan.evict_cache_bytes = o.evict_cache_bytes;
      ProgressFn progress;
      if (tty) {
        progress = [&, name = std::string(ImplName(sys.impl)), before](
                       std::int64_t done, std::int64_t) {
          std::printf("\r  %s: %d workers, %d clients: %lld/%lld round trips",
                      name.c_str(), plan.expected_workers, plan.clients,
                      static_cast<long long>(before + done),
                      static_cast<long long>(o.rounds_per_step));
          std::fflush(stdout);
        };
      }
      absl::StatusOr<StepSamples> samples =
          sys.deployment->RunStep(plan, progress);
      if (tty) {
        std::printf("\r\033[K");
        std::fflush(stdout);
      }
      if (!samples.ok()) {
        std::fprintf(stderr, "zb-latency: %s step with %d workers failed: %s\n",
                     std::string(ImplName(sys.impl)).c_str(),
                     plan.expected_workers,
                     std::string(samples.status().message()).c_str());
        return std::nullopt;
      }
      return *std::move(samples);
    };
    if (turns.settles()) {
      const auto settle_start = std::chrono::steady_clock::now();
      for (std::int64_t pair = 1;; ++pair) {
        for (std::size_t k : turns.SettleOrder(pair)) {
          if (!run_chunk(k, turns.ChunkSize(), 0, 0)) {
            write_outputs();
            return 1;
          }
        }
        if (turns.SettleDone(pair,
                             std::chrono::steady_clock::now() - settle_start)) {
          break;
        }
      }
    }
    std::vector<StepSamples> acc(systems.size());
    for (std::int64_t c = 0; c < turns.measured_chunks(); ++c) {
      for (std::size_t k : turns.MeasuredOrder(c)) {
        StepSamples& total = acc[k];
        // Every chunk starts fresh clients (new connections); after the
        // step's first chunk (or the settling) a short warm-up is enough.
        std::optional<StepSamples> samples = run_chunk(
            k, turns.MeasuredRoundTrips(c),
            c == 0 && !turns.settles() ? warmup
                                       : std::min<std::int64_t>(warmup, 50),
            total.round_trips);
        if (!samples) {
          write_outputs();
          return 1;
        }
        total.latencies_ns.insert(total.latencies_ns.end(),
                                  samples->latencies_ns.begin(),
                                  samples->latencies_ns.end());
        total.round_trips += samples->round_trips;
        total.failures += samples->failures;
        total.elapsed_ns += samples->elapsed_ns;
        total.cpu_ns = samples->cpu_ns < 0 || total.cpu_ns < 0
                           ? -1
                           : total.cpu_ns + samples->cpu_ns;
      }
    }
    for (std::size_t k = 0; k < systems.size(); ++k) {
      StepSamples& samples = acc[k];
      StepResult r;
      r.workers = systems[k].deployment->workers();
      r.clients = clients;
      r.round_trips = samples.round_trips;
      r.failures = samples.failures;
      r.latency = Summarize(samples.latencies_ns);
      r.elapsed_s = static_cast<double>(samples.elapsed_ns) / 1e9;
      r.throughput_rps =
          r.elapsed_s > 0 ? static_cast<double>(r.latency.count) / r.elapsed_s
                          : 0;
      r.cpu_us_per_rt = samples.cpu_ns >= 0 && r.round_trips > 0
                            ? static_cast<double>(samples.cpu_ns) / 1e3 /
                                  static_cast<double>(r.round_trips)
                            : -1;
      failures += r.failures;
      systems[k].series->steps.push_back(r);
    }
    PrintStep(report.zbrokers.name, report.zbrokers.steps.back());
    if (report.raw) {
      PrintStep(report.raw->name, report.raw->steps.back());
      PrintRatio(report.zbrokers.steps.back(), report.raw->steps.back());
    }
    std::fflush(stdout);
  }

  report.zbrokers.Refit(o.grow);
  if (report.raw) report.raw->Refit(o.grow);
  PrintFit(report.zbrokers, o.grow);
  if (report.raw) {
    PrintFit(*report.raw, o.grow);
    const Series& zb = report.zbrokers;
    const Series& raw = *report.raw;
    const double nan = std::nan("");
    std::printf(
        "ratio %s/%s: cost per added %s %s, intercept %s, first step "
        "(%d %s) avg %s\n",
        zb.name.c_str(), raw.name.c_str(),
        o.grow == Grow::kWorkers ? "worker" : "client",
        R(zb.fit.valid && raw.fit.valid ? Ratio(zb.fit.slope, raw.fit.slope)
                                        : nan)
            .c_str(),
        R(zb.fit.valid && raw.fit.valid
              ? Ratio(zb.fit.intercept, raw.fit.intercept)
              : nan)
            .c_str(),
        sizes.front(), o.grow == Grow::kWorkers ? "worker(s)" : "client(s)",
        R(Ratio(zb.steps.front().latency.avg_us,
                raw.steps.front().latency.avg_us))
            .c_str());
    std::printf("    (medians: cost per added %s %s, first step p50 %s)\n",
                o.grow == Grow::kWorkers ? "worker" : "client",
                R(zb.fit_p50.valid && raw.fit_p50.valid
                      ? Ratio(zb.fit_p50.slope, raw.fit_p50.slope)
                      : nan)
                    .c_str(),
                R(Ratio(zb.steps.front().latency.p50_us,
                        raw.steps.front().latency.p50_us))
                    .c_str());
  }
  // A visible warning under the fits when one of them does not describe
  // its steps.
  std::fputs(FitWarning(report).c_str(), stdout);
  const bool written = write_outputs();
  if (failures > 0) {
    std::fprintf(stderr, "zb-latency: %lld round trip(s) failed\n",
                 static_cast<long long>(failures));
    return 1;
  }
  return written ? 0 : 1;
}

}  // namespace
}  // namespace zb::latency

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (zb::latency::IsRole(args)) return zb::latency::RunRole(args);
  absl::StatusOr<zb::latency::Options> o = zb::latency::ParseOptions(args);
  if (!o.ok()) {
    std::fprintf(stderr, "zb-latency: %s\n",
                 std::string(o.status().message()).c_str());
    return 2;
  }
  if (o->help) {
    std::fputs(zb::latency::HelpText().c_str(), stdout);
    return 0;
  }
  for (const std::string& warning : o->warnings) {
    std::fprintf(stderr, "zb-latency: warning: %s\n", warning.c_str());
  }
  // A child process that dies must not take us down with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  return zb::latency::Run(*o);
}
