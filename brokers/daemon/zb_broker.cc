// Copyright 2026 The zbrokers Authors.
//
// zb-broker: runs zbrokers' brokers as a daemon.
//
//   zb-broker --consensus tcp://127.0.0.1:5556 [--consensus ipc:///tmp/c.sock]
//
// One consensus broker (one ROUTER socket) is bound to every --consensus
// endpoint.  The daemon logs to stderr (start-up, bound endpoints, worker
// joins and leaves, rate-limited malformed-message reports, shutdown) and
// exits 0 after SIGINT or SIGTERM, once open requests have been answered
// with "zb:shutdown" and workers sent DISCONNECT.
//
// Structure: flags -> DaemonFlags -> RunDaemon().  Signals are blocked in
// every thread and read from a signalfd that the reactor watches, so the
// stop happens on the reactor thread like any other event.

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "brokers/consensus/consensus_broker.h"
#include "reactor/reactor.h"

ABSL_FLAG(std::vector<std::string>, consensus, {},
          "Bind the consensus (CCp100) broker to ENDPOINT, e.g. "
          "tcp://127.0.0.1:5556.  Repeatable (or comma-separated) for "
          "several endpoints.");
ABSL_FLAG(absl::Duration, consensus_timeout, absl::Seconds(5),
          "Deadline of a consensus request: after it, the client gets "
          "REPLY_FAILURE zb:timeout.");
ABSL_FLAG(absl::Duration, consensus_client_idle, absl::Minutes(10),
          "Forget a consensus client's sequence record after this long "
          "without requests.");

namespace zb {
namespace {

constexpr char kUsage[] =
    "zb-broker runs zbrokers' ZeroMQ brokers.\n"
    "\n"
    "Usage: zb-broker --consensus ENDPOINT [--consensus ENDPOINT ...] "
    "[options]\n"
    "\n"
    "  --consensus ENDPOINT         bind the consensus (CCp100) broker to\n"
    "                               ENDPOINT (repeatable), e.g.\n"
    "                               tcp://127.0.0.1:5556; tcp://HOST:* picks\n"
    "                               a free port (logged at start-up)\n"
    "  --consensus_timeout DURATION request deadline (default 5s)\n"
    "  --consensus_client_idle DURATION\n"
    "                               forget idle client records (default "
    "10m)\n"
    "  --help                       this text (--helpfull: every flag)\n"
    "\n"
    "Logs go to stderr.  SIGINT or SIGTERM stops the daemon cleanly (exit "
    "0).\n";

// Everything the daemon needs, from the flags.
struct DaemonFlags {
  std::vector<std::string> consensus_endpoints;
  std::chrono::milliseconds consensus_timeout{5000};
  std::chrono::milliseconds consensus_client_idle{std::chrono::minutes(10)};
};

void LogLine(std::string_view line) {
  const std::string now = absl::FormatTime("%Y-%m-%dT%H:%M:%E3S", absl::Now(),
                                           absl::LocalTimeZone());
  std::fprintf(stderr, "%s zb-broker: %.*s\n", now.c_str(),
               static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

// absl flags keep only the last value of a repeated flag, so every
// occurrence of --NAME (forms "--NAME V", "--NAME=V", "-NAME V", "-NAME=V")
// is folded into one "--NAME=V1,V2,..." where the first one was.
std::vector<std::string> FoldRepeatedFlag(int argc, char** argv,
                                          std::string_view name) {
  std::vector<std::string> out;
  std::vector<std::string> values;
  std::size_t slot = 0;
  bool seen = false;
  bool after_dashdash = false;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i == 0 || after_dashdash) {
      out.emplace_back(a);
      continue;
    }
    if (a == "--") {
      after_dashdash = true;
      out.emplace_back(a);
      continue;
    }
    std::string_view flag = a;
    if (flag.starts_with("--")) {
      flag.remove_prefix(2);
    } else if (flag.starts_with("-")) {
      flag.remove_prefix(1);
    } else {
      out.emplace_back(a);
      continue;
    }
    if (!flag.starts_with(name) ||
        (flag.size() > name.size() && flag[name.size()] != '=')) {
      out.emplace_back(a);
      continue;
    }
    if (flag.size() > name.size()) {
      values.emplace_back(flag.substr(name.size() + 1));
    } else if (i + 1 < argc) {
      values.emplace_back(argv[++i]);
    } else {
      out.emplace_back(a);  // no value: let absl report it
      continue;
    }
    if (!seen) {
      seen = true;
      slot = out.size();
      out.emplace_back();
    }
  }
  if (seen)
    out[slot] = "--" + std::string(name) + "=" + absl::StrJoin(values, ",");
  return out;
}

absl::Status RunDaemon(const DaemonFlags& flags) {
  // Block the stop signals before any thread exists (libzmq's I/O threads
  // inherit the mask), then read them from a signalfd on the reactor.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr) != 0) {
    return absl::InternalError("pthread_sigmask failed");
  }
  signal(SIGPIPE, SIG_IGN);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (signal_fd < 0) {
    return absl::InternalError(
        absl::StrFormat("signalfd: %s", std::strerror(errno)));
  }

