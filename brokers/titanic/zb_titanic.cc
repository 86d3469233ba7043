// Copyright 2026 The zbrokers Authors.
//
// zb-titanic: the Titanic service (RFC 9) as a process of its own, in front
// of a Majordomo broker (docs/titanic.md).
//
//   zb-titanic --broker tcp://127.0.0.1:5555 --store-path /var/lib/zb/t.db
//
// SIGTERM or SIGINT stops it; requests in flight stay pending in the store
// and the next start resumes them.  Exit codes: 0 after a signal, 2 on bad
// flags, 1 when it cannot start (store, endpoint).

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/titanic/titanic.h"

namespace {

constexpr const char* kUsage = R"(usage: zb-titanic [flags]
The Titanic service (RFC 9) in front of a Majordomo broker (docs/titanic.md).
  --broker ENDPOINT            the Majordomo broker to serve on and dispatch
                               through [tcp://127.0.0.1:5555]
  --store-path FILE            the SQLite file of requests and replies,
                               created when missing [titanic.db]
  --synchronous full|normal    fsync policy: full = every request and reply
                               fsynced before it is acknowledged; normal =
                               survives kill -9, not power loss [full]
  --max-requests N             most requests stored (pending + answered, not
                               closed) [100000]
  --max-request-bytes N        largest request: service + body [16777216]
  --request-timeout DURATION   one dispatch's wait for its reply [10s]
  --retry-delay DURATION       wait before a failed dispatch is sent again [1s]
  --max-in-flight N            most requests dispatched at once [100]
  --request-expiry DURATION    a request not closed this long after it
                               arrived is deleted, answered or not; 0 =
                               never [24h]
  --heartbeat-interval DURATION  the workers' heartbeat; must match the
                               broker's [2500ms]
  --stats-interval DURATION    how often a stats line is logged; 0 = never
                               [1m]
  --help                       this text
Durations: 250ms, 10s, 1m.  SIGTERM or SIGINT stops; pending requests stay
in the store and are resumed by the next start.
Exit codes: 0 after a signal, 1 when it cannot start, 2 on bad flags.
)";

int Usage(const std::string& what) {
  std::fprintf(stderr, "zb-titanic: %s\n%s", what.c_str(), kUsage);
  return 2;
}

bool ParseMs(const std::string& text, std::chrono::milliseconds* out) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) return false;
  *out = std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
  return true;
}

bool ParseCount(const std::string& text, std::size_t* out) {
  std::uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n < 1) return false;
  *out = static_cast<std::size_t>(n);
  return true;
}

// Fills `options` from argv; 0 on success, else the exit code (2), with
// the reason printed.  Flags are `--name VALUE` or `--name=VALUE`.
int ParseFlags(int argc, char** argv, zb::TitanicOptions* options,
               std::chrono::milliseconds* stats_interval) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    std::string value;
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (flag.rfind("--", 0) == 0 && i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage("missing value for " + flag);
    }
    bool ok = true;
    if (flag == "--broker") {
      options->broker = value;
      ok = !value.empty();
    } else if (flag == "--store-path") {
      options->store_path = value;
      ok = !value.empty();
    } else if (flag == "--synchronous") {
      if (value == "full") {
        options->synchronous = zb::TitanicStoreOptions::Synchronous::kFull;
      } else if (value == "normal") {
        options->synchronous = zb::TitanicStoreOptions::Synchronous::kNormal;
      } else {
        ok = false;
      }
    } else if (flag == "--max-requests") {
      ok = ParseCount(value, &options->max_requests);
    } else if (flag == "--max-request-bytes") {
      ok = ParseCount(value, &options->max_request_bytes);
    } else if (flag == "--max-in-flight") {
      ok = ParseCount(value, &options->max_in_flight);
    } else if (flag == "--request-timeout") {
      ok = ParseMs(value, &options->request_timeout) &&
           options->request_timeout.count() > 0;
    } else if (flag == "--request-expiry") {
      ok = ParseMs(value, &options->request_expiry);
    } else if (flag == "--retry-delay") {
      ok = ParseMs(value, &options->retry_delay);
    } else if (flag == "--heartbeat-interval") {
      ok = ParseMs(value, &options->heartbeat_interval) &&
           options->heartbeat_interval.count() > 0;
    } else if (flag == "--stats-interval") {
      ok = ParseMs(value, stats_interval);
    } else {
      return Usage("unknown flag " + flag);
    }
    if (!ok) return Usage("bad value \"" + value + "\" for " + flag);
  }
  return 0;
}

