// Copyright 2026 The zbrokers Authors.

#include "tools/latency/options.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace zb::latency {

std::string_view GrowName(Grow g) {
  return g == Grow::kWorkers ? "workers" : "clients";
}

std::string_view TransportName(Transport t) {
  switch (t) {
    case Transport::kTcp:
      return "tcp";
    case Transport::kIpc:
      return "ipc";
    case Transport::kInproc:
      return "inproc";
  }
  return "?";
}

std::string_view PlacementName(Placement p) {
  return p == Placement::kThreads ? "threads" : "processes";
}

std::string_view ClientWaitName(ClientWait w) {
  return w == ClientWait::kCall ? "call" : "reactor";
}

std::int64_t Options::EffectiveWarmup() const {
  if (warmup >= 0) return warmup;
  return std::clamp<std::int64_t>(rounds_per_step / 20, 50, 1000);
}

int Options::MostWorkers() const {
  return grow == Grow::kWorkers ? StepSizes().back() : workers;
}

int Options::MostClients() const {
  return grow == Grow::kClients ? StepSizes().back() : 1;
}

std::vector<int> Options::StepSizes() const {
  const int max = grow == Grow::kWorkers ? max_workers : max_clients;
  std::vector<int> sizes;
  for (int n = 1; n <= max; n += step) sizes.push_back(n);
  return sizes;
}

namespace {

absl::Status Bad(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

// Parses a whole decimal integer in [lo, hi].
absl::Status ParseInt(std::string_view flag, std::string_view text,
                      std::int64_t lo, std::int64_t hi, std::int64_t* out) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Bad(
        absl::StrFormat("%s needs a whole number, got '%s'", flag, text));
  }
  if (v < lo || v > hi) {
    return Bad(absl::StrFormat("%s must be between %d and %d, got %d", flag, lo,
                               hi, v));
  }
  *out = v;
  return absl::OkStatus();
}

template <typename T>
absl::Status ParseIntTo(std::string_view flag, std::string_view text,
                        std::int64_t lo, std::int64_t hi, T* out) {
  std::int64_t v = 0;
  if (absl::Status s = ParseInt(flag, text, lo, hi, &v); !s.ok()) return s;
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

// A size in bytes: a whole number, or one with a K, M or G suffix (KiB,
// MiB, GiB: "8M" is 8,388,608), in [0, hi].
absl::Status ParseBytesTo(std::string_view flag, std::string_view text,
                          std::int64_t hi, std::int64_t* out) {
  std::int64_t unit = 1;
  std::string_view digits = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        unit = std::int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        unit = std::int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        unit = std::int64_t{1} << 30;
        break;
      default:
        break;
    }
    if (unit != 1) digits.remove_suffix(1);
  }
  std::int64_t v = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  if (digits.empty() || ec != std::errc() || ptr != end || v < 0) {
    return Bad(absl::StrFormat(
        "%s needs a size in bytes such as 8388608 or 8M, got '%s'", flag,
        text));
  }
  if (v > hi / unit) {
    return Bad(absl::StrFormat("%s must be at most %d bytes, got '%s'", flag,
                               hi, text));
  }
  *out = v * unit;
  return absl::OkStatus();
}

// A duration with a unit, as zb and zb-broker take them ("250ms", "5s",
// "1m30s"), of at least 1 ms.  A bare number is refused: it is most likely
// the milliseconds of the old --timeout-ms, and guessing its unit would
// turn 5000 into 5000 s.
absl::Status ParseDurationTo(std::string_view flag, std::string_view text,
                             std::chrono::milliseconds* out) {
  absl::Duration d;
  if (!text.empty() &&
      absl::ascii_isdigit(static_cast<unsigned char>(text.back()))) {
    return Bad(absl::StrFormat(
        "%s needs a duration with a unit such as 500ms or 5s, got '%s' (for "
        "milliseconds write %sms)",
        flag, text, text));
  }
  if (!absl::ParseDuration(std::string(text), &d) ||
      d == absl::InfiniteDuration() || d < absl::Milliseconds(1)) {
    return Bad(absl::StrFormat(
        "%s needs a duration of at least 1ms such as 500ms or 5s, got '%s'",
        flag, text));
  }
  *out = std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
  return absl::OkStatus();
}

