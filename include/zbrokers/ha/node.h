// Copyright 2026 The zbrokers Authors.
//
// zb::BinaryStarNode is one broker's half of a fail-over pair: a
// zb::BinaryStar state machine (binary_star.h) fed by the peer link over a
// reactor, and the request gate that the brokers ask before they serve a
// client (MajordomoBroker and ConsensusBroker::set_request_gate()).
//
//   auto node = *zb::BinaryStarNode::Create(reactor, context, {
//       .role = zb::HaRole::kPrimary,
//       .state_endpoint = "tcp://10.0.0.1:5570",        // we bind a PUB here
//       .peer_state_endpoint = "tcp://10.0.0.2:5570",   // the backup's PUB
//       .heartbeat_interval = 1s, .peer_expiry = 2s});
//   broker->set_request_gate([n = node.get()] {
//     return n->AllowClientRequest();
//   });
//
// The peer link.  The node binds a PUB socket on state_endpoint and
// connects a SUB socket (subscribed to everything) to the peer's
// peer_state_endpoint.  It publishes its state (zbrokers/ha/codec.h, ZBHA01)
// every heartbeat_interval, and at once after every change of state, so
// that the peer reacts within one network trip, not one heartbeat.  Each
// message from the peer is fed to the state machine (FeedPeer).  A message
// that does not parse is dropped, counted (Stats::malformed) and logged
// rate-limited; no frame larger than hap::kMaxFrameSize is read at all
// (ZMQ_MAXMSGSIZE).  libzmq 4.3 never reconnects a socket whose peer broke
// the protocol (a frame above ZMQ_MAXMSGSIZE, or something other than ZMTP
// on the port), so after peer_expiry without a valid message the node
// closes its SUB and opens a new one (Stats::link_reopens): a peer that
// comes back is always heard again.  The link is plaintext: put the state
// endpoints on a network only the two brokers reach (docs/ha.md).
//
// The gate.  AllowClientRequest() is the CLIENT_REQUEST event: true when
// this broker serves the request now (it is active, or it just took over
// from an expired peer), false when the broker must drop it unanswered.
// While the node is active it reads one atomic and takes no lock.
//
// Reports.  Every state change is handed to the state hook and then
// logged (LogLevel::kInfo; a split brain or two brokers of the same role
// at kError, rate-limited), so that what the hook publishes is current
// once the line is seen; both on the node's reactor thread, whichever
// thread caused it (a change made inside AllowClientRequest() travels
// there through a zb::ReplyChannel and is dropped if the node is gone by
// then).
//
// Threading.  Create(), the hooks' setters and the destructor on the
// reactor's thread; AllowClientRequest(), state() and stats() on any
// thread.  The node must outlive every gate that calls it (destroy the
// brokers first).

#ifndef ZBROKERS_HA_NODE_H_
#define ZBROKERS_HA_NODE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/log.h"
#include "zbrokers/common/log_limiter.h"
#include "zbrokers/common/reply_channel.h"
#include "zbrokers/ha/binary_star.h"
#include "zbrokers/reactor/reactor.h"

namespace zb {

class BinaryStarNode {
 public:
  struct Options {
    HaRole role = HaRole::kPrimary;
    // Where our PUB binds (the peer's peer_state_endpoint points here).
    std::string state_endpoint;
    // The peer's state_endpoint, which our SUB connects to.
    std::string peer_state_endpoint;
    // How often we publish our state; > 0.
    std::chrono::milliseconds heartbeat_interval{1000};
    // Silence after which the peer counts as gone (BinaryStar::Options);
    // must be longer than heartbeat_interval, or a passive node would take
    // a live peer for dead between two of its heartbeats.
    std::chrono::milliseconds peer_expiry{2000};
  };

  struct Stats : BinaryStar::Stats {
    std::uint64_t malformed = 0;        // peer messages that did not parse
    std::uint64_t states_sent = 0;      // state messages published
    std::uint64_t states_received = 0;  // well-formed peer messages
    std::uint64_t link_reopens = 0;     // SUB reopened after peer silence
  };