void LogStats(const char* what, const zb::Titanic& titanic) {
  const zb::Titanic::Stats s = titanic.stats();
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::fprintf(stderr,
               "zb-titanic: %s: accepted=%llu refused_full=%llu "
               "bad_requests=%llu replies_served=%llu replies_pending=%llu "
               "closed=%llu expired=%llu expired_pending=%llu "
               "dispatched=%llu answered=%llu retries=%llu "
               "duplicate_replies=%llu closed_before_answer=%llu "
               "store_errors=%llu stored=%zu pending=%zu in_flight=%zu\n",
               what, u(s.accepted), u(s.refused_full), u(s.bad_requests),
               u(s.replies_served), u(s.replies_pending), u(s.closed),
               u(s.expired), u(s.expired_pending), u(s.dispatched),
               u(s.answered), u(s.retries), u(s.duplicate_replies),
               u(s.closed_before_answer), u(s.store_errors), s.stored,
               s.pending, s.in_flight);
}

}  // namespace

int main(int argc, char** argv) {
  zb::TitanicOptions options;
  std::chrono::milliseconds stats_interval = std::chrono::minutes(1);
  if (int code = ParseFlags(argc, argv, &options, &stats_interval); code != 0) {
    return code;
  }

  // Signals are read from a signalfd on the reactor, so they are blocked
  // before any thread (libzmq's) exists.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const int signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::fprintf(stderr, "zb-titanic: signalfd: %s\n", std::strerror(errno));
    return 1;
  }

  const std::string broker = options.broker;
  const std::string store_path = options.store_path;
  zmq::context_t context;
  zb::Reactor reactor;
  absl::StatusOr<zb::Reactor::SocketWatch> signals =
      reactor.AddFd(signal_fd, [&] {
        signalfd_siginfo info;
        while (read(signal_fd, &info, sizeof info) == sizeof info) {
        }
        reactor.Stop();
      });
  if (!signals.ok()) {
    std::fprintf(stderr, "zb-titanic: %s\n",
                 signals.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<zb::Titanic>> titanic =
      zb::Titanic::Create(reactor, context, std::move(options));
  if (!titanic.ok()) {
    std::fprintf(stderr, "zb-titanic: cannot start: %s\n",
                 titanic.status().ToString().c_str());
    return 1;
  }
  const zb::Titanic::Stats start = (*titanic)->stats();
  std::fprintf(stderr,
               "zb-titanic: serving titanic.request, titanic.reply, "
               "titanic.close on %s; store %s (%zu stored, %zu pending)\n",
               broker.c_str(), store_path.c_str(), start.stored, start.pending);
  zb::Reactor::Timer stats_timer;
  if (stats_interval.count() > 0) {
    absl::StatusOr<zb::Reactor::Timer> t =
        reactor.Every(stats_interval, [&] { LogStats("stats", **titanic); });
    if (t.ok()) stats_timer = *std::move(t);
  }
  if (absl::Status s = reactor.Run(); !s.ok()) {
    std::fprintf(stderr, "zb-titanic: %s\n", s.ToString().c_str());
  }
  LogStats("stopping", **titanic);
  stats_timer.Reset();
  titanic->reset();
  signals->Reset();
  close(signal_fd);
  return 0;
}
