// Copyright 2026 The zbrokers Authors.
//
// OpenDealer: the one way the clients and workers of both protocols open the
// DEALER socket they talk to a broker on.  Internal to the zbrokers
// libraries (not installed).
//
//   absl::StatusOr<zmq::socket_t> s = zb::OpenDealer(
//       context, "tcp://127.0.0.1:5555",
//       {.max_message_size = options.max_message_size,
//        .curve = options.curve},
//       "MdpWorker");
//   if (!s.ok()) return s.status();
//   socket_ = *std::move(s);
//
// The socket gets ZMQ_LINGER 0: whatever is still queued when its owner
// closes it (to reconnect, or because a request ended) belongs to a broker
// connection that is over, so it is dropped rather than holding the context
// open.  An owner that wants its last words delivered (a worker's
// DISCONNECT) raises the linger just before closing.  ZMQ_IPV6 is set for an
// IPv6 literal endpoint (SetIpv6For), the CURVE client keys are applied when
// given, then the socket connects (asynchronously: a DEALER queues what is
// sent until the connection is up).
//
// OpenWatchedDealer() is OpenDealer() plus the reactor watch every client
// and worker puts on the socket right after, so that an owner has one call
// to (re)open its broker connection and nothing to roll back:
//
//   absl::StatusOr<zb::WatchedDealer> d = zb::OpenWatchedDealer(
//       reactor_, context_, endpoint_, {...}, "ConsensusWorker",
//       [this](std::span<zmq::message_t> f) { OnMessage(f); });
//   if (!d.ok()) return d.status();
//   socket_ = std::move(d->socket);
//   socket_watch_ = std::move(d->watch);
//
// Thread-safety: touches only the new socket; call it on the thread that
// will own the socket (for OpenWatchedDealer, the reactor's owner thread).

#ifndef ZBROKERS_BROKERS_COMMON_DEALER_H_
#define ZBROKERS_BROKERS_COMMON_DEALER_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

struct DealerOptions {
  // ZMQ_MAXMSGSIZE: the largest frame, in bytes, the socket accepts; 0 (or
  // less) means no limit.
  std::int64_t max_message_size = 0;
  // CURVE encryption and authentication; unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  // Sets ZMQ_SNDHWM and ZMQ_RCVHWM to 0 (no limit), for an owner that bounds
  // what it queues itself.  Otherwise libzmq's defaults apply.
  bool unlimited_hwm = false;
};

// A new DEALER socket on `context`, set up as above and connected to
// `endpoint`.  InvalidArgument ("<who>: cannot connect to "<endpoint>":
// <why>") when libzmq refuses the endpoint or an option; the error of
// ApplyCurveClient when the CURVE keys cannot be applied.  `who` names the
// caller in the message (e.g. "ConsensusWorker").
absl::StatusOr<zmq::socket_t> OpenDealer(zmq::context_t& context,
                                         std::string_view endpoint,
                                         const DealerOptions& options,
                                         std::string_view who);

// A DEALER from OpenDealer() and the reactor watch on it.  The watch refers
// to the socket's libzmq handle, which moving the zmq::socket_t keeps: move
// both out into the owner's members, the watch into a member declared after
// the socket's (it must go first).
struct WatchedDealer {
  zmq::socket_t socket;
  Reactor::SocketWatch watch;
};

// OpenDealer(context, endpoint, options, who), then reactor.Add(socket,
// on_message).  On any error the socket is closed again and nothing is
// registered: OpenDealer's errors, or Reactor::Add's.
absl::StatusOr<WatchedDealer> OpenWatchedDealer(
    Reactor& reactor, zmq::context_t& context, std::string_view endpoint,
    const DealerOptions& options, std::string_view who,
    Reactor::MessageHandler on_message);

}  // namespace zb

#endif  // ZBROKERS_BROKERS_COMMON_DEALER_H_
