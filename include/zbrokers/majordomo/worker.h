// Copyright 2026 The zbrokers Authors.
//
// zb::MdpWorker serves one Majordomo (MDP/0.1, RFC 7) service on a
// zb::Reactor.  It connects a DEALER socket to the broker, sends READY,
// exchanges heartbeats, and hands every REQUEST to a handler together with a
// Replier that answers it, now or later, from any thread.
//
//   absl::StatusOr<std::unique_ptr<zb::MdpWorker>> worker =
//       zb::MdpWorker::Create(reactor, ctx, "tcp://127.0.0.1:5555", "echo",
//           [](zb::Frames body, zb::MdpWorker::Replier replier) {
//             replier.Reply(std::move(body));  // or keep it, reply later
//           });
//   if (!worker.ok()) { ... }  // a bad endpoint or service name
//   reactor.Run();
//
// Connection.  The worker treats the broker as gone when it has heard nothing
// (no request, no heartbeat) for heartbeat_interval * heartbeat_liveness, and
// when the broker sends DISCONNECT.  Either way it closes its socket and,
// after reconnect_delay, opens a new one and sends READY again (RFC 7's
// recovery).  The worker sends a HEARTBEAT every interval in which it sent
// nothing else, also while a request is being handled, so a handler may take
// as long as it needs as long as it does not block the reactor thread: do
// long work elsewhere and reply through the Replier.  heartbeat_interval must
// match the broker's.
//
// Replies.  RFC 7 workers handle one request at a time; the broker sends the
// next request only after the reply.  A broker with worker prefetch (an
// opt-in extension, see broker.h) sends up to N without waiting:
// the handler is then called for each REQUEST as it arrives, also while
// earlier Repliers are unanswered, and replies may be made in any order.
// The broker settles a REPLY with the oldest request of that client at this
// worker, so the worker sends the replies to one client in the order that
// client's requests came: a reply made early waits (in the worker) until the
// earlier requests of the same client are answered.  Replies to different
// clients are never held up by each other.  A reply made after the worker
// reconnected, stopped or was destroyed is dropped (the broker has already
// given the request to another worker), and counted.
//
// Many brokers.  `endpoint` may name several brokers, comma-separated
// ("tcp://a:5555,tcp://b:5555", parsed by zb::SplitEndpointList): the worker
// then registers with every one of them at once, one *session* per broker,
// each with its own socket, READY, heartbeats, liveness check and
// reconnects (after reconnect_delay), all handing requests to the one
// handler.  A session that loses its broker (silence, DISCONNECT, an
// abandoned request) reconnects on its own; the others are not disturbed.
// A reply goes back through the session its request came on, never to
// another broker, and is dropped and counted when that session has
// reconnected since.  RFC 7's one request at a time holds per broker
// connection: with N brokers the handler may hold up to N requests at once,
// one from each (times worker prefetch), so a handler that must not run
// two at a time has to queue them itself.  This serves a fail-over pair
// (the backup already has the worker when it takes over) as well as many
// brokers sharing a pool of workers (docs/majordomo.md "One worker, many
// brokers").  With one endpoint the worker is exactly the single-broker
// worker.
//
// An unanswered request is given back.  A Replier answers exactly one
// request.  One destroyed without a reply (the handler dropped it, or threw:
// its by-value Replier is destroyed while the exception unwinds, and the
// reactor reports the exception) makes the worker tell the broker: it sends
// DISCONNECT (to the broker the request came from) and, after
// reconnect_delay, connects again with a new socket and READY
// (Stats::abandoned).  The broker then redispatches every request
// this worker held (or drops one that failed max_redispatch times, so a
// request that breaks every handler cannot take the whole pool down), and
// replies made later for requests of the old connection are dropped.  MDP
// has no failure reply; to tell a client that its request failed, reply
// with an error of your own making.  This is the policy of both workers for
// an unanswered request (docs/reliability.md, "Unanswered requests"); the C
// and Python bindings follow it too (docs/majordomo.md).
//
// Threading.  Create, use and destroy the worker on the reactor's thread;
// the reactor and the context must outlive it.  A Replier may be moved to
// and used on any thread (Reply, or destroying it, posts to the reactor
// through a zb::ReplyChannel, zbrokers/common/reply_channel.h), and it stays
// safe to use after the worker, and then its reactor, are gone: the answer
// is then dropped.

#ifndef ZBROKERS_MAJORDOMO_WORKER_H_
#define ZBROKERS_MAJORDOMO_WORKER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/reply_channel.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