// An option with two spellings: `first` or `second` (as `a` and `b`).
template <typename T>
absl::Status ParseEitherTo(std::string_view flag, std::string_view text,
                           std::string_view first, T a, std::string_view second,
                           T b, T* out) {
  if (text == first) {
    *out = a;
  } else if (text == second) {
    *out = b;
  } else {
    return Bad(absl::StrFormat("%s must be '%s' or '%s', got '%s'", flag, first,
                               second, text));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text) {
  constexpr int kMaxCpu = 1023;  // CPU_SETSIZE - 1
  auto bad = [&](std::string_view why) {
    return Bad(absl::StrFormat(
        "--cpus needs CPU numbers and ranges such as 0, 0,1 or 0-3 (%s), got "
        "'%s'",
        why, text));
  };
  auto number = [&](std::string_view t, int* out) -> bool {
    const char* end = t.data() + t.size();
    auto [ptr, ec] = std::from_chars(t.data(), end, *out);
    return !t.empty() && ec == std::errc() && ptr == end;
  };
  std::vector<int> cpus;
  if (text.empty()) return bad("empty list");
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    int lo = 0, hi = 0;
    if (const std::size_t dash = item.find('-');
        dash != std::string_view::npos) {
      if (!number(item.substr(0, dash), &lo) ||
          !number(item.substr(dash + 1), &hi)) {
        return bad(absl::StrFormat("'%s' is not a range", item));
      }
      if (lo > hi) {
        return bad(absl::StrFormat("range '%s' runs backwards", item));
      }
    } else {
      if (!number(item, &lo)) {
        return bad(absl::StrFormat("'%s' is not a CPU number", item));
      }
      hi = lo;
    }
    if (hi > kMaxCpu) {
      return bad(absl::StrFormat("CPU numbers go up to %d", kMaxCpu));
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    start = comma + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? absl::StrFormat("%d", cpus[i])
                  : absl::StrFormat("%d-%d", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args) {
  Options o;
  bool max_workers_given = false;
  bool workers_given = false;
  bool max_clients_given = false;
  // --timeout and its deprecated spelling --timeout-ms, when given.
  std::optional<std::chrono::milliseconds> timeout, timeout_ms;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      continue;
    }
    if (!arg.starts_with("--")) {
      return Bad(absl::StrFormat(
          "unexpected argument '%s' (options start with --; see --help)", arg));
    }
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    if (name == "--baseline" || name == "--raw-only" || name == "--pin-roles") {
      if (inline_value) {
        return Bad(
            absl::StrFormat("%s takes no value (write just %s)", name, name));
      }
      (name == "--baseline"   ? o.baseline
       : name == "--raw-only" ? o.raw_only
                              : o.pin_roles) = true;
      continue;
    }
    // Every other option takes a value, inline or as the next argument.
    auto value = [&]() -> absl::StatusOr<std::string_view> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) {
        return Bad(absl::StrFormat("%s needs a value (see --help)", name));
      }
      return std::string_view(args[++i]);
    };
    constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
    absl::Status st;
    if (name == "--rounds-per-step") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 1, 1'000'000'000, &o.rounds_per_step);
    } else if (name == "--warmup") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 0, 1'000'000'000, &o.warmup);
    } else if (name == "--max-workers") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 1, kMaxWorkersLimit, &o.max_workers);
      max_workers_given = true;
    } else if (name == "--step") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 1, 10000, &o.step);
    } else if (name == "--grow") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseEitherTo(name, *v, "workers", Grow::kWorkers, "clients",
                         Grow::kClients, &o.grow);
    } else if (name == "--max-clients") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 1, 1000, &o.max_clients);
      max_clients_given = true;
    } else if (name == "--workers") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 1, kMaxWorkersLimit, &o.workers);
      workers_given = true;
    } else if (name == "--transport") {
      auto v = value();
      if (!v.ok()) return v.status();
      if (*v == "tcp") {
        o.transport = Transport::kTcp;
      } else if (*v == "ipc") {
        o.transport = Transport::kIpc;
      } else if (*v == "inproc") {
        o.transport = Transport::kInproc;
      } else {
        return Bad(absl::StrFormat(
            "unknown transport '%s' (use tcp, ipc or inproc)", *v));
      }
      o.transport_given = true;
    } else if (name == "--placement") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseEitherTo(name, *v, "threads", Placement::kThreads, "processes",
                         Placement::kProcesses, &o.placement);
    } else if (name == "--client-wait") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseEitherTo(name, *v, "call", ClientWait::kCall, "reactor",
                         ClientWait::kReactor, &o.client_wait);
    } else if (name == "--payload-bytes") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseIntTo(name, *v, 0, 64 * 1024 * 1024, &o.payload_bytes);
    } else if (name == "--evict-cache") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseBytesTo(name, *v, std::int64_t{1} << 30, &o.evict_cache_bytes);
    } else if (name == "--timeout") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseDurationTo(name, *v, &timeout.emplace());
    } else if (name == "--timeout-ms") {
      auto v = value();
      if (!v.ok()) return v.status();
      std::int64_t ms = 0;
      st = ParseIntTo(name, *v, 1, kMaxInt, &ms);
      timeout_ms = std::chrono::milliseconds(ms);
    } else if (name == "--cpus") {
      auto v = value();
      if (!v.ok()) return v.status();
      absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*v);
      if (!cpus.ok()) return cpus.status();
      o.cpus = *std::move(cpus);
      o.cpus_text = std::string(*v);
    } else if (name == "--yield-before-sleep") {
      auto v = value();
      if (!v.ok()) return v.status();
      if (*v == "auto") {
        o.yield_before_sleep.reset();
      } else {
        bool on = false;
        st = ParseEitherTo(name, *v, "on", true, "off", false, &on);
        if (st.ok()) {
          o.yield_before_sleep = on;
        } else {
          st = Bad(absl::StrFormat(
              "--yield-before-sleep must be 'on', 'off' or 'auto', got '%s'",
              *v));
        }
      }
    } else if (name == "--batch-scheduling") {
      auto v = value();
      if (!v.ok()) return v.status();
      st = ParseEitherTo(name, *v, "on", true, "off", false,
                         &o.batch_scheduling);
    } else if (name == "--broker") {
      auto v = value();
      if (!v.ok()) return v.status();
      o.broker = std::string(*v);
    } else if (name == "--csv" || name == "--json" || name == "--svg") {
      auto v = value();
      if (!v.ok()) return v.status();
      if (v->empty()) return Bad(absl::StrFormat("%s needs a file name", name));
      std::string& path = name == "--csv"    ? o.csv_path
                          : name == "--json" ? o.json_path
                                             : o.svg_path;
      path = std::string(*v);
    } else {
      return Bad(absl::StrFormat("unknown option '%s' (see --help)", name));
    }
    if (!st.ok()) return st;
  }
  if (o.help) return o;

  // Cross-option rules.
  if (timeout_ms) {
    o.warnings.push_back(
        "--timeout-ms is deprecated, use --timeout (docs/glossary.md)");
    if (timeout && *timeout != *timeout_ms) {
      return Bad(absl::StrFormat(
          "--timeout %dms and its deprecated spelling --timeout-ms %d "
          "disagree; give only --timeout",
          timeout->count(), timeout_ms->count()));
    }
    o.timeout = *timeout_ms;
  }
  if (timeout) o.timeout = *timeout;
  if (!o.broker.empty()) {
    Transport t;
    if (o.broker.starts_with("tcp://")) {
      t = Transport::kTcp;
    } else if (o.broker.starts_with("ipc://")) {
      t = Transport::kIpc;
    } else {
      return Bad(absl::StrFormat(
          "--broker needs a tcp:// or ipc:// endpoint of a running zb-broker, "
          "got '%s'",
          o.broker));
    }
    if (o.transport_given && o.transport != t) {
      return Bad(absl::StrFormat(
          "--transport %s contradicts --broker %s (the broker's endpoint "
          "decides the transport)",
          TransportName(o.transport), o.broker));
    }
    o.transport = t;
  }
  if (o.placement == Placement::kProcesses &&
      o.transport == Transport::kInproc) {
    return Bad(
        "--transport inproc cannot cross processes; use tcp or ipc with "
        "--placement processes");
  }
  if (o.pin_roles && o.cpus.empty()) {
    return Bad(
        "--pin-roles places the roles on the CPUs of --cpus; give --cpus "
        "too (e.g. --cpus 0-1 --pin-roles)");
  }
  if (o.raw_only && !o.broker.empty()) {
    return Bad(
        "--raw-only runs the raw program and its own broker: it excludes "
        "--broker");
  }
  if (o.grow == Grow::kWorkers && (workers_given || max_clients_given)) {
    return Bad(
        "--workers and --max-clients apply to --grow clients; with --grow "
        "workers use --max-workers");
  }
  if (o.grow == Grow::kClients && max_workers_given) {
    return Bad(
        "--max-workers applies to --grow workers; with --grow clients the "
        "worker count is fixed by --workers");
  }
  return o;
}

