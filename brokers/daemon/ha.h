// Copyright 2026 The zbrokers Authors.
//
// zb::DaemonHa is zb-broker's half of a fail-over pair (the [ha] table,
// docs/ha.md): one zb::BinaryStarNode (zbrokers/ha/node.h) on a reactor
// thread of its own, whose gate every broker of the daemon asks before it
// serves a client, whose lines go to the daemon's log prefixed "ha: ", and
// whose state and counters are published as metrics:
//
//   zb_ha_state{state="primary"|"backup"|"active"|"passive"}  gauge, 1 for
//                                               the current state, else 0
//   zb_ha_failovers_total       counter  times this broker went PASSIVE ->
//                                        ACTIVE
//   zb_ha_split_brain_total     counter  times both brokers were active
//   zb_ha_role_conflicts_total  counter  peer messages announcing our role
//   zb_ha_malformed_total       counter  peer messages that did not parse
// The requests a passive broker drops are each broker's own counter,
// zb_events_total{event="requests_refused_passive"}.  The gate is asked
// only about clients from outside the process: the daemon's own Titanic
// reaches the Majordomo broker on its internal endpoint, never gated, so
// its traffic can never make a passive daemon take over
// (zb_events_total{broker="majordomo",event="requests_internal"}).
//
//   absl::StatusOr<std::unique_ptr<zb::DaemonHa>> ha =
//       zb::DaemonHa::Create(context, config.ha, *log, metrics);
//   runtime->SetRequestGate((*ha)->Gate());   // for each broker
//
// Threading.  Create() and the destructor on one thread (the daemon's
// main thread); Gate()'s functions, state() and StatusLine() on any
// thread.  Every gate must be gone (its broker destroyed) before the
// DaemonHa is.

#ifndef ZB_BROKERS_DAEMON_HA_H_
#define ZB_BROKERS_DAEMON_HA_H_

#include <spdlog/logger.h>

#include <memory>
#include <string>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "brokers/daemon/config.h"
#include "brokers/daemon/metrics.h"
#include "zbrokers/ha/node.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {

class DaemonHa {
 public:
  // Starts the node: binds ha.state_endpoint (an error names it), connects
  // to ha.peer_state_endpoint, registers the metrics.
  static absl::StatusOr<std::unique_ptr<DaemonHa>> Create(
      zmq::context_t& context, const HaSettings& settings, spdlog::logger& log,
      Metrics& metrics);
  ~DaemonHa();

  DaemonHa(const DaemonHa&) = delete;
  DaemonHa& operator=(const DaemonHa&) = delete;

  // A request gate for one broker (set_request_gate()).
  absl::AnyInvocable<bool()> Gate();
  HaState state() const { return node_->state(); }
  HaRole role() const { return node_->role(); }
  // The state endpoint as bound.
  const std::string& state_endpoint() const { return node_->state_endpoint(); }
  // "ha: stats role=primary state=active failovers=0 ..." (the periodic
  // stats line, and what /healthz adds).
  std::string StatusLine() const;

 private:
  struct Gauges;
  DaemonHa(spdlog::logger& log, Metrics& metrics);
  // Publishes the node's state and counters (on the ha thread).
  void Publish();

  spdlog::logger& log_;
  std::unique_ptr<Gauges> gauges_;
  std::unique_ptr<ReactorThread> thread_;
  // Created and destroyed on thread_.
  std::unique_ptr<BinaryStarNode> node_;
  Reactor::Timer refresh_;
};

}  // namespace zb

#endif  // ZB_BROKERS_DAEMON_HA_H_