// Defined outside the class so that it can be a default argument.
struct MdpWorkerOptions {
  // Must match the broker's heartbeat interval.
  std::chrono::milliseconds heartbeat_interval{2500};
  // The broker is gone after this many intervals without a message.
  int heartbeat_liveness = 3;
  // Wait between closing a connection and opening the next.
  std::chrono::milliseconds reconnect_delay{1000};
  // CURVE encryption and authentication (docs/security.md): the broker's
  // public key and this worker's key pair.  Unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  // The largest REQUEST frame accepted, in bytes (ZMQ_MAXMSGSIZE on the
  // worker's socket; libzmq checks each frame on its own).  A bigger one
  // makes libzmq drop the connection before the frame is read in full: the
  // handler never sees it, the broker treats the worker as gone and
  // redispatches the request (a request too big for every worker ends as a
  // failure after max_redispatch), and the worker starts over with READY.
  // 0 means no limit.  16 MiB, as the broker.
  std::int64_t max_message_size = 16 << 20;
};

class MdpWorker {
 public:
  using Options = MdpWorkerOptions;

  struct Stats {
    std::uint64_t requests = 0;         // REQUESTs handed to the handler
    std::uint64_t replies = 0;          // REPLYs sent
    std::uint64_t dropped_replies = 0;  // replies for a closed connection
    std::uint64_t reconnects = 0;       // new sockets after the first
    std::uint64_t disconnects_received = 0;
    std::uint64_t malformed = 0;  // messages from the broker dropped
    std::uint64_t abandoned = 0;  // Repliers dropped unanswered (each made
                                  // the worker give its requests back)
    // Every counter above sums all sessions.  These two are the sessions:
    // `brokers` is the number of endpoints, `brokers_connected` how many of
    // them have sent the session anything (a heartbeat or a request) since
    // its latest READY and not been lost since.
    std::uint64_t brokers = 0;
    std::uint64_t brokers_connected = 0;
  };

  class Core;  // what outstanding Repliers reach through the reply channel

  // Answers one request.  Move-only; valid until Reply() is called.
  // Destroying (or move-assigning over) a valid Replier without a reply
  // gives its request back (see "An unanswered request" above); on another
  // thread that is posted to the reactor.
  class Replier {
   public:
    Replier() = default;
    Replier(Replier&& other) noexcept;
    Replier& operator=(Replier&& other) noexcept;
    ~Replier();

    // Sends `body` as the reply (an empty `body` is sent as one empty frame,
    // since MDP replies carry at least one frame).  Any thread.  Returns
    // false when this Replier was already used or is empty.
    bool Reply(Frames body);
    // Unused, and its worker still exists.
    bool valid() const { return channel_ != nullptr && channel_->open(); }

   private:
    friend class Core;
    // Gives the request back when this Replier is still unanswered.
    void Abandon();

    std::shared_ptr<ReplyChannel<Core>> channel_;  // null once used
    zmq::message_t address_;     // the client's address, echoed in REPLY
    std::uint32_t session_ = 0;  // which broker the request came from
    std::uint64_t epoch_ = 0;    // which connection of it
    std::uint64_t seq_ = 0;      // which request of that connection
  };

  using Handler = absl::AnyInvocable<void(Frames body, Replier replier)>;

  // Connects to every broker of `endpoint` (one endpoint or a
  // comma-separated list, see "Many brokers") and sends each READY for
  // `service`.  InvalidArgument for an empty or "mmi.*" service name, a
  // missing handler, a list SplitEndpointList() refuses, or an endpoint
  // libzmq refuses.
  static absl::StatusOr<std::unique_ptr<MdpWorker>> Create(
      Reactor& reactor, zmq::context_t& context, std::string endpoint,
      std::string service, Handler handler, Options options = {});
  // Drops what outstanding Repliers answer from now on, then Shutdown().
  ~MdpWorker();

  MdpWorker(const MdpWorker&) = delete;
  MdpWorker& operator=(const MdpWorker&) = delete;

  // Sends DISCONNECT to every broker and closes the sockets; no
  // reconnection after this.  Idempotent.
  void Shutdown();

  Stats stats() const;

 private:
  explicit MdpWorker(std::unique_ptr<Core> core);

  std::unique_ptr<Core> core_;
};

}  // namespace zb

#endif  // ZBROKERS_MAJORDOMO_WORKER_H_
