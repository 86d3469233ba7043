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
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/titanic/titanic.h"

ABSL_FLAG(std::string, broker, "tcp://127.0.0.1:5555",
          "the Majordomo broker to serve on and dispatch through");
ABSL_FLAG(std::string, store_path, "titanic.db",
          "the SQLite file of requests and replies (created when missing)");
ABSL_FLAG(std::string, synchronous, "full",
          "fsync policy: full (each request and reply fsynced before it is "
          "acknowledged) or normal (survives kill -9, not power loss)");
ABSL_FLAG(std::int64_t, max_requests, 100000,
          "most requests stored at once (pending + answered, not closed)");
ABSL_FLAG(std::int64_t, max_request_bytes, 16 << 20,
          "largest request: service name plus body frames, in bytes");
ABSL_FLAG(absl::Duration, request_timeout, absl::Seconds(10),
          "how long one dispatch waits for its reply");
ABSL_FLAG(absl::Duration, retry_delay, absl::Seconds(1),
          "wait before a failed or timed-out request is sent again");
ABSL_FLAG(std::int64_t, max_in_flight, 100, "most requests dispatched at once");
ABSL_FLAG(absl::Duration, heartbeat_interval, absl::Milliseconds(2500),
          "the workers' heartbeat; must match the broker's");

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "zb-titanic: %s\n", what.c_str());
  return 2;
}

std::chrono::milliseconds Ms(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the Titanic service (RFC 9) in front of a Majordomo broker\n"
      "  zb-titanic --broker tcp://127.0.0.1:5555 --store-path titanic.db");
  absl::ParseCommandLine(argc, argv);

  zb::TitanicOptions options;
  options.broker = absl::GetFlag(FLAGS_broker);
  options.store_path = absl::GetFlag(FLAGS_store_path);
  const std::string sync = absl::GetFlag(FLAGS_synchronous);
  if (sync == "full") {
    options.synchronous = zb::TitanicStoreOptions::Synchronous::kFull;
  } else if (sync == "normal") {
    options.synchronous = zb::TitanicStoreOptions::Synchronous::kNormal;
  } else {
    return Fail("--synchronous must be full or normal, not \"" + sync + "\"");
  }
  const std::int64_t max_requests = absl::GetFlag(FLAGS_max_requests);
  const std::int64_t max_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  const std::int64_t max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  if (max_requests < 1 || max_bytes < 1 || max_in_flight < 1) {
    return Fail(
        "--max-requests, --max-request-bytes and --max-in-flight must be "
        "at least 1");
  }
  options.max_requests = static_cast<std::size_t>(max_requests);
  options.max_request_bytes = static_cast<std::size_t>(max_bytes);
  options.max_in_flight = static_cast<std::size_t>(max_in_flight);
  options.request_timeout = Ms(absl::GetFlag(FLAGS_request_timeout));
  options.retry_delay = Ms(absl::GetFlag(FLAGS_retry_delay));
  options.heartbeat_interval = Ms(absl::GetFlag(FLAGS_heartbeat_interval));

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
  if (absl::Status s = reactor.Run(); !s.ok()) {
    std::fprintf(stderr, "zb-titanic: %s\n", s.ToString().c_str());
  }
  const zb::Titanic::Stats end = (*titanic)->stats();
  std::fprintf(stderr,
               "zb-titanic: stopping: %llu accepted, %llu answered, %llu "
               "retries, %zu stored, %zu pending\n",
               static_cast<unsigned long long>(end.accepted),
               static_cast<unsigned long long>(end.answered),
               static_cast<unsigned long long>(end.retries), end.stored,
               end.pending);
  titanic->reset();
  signals->Reset();
  close(signal_fd);
  return 0;
}
