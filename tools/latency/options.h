// Copyright 2026 The zbrokers Authors.
//
// Command-line options of zb-latency, the per-worker latency test, and their
// parser.  Parsing is by hand rather than with absl flags so that every bad
// option gets one clear sentence and the documented exit code 2 (absl flags
// exits with 1 and prints its own usage).
//
//   absl::StatusOr<zb::latency::Options> o =
//       zb::latency::ParseOptions({argv + 1, argv + argc});
//   if (!o.ok()) { fprintf(stderr, "%s\n", o.status().message()...); exit(2); }
//   if (o->help) { fputs(zb::latency::HelpText().c_str(), stdout); exit(0); }
//
// Thread-compatible value types and pure functions.

#ifndef TOOLS_LATENCY_OPTIONS_H_
#define TOOLS_LATENCY_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace zb::latency {

enum class Grow { kWorkers, kClients };
enum class Transport { kTcp, kIpc, kInproc };
enum class Placement { kThreads, kProcesses };
// How zbrokers' client waits for each reply (the raw client always makes a
// blocking zmq_recv): kCall uses ConsensusClient::Call(), a blocking
// receive on the client's socket; kReactor uses Request() and
// Reactor::RunOnce(), as a client that shares its reactor with other work.
enum class ClientWait { kCall, kReactor };

std::string_view GrowName(Grow g);
std::string_view TransportName(Transport t);
std::string_view PlacementName(Placement p);
std::string_view ClientWaitName(ClientWait w);

// The most workers a run may have (--max-workers, --workers).  Every
// zbrokers worker has a heartbeat timer on the one shared worker reactor,
// and every worker costs the test three file descriptors over tcp or ipc;
// 1024 stays well within both (docs/latency.md, "Many workers").
inline constexpr int kMaxWorkersLimit = 1024;

// The default --max-workers: chosen so that a default run (tcp, threads,
// 10,000 round trips per step, no baseline) takes a few minutes at most on
// a 2-core machine (225 s on a loaded one).  docs/latency.md quotes the
// measurements.
inline constexpr int kDefaultMaxWorkers = 16;