  // Called on a state change, on the reactor thread.
  using StateHook = absl::AnyInvocable<void(HaState before, HaState after)>;

  // Checks `options` (InvalidArgument naming the member: an empty or
  // invalid endpoint, both endpoints the same, a heartbeat_interval <= 0, a
  // peer_expiry not above heartbeat_interval), opens and binds the PUB,
  // connects the SUB and starts the heartbeat timer.  A bind error (the
  // address in use) is returned naming the endpoint.
  static absl::StatusOr<std::unique_ptr<BinaryStarNode>> Create(
      Reactor& reactor, zmq::context_t& context, Options options);
  ~BinaryStarNode();

  BinaryStarNode(const BinaryStarNode&) = delete;
  BinaryStarNode& operator=(const BinaryStarNode&) = delete;

  // The request gate (see above).  Any thread.
  bool AllowClientRequest();

  // Now.  Any thread.
  HaState state() const { return state_.load(std::memory_order_acquire); }
  Stats stats() const;
  HaRole role() const { return options_.role; }
  // The PUB's endpoint as bound (ZMQ_LAST_ENDPOINT: a "*" port resolved).
  const std::string& state_endpoint() const { return bound_endpoint_; }

  // Reactor thread.  An empty log hook, the default, writes warnings and
  // errors to stderr as "ha LEVEL: line".
  void set_log_hook(LogHook hook) { log_hook_ = std::move(hook); }
  void set_state_hook(StateHook hook) { state_hook_ = std::move(hook); }

 private:
  using Clock = BinaryStar::Clock;

  BinaryStarNode(Reactor& reactor, Options options,
                 std::unique_ptr<BinaryStar> star);
  absl::Status Init(zmq::context_t& context);
  // (Re)creates the SUB, connects it and watches it.
  absl::Status OpenSub();
  void OnHeartbeat();

  void OnPeerMessage(std::span<zmq::message_t> frames);
  void Publish();
  // Calls the state hook, logs and publishes after a change (reactor
  // thread).
  void Report(const BinaryStar::Outcome& o);
  void Log(LogLevel level, std::string_view line);

  Reactor& reactor_;
  const Options options_;

  // The machine and its counters; state_ mirrors star_->state() for the
  // lock-free fast path of the gate.
  mutable std::mutex mu_;
  const std::unique_ptr<BinaryStar> star_;  // guarded by mu_
  std::uint64_t malformed_ = 0;             // guarded by mu_
  std::uint64_t states_sent_ = 0;           // guarded by mu_
  std::uint64_t states_received_ = 0;       // guarded by mu_
  std::uint64_t link_reopens_ = 0;          // guarded by mu_
  std::atomic<HaState> state_;

  // Reactor thread.
  LogHook log_hook_;
  StateHook state_hook_;
  LogLimiter malformed_log_{{.period = std::chrono::seconds(1), .burst = 5}};
  LogLimiter conflict_log_{{.period = std::chrono::seconds(10), .burst = 2}};
  std::string bound_endpoint_;
  zmq::context_t* context_ = nullptr;
  // The last valid peer message, or when the SUB was last opened.
  Clock::time_point last_heard_;

  zmq::socket_t pub_;
  zmq::socket_t sub_;
  // After the sockets they watch, so that they go first.
  Reactor::SocketWatch sub_watch_;
  Reactor::Timer heartbeat_;
  // Last: closed first, so that no change posted from a gate reaches a
  // half-destroyed node.
  ReplyChannel<BinaryStarNode>::Binding channel_;
  // channel_.channel(), fixed once Create() returns: what the gates send
  // through, from their threads.
  std::shared_ptr<ReplyChannel<BinaryStarNode>> channel_ref_;
};

}  // namespace zb

#endif  // ZBROKERS_HA_NODE_H_