  absl::Status result = absl::OkStatus();
  {
    zmq::context_t context;
    Reactor reactor;

    ConsensusBroker::Options options;
    options.request_timeout = flags.consensus_timeout;
    options.client_idle_timeout = flags.consensus_client_idle;
    options.log = [](ConsensusBroker::Severity severity,
                     std::string_view line) {
      const char* level =
          severity == ConsensusBroker::Severity::kWarning ? "warning: "
          : severity == ConsensusBroker::Severity::kError ? "error: "
                                                          : "";
      LogLine("consensus: " + std::string(level) + std::string(line));
    };
    auto consensus =
        std::make_unique<ConsensusBroker>(reactor, context, std::move(options));
    for (const std::string& endpoint : flags.consensus_endpoints) {
      if (absl::Status s = consensus->Bind(endpoint); !s.ok()) {
        result = s;
        break;
      }
      LogLine(absl::StrCat("consensus broker listening on ",
                           consensus->endpoints().back()));
    }

    if (result.ok()) {
      result = reactor.add_fd(signal_fd, [&reactor, signal_fd] {
        signalfd_siginfo info;
        if (read(signal_fd, &info, sizeof info) == sizeof info) {
          LogLine(absl::StrFormat("received %s, shutting down",
                                  strsignal(static_cast<int>(info.ssi_signo))));
        }
        reactor.stop();
      });
    }
    if (result.ok()) {
      LogLine("ready");
      result = reactor.run();
      reactor.remove_fd(signal_fd).IgnoreError();
    }

    const ConsensusBroker::Stats stats = consensus->stats();
    consensus.reset();  // answers open requests, DISCONNECTs workers
    LogLine(absl::StrFormat(
        "consensus: %d request(s), %d success, %d failure, %d timeout(s), "
        "%d malformed, %d rejected sequence(s)",
        stats.requests, stats.replies_success, stats.replies_failure,
        stats.timeouts, stats.malformed, stats.rejected_sequence));
  }  // sockets close, then the context terminates
  close(signal_fd);
  return result;
}

}  // namespace
}  // namespace zb

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-help" || a == "-h") {
      std::fputs(zb::kUsage, stdout);
      return 0;
    }
  }
  absl::SetProgramUsageMessage(zb::kUsage);
  std::vector<std::string> folded =
      zb::FoldRepeatedFlag(argc, argv, "consensus");
  std::vector<char*> args;
  for (std::string& a : folded) args.push_back(a.data());
  args.push_back(nullptr);
  const std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(folded.size()), args.data());
  if (positional.size() > 1) {
    std::fprintf(stderr, "zb-broker: unexpected argument '%s' (see --help)\n",
                 positional[1]);
    return 2;
  }

  zb::DaemonFlags flags;
  flags.consensus_endpoints = absl::GetFlag(FLAGS_consensus);
  flags.consensus_timeout =
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_consensus_timeout));
  flags.consensus_client_idle =
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_consensus_client_idle));
  if (flags.consensus_endpoints.empty()) {
    std::fprintf(stderr,
                 "zb-broker: no broker to run: give --consensus ENDPOINT "
                 "(see --help)\n");
    return 2;
  }
  if (flags.consensus_timeout <= std::chrono::milliseconds(0)) {
    std::fprintf(stderr, "zb-broker: --consensus_timeout must be > 0\n");
    return 2;
  }

  const absl::Status status = zb::RunDaemon(flags);
  if (!status.ok()) {
    zb::LogLine(absl::StrCat("error: ", status.message()));
    return 1;
  }
  zb::LogLine("stopped");
  return 0;
}
