// Copyright 2026 The zbrokers Authors.
//
// zb::DaemonAuth is zb-broker's CURVE side (docs/security.md): the ZAP
// handler that checks every CURVE client against the allowlist, the reload
// of that list on SIGHUP, and the counting and logging of refused
// handshakes.
//
//   // Daemon::Create(), before any CURVE endpoint is bound:
//   absl::StatusOr<std::unique_ptr<zb::DaemonAuth>> auth =
//       zb::DaemonAuth::Create(context, config, std::move(files), log,
//                             metrics);
//   // Each broker's reactor thread: a HandshakeMonitor on the broker's
//   // ROUTER reports to (*auth)->OnHandshakeFailure("majordomo", f).
//   // The control thread, on SIGHUP (a Daemon::ReloadHandler):
//   (*auth)->Reload(reloaded_config);
//
// Threads.  The ZAP handler runs on a reactor thread of its own (the "auth"
// thread), not on a broker's: libzmq holds every CURVE handshake of both
// brokers until the handler answers, so it must never wait behind a busy
// broker, and a flood of handshakes must not delay the brokers' traffic nor
// the control thread's signals and drain.  The allowlist is used only on
// that thread; Reload() reads the files on the calling thread and hands
// the new list over with one invoke().  OnHandshakeFailure() and the ZAP
// decisions may come from several threads: counters are prometheus-cpp's
// (thread-safe) and the log rate limit takes a mutex.
//
// Lifetime.  Start it before the first CURVE listener is bound and destroy
// it after the last is closed: a CURVE handshake that finds no handler
// fails (ZMQ_ZAP_ENFORCE_DOMAIN) -- or, on a libzmq without that option,
// would pass unauthenticated.
//
// Metrics (labels: broker = the ZAP domain / the broker's kind):
//   zb_auth_failures_total{broker,reason}  handshakes refused, by
//       HandshakeMonitor reason (key_not_allowed, decrypt_failed,
//       mechanism_mismatch, protocol_error, other)
//   zb_auth_allowed_total{broker}          CURVE clients let in
//   zb_curve_allowlist_keys                keys in the allowlist now

#ifndef ZB_BROKERS_DAEMON_AUTH_H_
#define ZB_BROKERS_DAEMON_AUTH_H_

#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brokers/daemon/config.h"
#include "brokers/daemon/metrics.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/security/handshake_monitor.h"
#include "zbrokers/security/zap_handler.h"

namespace prometheus {
class Counter;
class Gauge;
}  // namespace prometheus

namespace zb {

// At most `burst` lines per `window`; the first line after a suppressed
// stretch says how many were left out.  Thread-safe.
class LogRateLimiter {
 public:
  explicit LogRateLimiter(
      int burst = 5, std::chrono::milliseconds window = std::chrono::seconds(1))
      : burst_(burst), window_(window) {}

  // True when a line may be logged now; `suppressed` receives how many lines
  // were refused since the last allowed one.
  bool Allow(std::uint64_t* suppressed);

 private:
  const int burst_;
  const std::chrono::milliseconds window_;
  std::mutex mu_;  // guards the three below
  std::chrono::steady_clock::time_point window_start_;
  int in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

class DaemonAuth {
 public:
  // Starts the auth thread and binds the ZAP handler on `context`, serving
  // the ZAP domains `brokers` ("majordomo", "consensus") with
  // `files.allowlist`.  Logs the server's public key and the allowlist size
  // (and the warning of files.secret_key_warning).  `log` and `metrics` must
  // outlive the object.
  static absl::StatusOr<std::unique_ptr<DaemonAuth>> Create(
      zmq::context_t& context, const DaemonConfig& config,
      std::vector<std::string> brokers, const CurveFiles& files,
      std::shared_ptr<spdlog::logger> log, Metrics& metrics);

  // Stops the ZAP handler and its thread.
  ~DaemonAuth();

  DaemonAuth(const DaemonAuth&) = delete;
  DaemonAuth& operator=(const DaemonAuth&) = delete;

  // Reads `config`'s daemon.curve_allowlist (the path may have changed)
  // and, when it parses, lets exactly its keys in from the next handshake
  // on (connections already up stay up).  On an error the previous list
  // stays and the error says so (the caller logs it); a success is logged
  // here.  Any thread but the auth thread.
  absl::Status Reload(const DaemonConfig& config);

  // A handshake refused by `broker`'s ROUTER: counted, and logged
  // rate-limited (key_not_allowed is logged by the ZAP handler instead,
  // which knows the key and the peer's address).  Any thread.
  void OnHandshakeFailure(std::string_view broker,
                          const HandshakeMonitor::Failure& failure);

  // The inproc endpoint `broker`'s socket monitor publishes to.
  static std::string MonitorEndpoint(std::string_view broker);

  // Keys in the allowlist now.
  std::size_t allowlist_size() const;

 private:
  DaemonAuth(std::shared_ptr<spdlog::logger> log, Metrics& metrics);
  void OnDecision(const ZapHandler::Decision& d);
  prometheus::Counter& FailureCounter(std::string_view broker,
                                      std::string_view reason);

  struct Families;

  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<Families> families_;
  std::vector<std::string> brokers_;
  LogRateLimiter limiter_;

  // Reload() is serialized; `current_` is the list the handler has.
  mutable std::mutex reload_mu_;
  std::shared_ptr<const CurveAllowlist> current_;  // guarded by reload_mu_

  prometheus::Gauge* allowlist_keys_ = nullptr;
  std::unique_ptr<ReactorThread> thread_;
  std::unique_ptr<ZapHandler> zap_;  // lives on thread_
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_AUTH_H_
