// Copyright 2026 The zbrokers Authors.
//
// zb::Daemon is the body of zb-broker: it runs the brokers a DaemonConfig
// asks for, logs what they do, publishes their counters, and drains them on
// SIGTERM/SIGINT.
//
//   zb::BlockShutdownSignals();                 // first thing in main()
//   auto log = zb::MakeDaemonLogger(config.log_level);
//   absl::StatusOr<std::unique_ptr<zb::Daemon>> d =
//       zb::Daemon::Create(config, log);
//   if (!d.ok()) { /* log, exit 1 */ }
//   absl::Status s = (*d)->Wait();              // until drained
//
// Threads.  Each broker runs on its own zb::ReactorThread, so a busy or
// misbehaving peer of one broker cannot delay the other; a third reactor
// thread (the "control" reactor) handles signals (through a signalfd),
// coordinates the drain, and is where Shutdown() lands.  Broker objects are
// created, used and destroyed only on their own reactor thread.  One
// zmq::context_t serves all brokers.  The daemon runs every broker through
// one interface, zb::BrokerRuntime (broker_runtime.h: bind, drain, a typed
// snapshot of the counters, endpoints), with one adapter per broker; it
// never asks which protocol a broker speaks.
//
// Counters.  Every second each broker's reactor takes a snapshot of its
// broker's counters and publishes it to the Prometheus registry
// (metrics.h); every stats_interval it also logs one "stats" line.  Nothing
// reads broker state from another thread.
//
// Drain.  On the first SIGTERM/SIGINT (or Shutdown()) every broker's
// Drain(grace, done) runs: no new requests (Majordomo drops them, RFC 7 has
// no error reply; the consensus broker answers REPLY_FAILURE "zb:shutdown"),
// queued and in-flight ones may finish.  When none is left, or after at most
// `grace`, requests still open are failed the same way, and once every
// broker has posted its `done`, Wait() returns OK (Majordomo disconnects
// its workers then; the consensus broker when it is destroyed).  A second
// signal during the drain stops at once.
//
// Reload.  SIGHUP reads the configuration again through the ConfigSource
// given to Create() (zb-broker's runs BuildConfig() on its command line, so
// flags still override the file) and applies what can change while running:
// log_level and log_format, then every ReloadHandler, in the order they were
// added.  Keys that differ but need a restart (endpoints, metrics, tuning)
// are named in a warning.  A configuration that does not load is logged and
// changes nothing.  Reloads run on the control thread, during a drain too.
//
// Signals.  signalfd only sees signals that are blocked in every thread, so
// BlockShutdownSignals() must run before any thread exists (first thing in
// main()).  Without it, Create() still works and Shutdown() drains, but
// SIGTERM/SIGINT/SIGHUP keep their default action.
//
// Thread-safety: Create(), Wait() and the destructor are called from one
// thread; Shutdown() may be called from any thread.

#ifndef ZB_BROKERS_DAEMON_DAEMON_H_
#define ZB_BROKERS_DAEMON_DAEMON_H_

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brokers/daemon/config.h"

namespace zb {

// Blocks SIGTERM, SIGINT, SIGHUP (and ignores SIGPIPE) in the calling
// thread, so that every thread created afterwards inherits the mask and the
// daemon's signalfd receives them.  Idempotent.
void BlockShutdownSignals();

class Daemon {
 public:
  // Reads the configuration again for a SIGHUP reload (see above).  Called on
  // the control thread.
  using ConfigSource = std::function<absl::StatusOr<DaemonConfig>()>;

  // Applies part of a reloaded configuration.  `keys` ("section.key") are
  // the keys it applies, so that a change in them is not reported as
  // needing a restart.  `apply` runs on the control thread after the log
  // settings are applied; an error is logged ("NAME: message") and the
  // other handlers still run.  (The CURVE allowlist reload hooks in here.)
  struct ReloadHandler {
    std::string name;
    std::vector<std::string> keys;
    std::function<absl::Status(const DaemonConfig&)> apply;
  };

  // Builds and binds every configured broker and the metrics endpoint, and
  // logs one "listening on" line per endpoint and a "ready" line.  On any
  // failure (e.g. an endpoint already in use) everything built so far is
  // torn down and the error, naming the broker and endpoint, is returned.
  // `reload` may be empty: SIGHUP is then logged and ignored.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(
      const DaemonConfig& config, std::shared_ptr<spdlog::logger> log,
      ConfigSource reload = nullptr);

  // Stops at once if still running (no drain), and joins every thread.
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Blocks until the daemon has stopped after a drain.  Returns OK after a
  // clean stop, or the first error a reactor reported.
  absl::Status Wait();

  // Starts the drain, as SIGTERM would.  Any thread; idempotent.
  void Shutdown();

  // Adds a handler for SIGHUP reloads.  Any thread.
  void AddReloadHandler(ReloadHandler handler);

  // The resolved endpoints (ZMQ_LAST_ENDPOINT: "tcp://127.0.0.1:*" becomes
  // the real port), plaintext and CURVE.
  const std::vector<std::string>& majordomo_endpoints() const;
  const std::vector<std::string>& consensus_endpoints() const;
  const std::vector<std::string>& majordomo_curve_endpoints() const;
  const std::vector<std::string>& consensus_curve_endpoints() const;
  // The metrics port, 0 when there is no endpoint.
  int metrics_port() const;

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_DAEMON_H_