std::string HelpText() {
  return absl::StrFormat(
      R"(zb-latency: the per-worker latency test of zbrokers.

One client sends CCp100 consensus requests, one after another, through a
consensus broker; every request is answered by every worker of the service.
Each step adds workers and measures the round-trip latency; at the end a
least-squares line latency ~= a + b * workers gives b, the cost of one more
worker.

Usage: zb-latency [options]

  --rounds-per-step N  measured round trips per step, all clients together
                       (default 10000)
  --warmup N           round trips per client before each step, not counted
                       (default rounds-per-step/20, between 50 and 1000)
  --max-workers N      --grow workers: last step's worker count (default %d)
  --step N             workers (or clients) added per step (default 1);
                       steps are 1, 1+N, 1+2N, ... up to the maximum
  --grow workers|clients
                       workers (default): one client, more workers per step.
                       clients: a fixed number of workers (--workers), one
                       more concurrently requesting client per step (up to
                       --max-clients); reports per-client latency and total
                       throughput
  --workers N          --grow clients: the fixed worker count (default 1)
  --max-clients N      --grow clients: last step's client count (default 8)
  --transport tcp|ipc|inproc
                       how client, broker and workers connect (default tcp,
                       on 127.0.0.1 with an ephemeral port)
  --placement threads|processes
                       threads (default): broker, workers and client are
                       threads of this process.  processes: each is a
                       separate process started by the test (not inproc)
  --payload-bytes N    request payload size; every worker echoes it
                       (default 16)
  --evict-cache SIZE   each client writes a buffer of SIZE bytes (e.g. 8M,
                       larger than the CPU's caches) before each round
                       trip, outside the timed part, so that no step
                       starts with the last round trip's state in the
                       caches (docs/latency.md, "Cold caches").  Default
                       0: off
  --client-wait call|reactor
                       how the zbrokers client waits for each reply.  call
                       (default): ConsensusClient::Call(), a blocking
                       receive on the client's own socket, as a sequential
                       client would.  reactor: Request() and
                       Reactor::RunOnce(), as a client whose reactor also
                       serves other sockets and timers
  --timeout DURATION   a round trip slower than this is a failure, e.g.
                       500ms, 5s (default 5s; --timeout-ms N, milliseconds,
                       is its deprecated spelling)
  --cpus LIST          pin the whole test (every thread, and the child
                       processes of --placement processes) to these CPUs,
                       e.g. 0, 0,1 or 0-1.  On a small VM an unpinned run
                       mostly measures cross-core wake-ups (see
                       docs/latency.md, "Noisy fits and --cpus")
  --pin-roles          with --cpus: pin each role's threads to one of
                       those CPUs, the broker to the first, the workers to
                       the next, the clients to the one after, wrapping
                       around (--cpus 0-1: broker 0, workers 1, clients 0),
                       so that both systems get the same placement
                       (docs/latency.md, "Pinning each role")
  --yield-before-sleep on|off|auto
                       whether zbrokers' reactors yield the CPU once before
                       sleeping after work (docs/reactor.md, "Yield before
                       sleep").  auto (the default) does what that section
                       advises: on over inproc, off over tcp and ipc
  --batch-scheduling on|off
                       whether the embedded broker's reactor thread runs as
                       a SCHED_BATCH thread, whose wake-ups do not preempt
                       the workers on its core (default on, as in
                       zb-broker; docs/reactor.md, "Batch scheduling").
                       The workers and the client keep the library's
                       default (off)
  --broker ENDPOINT    use a running zb-broker (tcp:// or ipc://) instead of
                       the embedded broker
  --csv FILE           write the steps as CSV
  --json FILE          write config, steps and fit as JSON
  --svg FILE           write a plot of latency against workers as SVG
  --baseline           also run the hand-written libzmq program that does
                       the same fan-out (tools/latency/raw_consensus.cc),
                       interleaved step by step, and print zbrokers/raw
                       ratios per step and for the fit
  --raw-only           run only the raw libzmq program (to profile it alone).
                       With --baseline: the control run, the raw program
                       against a second copy of itself (lines raw-a and
                       raw-b); its ratios show how far two identical
                       programs differ on this machine
  -h, --help           this text

Output: one line per step (system, workers, clients, round trips, average,
p50, p99 and max latency in microseconds, elapsed seconds, failures,
throughput, CPU microseconds per round trip), then the fit.  Failures must
be 0; the exit code is 1 when they are not, 2 for a bad option.
)",
      kDefaultMaxWorkers);
}

Options::RoleCpus Options::PinnedRoleCpus() const {
  RoleCpus r;
  if (!pin_roles || cpus.empty()) return r;
  const auto nth = [this](std::size_t i) { return cpus[i % cpus.size()]; };
  r.broker = nth(0);
  r.workers = nth(1);
  r.clients = nth(2);
  return r;
}

std::chrono::milliseconds RegistrationBound(const Options& o) {
  return std::max(std::chrono::milliseconds(10000), o.timeout);
}

}  // namespace zb::latency