struct Options {
  // Measured round trips per step (all clients together).
  std::int64_t rounds_per_step = 10000;
  // Warm-up round trips per client before each step; not counted.  -1 picks
  // rounds_per_step / 20 clamped to [50, 1000].
  std::int64_t warmup = -1;
  // --grow workers: workers 1, 1 + step, 1 + 2 * step, ... <= max_workers.
  int max_workers = kDefaultMaxWorkers;
  int step = 1;
  Grow grow = Grow::kWorkers;
  // --grow clients: clients 1, 1 + step, ... <= max_clients, against a fixed
  // number of workers.
  int max_clients = 8;
  int workers = 1;
  Transport transport = Transport::kTcp;
  // True when --transport was given (it must then agree with --broker).
  bool transport_given = false;
  Placement placement = Placement::kThreads;
  int payload_bytes = 16;
  // --evict-cache: the bytes each client writes before each measured round
  // trip to evict the CPU caches (cache_evictor.h); 0: off.
  std::int64_t evict_cache_bytes = 0;
  ClientWait client_wait = ClientWait::kCall;
  // A running zb-broker to use instead of the embedded one; empty: embedded.
  std::string broker;
  std::string csv_path;
  std::string json_path;
  std::string svg_path;
  bool baseline = false;
  // The control run (--raw-only --baseline): two identical programs
  // measured as zbrokers and raw are, so their ratios show what this
  // machine's noise alone does to a ratio (docs/latency.md, "The control
  // run").  Its series are named "raw-a" and "raw-b".
  bool IsControl() const { return raw_only && baseline; }
  // Whether zbrokers' reactors yield before sleeping in this run.
  bool YieldBeforeSleep() const {
    return yield_before_sleep.value_or(transport == Transport::kInproc);
  }
  // --raw-only: run only the raw libzmq program (for profiling it alone);
  // its steps then take the place of zbrokers' in every output.  With
  // --baseline too: the control run, the raw program against a second copy
  // of itself (IsControl()).
  bool raw_only = false;
  // --timeout: how long one round trip may take; a slower one counts as a
  // failure (the glossary's `timeout`, as `zb --timeout`).
  std::chrono::milliseconds timeout{5000};
  // --cpus LIST: the CPUs the whole test (every thread, every child
  // process) is pinned to, ascending and without duplicates; empty: not
  // pinned.  `cpus_text` is the list as given, for the output.
  std::vector<int> cpus;
  std::string cpus_text;
  // --pin-roles: each role's threads on one CPU of `cpus` (RoleCpus()),
  // so that both systems of a --baseline run get the same placement
  // instead of whatever the scheduler picks for each (docs/latency.md,
  // "Pinning each role").
  bool pin_roles = false;
  // --yield-before-sleep on|off|auto: Reactor::Options::yield_before_sleep
  // of every zbrokers reactor of the test (broker, workers, client).
  // nullopt (auto, the default): what docs/reactor.md advises, on over
  // inproc, where the producers are threads of the same process, and off
  // over tcp and ipc.  YieldBeforeSleep() is the value in effect.
  std::optional<bool> yield_before_sleep;
  // --batch-scheduling on|off: Reactor::Options::batch_scheduling of the
  // embedded broker's reactor; on by default, as in zb-broker, for which
  // the embedded broker stands.  The workers and the client are the
  // library's users and keep its default (off); the raw program never
  // changes its threads' policy.
  bool batch_scheduling = true;
  bool help = false;
  // Deprecated spellings the arguments used, one sentence each (e.g.
  // "--timeout-ms is deprecated, use --timeout (docs/glossary.md)"), for
  // the caller to print as warnings; the run goes on.
  std::vector<std::string> warnings;

  // The CPU of each role under --pin-roles: the broker on the first CPU
  // of `cpus`, the workers on the next, the clients on the one after,
  // wrapping around (0,1: broker 0, workers 1, clients 0).  All -1 (not
  // pinned apart from `cpus`) without --pin-roles.
  struct RoleCpus {
    int broker = -1;
    int workers = -1;
    int clients = -1;
  };
  RoleCpus PinnedRoleCpus() const;
  // The largest worker and client counts of the run.
  int MostWorkers() const;
  int MostClients() const;
  // The warm-up actually used per client (resolves -1).
  std::int64_t EffectiveWarmup() const;
  // The x values of the steps: worker counts (--grow workers) or client
  // counts (--grow clients).
  std::vector<int> StepSizes() const;
};

// Parses the arguments after the program name.  Accepts "--name=value" and
// "--name value".  Fails with InvalidArgument and a message meant for the
// user (unknown option, missing or malformed value, value out of range,
// conflicting options, a deprecated spelling that disagrees with its new
// name).  The deprecated --timeout-ms N (milliseconds) still sets
// `timeout` and adds a line to `warnings`.  Does not touch the file system:
// whether output files can be written is checked by the caller when it opens
// them.
absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args);

// Parses a CPU list as taskset -c and /proc's Cpus_allowed_list write it:
// comma-separated CPU numbers and lo-hi ranges ("0", "0,1", "0-3,6").
// Returns the CPUs ascending, without duplicates.  CPUs above 1023
// (CPU_SETSIZE) are refused.
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text);

// The inverse: "0-3,6" for {0, 1, 2, 3, 6}.
std::string FormatCpuList(const std::vector<int>& cpus);

// The --help text.
std::string HelpText();

// How long a step's clients may probe for registration without one more of
// the expected workers answering: 10 s, or --timeout when that is longer
// (a single probe may take up to --timeout, e.g. under valgrind).
std::chrono::milliseconds RegistrationBound(const Options& o);

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_OPTIONS_H_
