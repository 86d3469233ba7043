// Copyright 2026 The zbrokers Authors.
//
// zb::BrokerRuntime is the one interface through which the daemon runs a
// broker, whatever its protocol: bind endpoints, watch their handshakes,
// drain with a grace period, take a snapshot of the counters, list the
// bound endpoints.  One adapter per broker implements it
// (majordomo_runtime.cc, consensus_runtime.cc); the daemon (daemon.cc) never
// asks which protocol it is talking to.
//
//   // On the broker's own reactor thread:
//   absl::StatusOr<std::unique_ptr<zb::BrokerRuntime>> rt =
//       zb::MajordomoRuntime::Create({reactor, context, *log, metrics},
//                                    config.majordomo);
//   if (!rt.ok()) ...
//   if (absl::Status s = (*rt)->Bind("tcp://127.0.0.1:5555", {}); !s.ok()) ...
//   (*rt)->Drain(grace, [] { /* posted once, when drained */ });
//
// Names.  name() ("majordomo", "consensus", "titanic") is the prefix of the
// broker's log lines, the broker= label of its metrics, its ZAP domain and the
// name of its handshake monitor; it is fixed per adapter.
//
// Threading.  A runtime is created, used and destroyed on the reactor
// thread it was given, like the broker it wraps; the daemon reaches it
// through that reactor only.  Destroying it destroys the broker (which
// unregisters from the reactor and posts a pending drain's `done`).

#ifndef ZB_BROKERS_DAEMON_BROKER_RUNTIME_H_
#define ZB_BROKERS_DAEMON_BROKER_RUNTIME_H_

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "brokers/daemon/config.h"
#include "brokers/daemon/metrics.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

class BrokerRuntime {
 public:
  virtual ~BrokerRuntime() = default;

  // "majordomo", "consensus" or "titanic" (see "Names").
  virtual std::string_view name() const = 0;

  // Binds one more endpoint with `security` (plaintext or CURVE).  The
  // error names the endpoint.
  virtual absl::Status Bind(const std::string& endpoint,
                            const ListenerSecurity& security) = 0;
  // Binds an in-process endpoint for the daemon's own peers (Titanic),
  // whose client requests are never put to the request gate
  // (MajordomoBroker::BindInternal()).  Only the Majordomo broker has
  // them; the default fails with FailedPrecondition.
  virtual absl::Status BindInternal(const std::string& endpoint) {
    return absl::FailedPreconditionError(
        std::string(name()) + ": has no internal endpoint: " + endpoint);
  }
  // Publishes the ROUTER's socket events `events` on the inproc endpoint
  // `monitor_endpoint` (for a zb::HandshakeMonitor).
  virtual absl::Status Monitor(const std::string& monitor_endpoint,
                               int events) = 0;
  // The broker's Drain(grace, done): no new requests; open ones may finish
  // for up to `grace`, then fail with the protocol's shutdown reason;
  // `done` is posted to the reactor exactly once, never called inside.
  virtual void Drain(std::chrono::milliseconds grace,
                     absl::AnyInvocable<void()> done) = 0;
  // The counters and gauges now, in the broker-neutral form metrics.h
  // publishes.  Allocates; for the periodic refresh, not the hot path.
  virtual BrokerSnapshot Snapshot() const = 0;
  // Every endpoint bound so far, resolved (ZMQ_LAST_ENDPOINT), in Bind()
  // order.
  virtual const std::vector<std::string>& endpoints() const = 0;
  // The broker's set_request_gate(): the fail-over pair's gate (ha.h),
  // asked before each client request from outside the process is served
  // (not for BindInternal()'s peers).  A runtime that takes no clients of
  // its own (Titanic, whose clients come through the Majordomo broker,
  // gated there) keeps the default, which drops the gate.
  virtual void SetRequestGate(absl::AnyInvocable<bool()> /*gate*/) {}
};

// What an adapter needs to build its broker.  Everything must outlive the
// runtime.
struct BrokerEnvironment {
  Reactor& reactor;  // the broker's own reactor (its thread calls Create)
  zmq::context_t& context;
  spdlog::logger& log;     // the broker's lines, prefixed "NAME: "
  BrokerMetrics& metrics;  // request latencies are observed here
};

// The adapters.  Create() builds the broker from its section of the
// configuration, not bound yet; it fails with the broker's own Create()
// error (e.g. InvalidArgument for an option out of range).
class MajordomoRuntime {
 public:
  static constexpr std::string_view kName = "majordomo";
  static absl::StatusOr<std::unique_ptr<BrokerRuntime>> Create(
      const BrokerEnvironment& env, const MajordomoSettings& settings);
};

class ConsensusRuntime {
 public:
  static constexpr std::string_view kName = "consensus";
  static absl::StatusOr<std::unique_ptr<BrokerRuntime>> Create(
      const BrokerEnvironment& env, const ConsensusSettings& settings);
};

// Titanic (RFC 9) in front of the daemon's Majordomo broker, reached at
// `broker` (an endpoint that broker bound for it) with that broker's
// `heartbeat_interval`.  It binds nothing (Bind() and Monitor() fail with
// FailedPrecondition, endpoints() is empty); Drain() posts `done` at once,
// as what is in flight stays pending in the store for the next start.  Its
// own metrics are zb_titanic_* (Snapshot()'s gauges and counters).
class TitanicRuntime {
 public:
  static constexpr std::string_view kName = "titanic";
  static absl::StatusOr<std::unique_ptr<BrokerRuntime>> Create(
      const BrokerEnvironment& env, const TitanicSettings& settings,
      const std::string& broker, std::chrono::milliseconds heartbeat_interval);
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_BROKER_RUNTIME_H_
