// Copyright 2026 The zbrokers Authors.
//
// zb::MdpWorker serves one Majordomo (MDP/0.1, RFC 7) service on a
// zb::Reactor.  It connects a DEALER socket to the broker, sends READY,
// exchanges heartbeats, and hands every REQUEST to a handler together with a
// Replier that answers it, now or later, from any thread.
//
//   zb::MdpWorker worker(reactor, ctx, "tcp://127.0.0.1:5555", "echo",
//       [](zb::Frames body, zb::MdpWorker::Replier replier) {
//         replier.Reply(std::move(body));  // or keep it and reply later
//       });
//   if (absl::Status s = worker.Start(); !s.ok()) { ... }
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
// An unanswered request is given back.  A Replier answers exactly one
// request.  One destroyed without a reply (the handler dropped it, or threw:
// its by-value Replier is destroyed while the exception unwinds, and the
// reactor reports the exception) makes the worker tell the broker: it sends
// DISCONNECT and, after reconnect_delay, connects again with a new socket
// and READY (Stats::abandoned).  The broker then redispatches every request
// this worker held (or drops one that failed max_redispatch times, so a
// request that breaks every handler cannot take the whole pool down), and
// replies made later for requests of the old connection are dropped.  MDP
// has no failure reply; to tell a client that its request failed, reply
// with an error of your own making.  The C and Python bindings follow the
// same policy (docs/majordomo.md).
//
// Threading.  Construct, use and destroy the worker on the reactor's thread.
// Replier::Reply may be called on any thread (it posts to the reactor when
// called elsewhere); the reactor must still be running then.

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
  };

  class Core;  // shared with outstanding Repliers

  // Answers one request.  Move-only; valid until Reply() is called.
  // Destroying (or move-assigning over) a valid Replier without a reply
  // gives its request back (see "An unanswered request" above); on another
  // thread that posts to the reactor, which must still be running then.
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
    bool valid() const { return !core_.expired() && !used_; }

    // Makes this Replier inert without telling the worker anything, for an
    // owner that knows the worker's reactor is gone (the C binding, whose
    // tokens may outlive their reactor).  Rarely what you want otherwise.
    void Forget();

   private:
    friend class Core;
    // Gives the request back when this Replier is still unanswered.
    void Abandon();

    std::weak_ptr<Core> core_;
    Reactor* reactor_ = nullptr;
    zmq::message_t address_;   // the client's address, echoed in REPLY
    std::uint64_t epoch_ = 0;  // which connection the request came on
    std::uint64_t seq_ = 0;    // which request of that connection
    bool used_ = false;
  };

  using Handler = absl::AnyInvocable<void(Frames body, Replier replier)>;

  MdpWorker(Reactor& reactor, zmq::context_t& context, std::string endpoint,
            std::string service, Handler handler, Options options = {});
  // Sends DISCONNECT when connected, then closes the socket.
  ~MdpWorker();

  MdpWorker(const MdpWorker&) = delete;
  MdpWorker& operator=(const MdpWorker&) = delete;

  // Connects and sends READY.  Fails on an invalid endpoint or service.
  absl::Status Start();
  // Sends DISCONNECT and closes the socket; no reconnection after this.
  void Stop();

  Stats stats() const;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace zb

#endif  // ZBROKERS_MAJORDOMO_WORKER_H_
