// Copyright 2026 The zbrokers Authors.
//
// Majordomo (MDP/0.1, RFC 7) clients.
//
// zb::MdpClient is synchronous: Request() sends one request and blocks until
// the reply, a timeout or an error.  It speaks REQ semantics over a DEALER
// socket, one request at a time.  When no reply comes within `timeout` it
// closes the socket, opens a new one (a new identity, so a late reply to the
// old request can never be taken for the answer to a later one) and sends
// the request again, up to `retries` times: RFC 7's recommended recovery.
//
//   absl::StatusOr<std::unique_ptr<zb::MdpClient>> client =
//       zb::MdpClient::Create("tcp://127.0.0.1:5555");
//   if (!client.ok()) { ... }
//   absl::StatusOr<zb::Frames> reply =
//       (*client)->Request("echo", zb::MakeFrames({"hello"}));
//
// zb::MdpAsyncClient runs on a zb::Reactor and keeps many requests
// outstanding on one DEALER socket; each request's callback is called once,
// on the reactor thread, with the reply body or an error.
//
//   absl::StatusOr<std::unique_ptr<zb::MdpAsyncClient>> client =
//       zb::MdpAsyncClient::Create(reactor, ctx, "tcp://127.0.0.1:5555");
//   if (!client.ok()) { ... }
//   (*client)->Request("echo", zb::MakeFrames({"hi"}),
//                      [](absl::StatusOr<zb::Frames> reply) { ... });
//
// How asynchronous replies are matched.  A reply is only ever delivered to
// the request it answers.  MDP/0.1 replies carry no request id (only the
// service), so MdpAsyncClient negotiates the zbrokers request-tag extension
// (docs/protocols/mdp.md) on every connection it opens: it asks the broker
// "mmi.zb.tag".
//   - zb-broker answers "200": from then on every request carries a tag that
//     the broker returns on its reply, and any number of requests may be
//     outstanding per service; replies are matched by tag, exactly, however
//     many workers serve the service and in whatever order they finish.
//   - Any other broker (RFC 8 answers "501"; a broker without MMI does not
//     answer): the client stays with what RFC 7 can match.  It keeps ONE
//     request per service on the wire and queues the others in the client,
//     sending the next when the reply comes, so a reply for service S always
//     answers the one request for S that is out.  Different services still
//     run in parallel.  Until the answer comes the client works this way
//     too, so the query never delays a request.
// Options::request_tags = false skips the query (plain RFC 7 only).
//
// What timeouts do (asynchronous).  A request's timeout runs from Request(),
// also while it waits in the client behind another request for its
// service.  When it passes:
//   - with retries left, the request is sent again (with a fresh timeout);
//     otherwise it completes with DeadlineExceeded;
//   - a plain request on the wire, or a tagged one when nothing at all came
//     back on the connection since it was sent (the broker looks gone), also
//     makes the client close its socket, open a new one and negotiate again
//     (RFC 7's recovery), and resend every request still outstanding, in
//     order; no late reply from the old socket can then be taken for the
//     answer to a later request.  A tagged request that timed out while the
//     connection was alive is resent on the same socket; a late reply to its
//     first copy then finds no request with its tag and is dropped.
// Resent requests may run twice on workers (RFC 7 assumes idempotent
// workers).
//
// Many brokers.  `endpoint` may name several brokers, comma-separated
// ("tcp://a:5555,tcp://b:5555", parsed by zb::SplitEndpointList; Create()
// fails with InvalidArgument for a list it refuses or an endpoint libzmq
// refuses).  With one endpoint both clients are exactly the single-broker
// clients above, whatever the policy.  Options::endpoint_policy says what
// they do with more (docs/majordomo.md "Many brokers", docs/ha.md):
//   - kFailover (default): one broker at a time, the first one first.
//     Wherever the client closes its socket and opens a new one -- MdpClient
//     after an attempt that timed out, MdpAsyncClient when it reopens (a
//     timed-out plain request, or a tagged one with nothing heard since it
//     was sent) -- the new socket connects to the NEXT endpoint of the list
//     (cyclically; back to the first after the last) and failovers() counts
//     one.  What is outstanding is resent there by the usual rules (the
//     async client negotiates "mmi.zb.tag" again on the new connection);
//     a request whose attempts are used up ends with DeadlineExceeded as
//     before.  The client stays on the new broker until it too times out:
//     there is no fail-back.  This is the client side of a fail-over pair
//     (docs/ha.md) as well as of a list of interchangeable brokers.
//   - kSpread: one connection per broker, each with its own socket (and,
//     for the async client, its own "mmi.zb.tag" negotiation: one broker
//     may speak request tags and another not) -- internally one
//     single-endpoint client per broker.  Each request goes to the next
//     broker in a round-robin that skips those that look dead; when all
//     look dead, plain round-robin.  A request stays with the broker it was
//     sent to: its retries and any reopen for it happen on that broker's
//     connection, it is never sent to two brokers, and it ends exactly once
//     with that broker's reply, DeadlineExceeded or Cancelled.
//     A broker looks dead from the moment a request to it timed out with
//     nothing heard on its connection since the request was sent, until
//     anything is heard on it again: for the async client, the answer to
//     the "mmi.zb.tag" query its reopen sent (so a broker that comes back
//     is used again by itself; with request_tags = false nothing is asked,
//     and a dead broker is used again only when all look dead); for
//     MdpClient, which hears nothing between requests, the answer to an
//     "mmi.zb.tag" query sent on a new socket when the broker came to look
//     dead (checked, without waiting, at each Request(); a broker without
//     MMI never answers it).  MdpClient::Request() goes to the next live
//     broker each time.  failovers() counts the times a broker came to look
//     dead; the other counters are summed over the brokers.

// Errors: from Create(), InvalidArgument (a refused endpoint list, an
// endpoint libzmq refuses, bad CURVE keys) or the reactor's registration error;
// from a request, InvalidArgument (empty service name), DeadlineExceeded (no
// reply after all retries), Cancelled (the async client was destroyed with the
// request outstanding), Internal (a ZeroMQ error).  MMI requests
// ("mmi.service") are ordinary requests.
//
// Threading.  MdpClient: one thread at a time.  MdpAsyncClient: create,
// use and destroy on the reactor's thread; callbacks run there.

#ifndef ZBROKERS_MAJORDOMO_CLIENT_H_
#define ZBROKERS_MAJORDOMO_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

namespace mdp {
struct ClientMessage;
}  // namespace mdp

// Options are defined outside the classes so that they can be default
// arguments.
// The largest reply FRAME the clients accept, in bytes (ZMQ_MAXMSGSIZE on
// their socket; libzmq checks each frame on its own).  A bigger one makes
// libzmq drop the connection to the broker before the frame is read in
// full: the reply is lost and its request ends by its timeout (or retry).
// 0 means no limit.  The same 16 MiB default as the broker's.
inline constexpr std::int64_t kMdpDefaultMaxMessageSize = 16 << 20;

struct MdpClientOptions {
  std::chrono::milliseconds timeout{2500};  // per attempt
  int retries = 3;                          // resends after the first try
  // CURVE encryption and authentication (docs/security.md): the broker's
  // public key and this client's key pair.  Unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  std::int64_t max_message_size = kMdpDefaultMaxMessageSize;  // see above
  // What the client does with more than one broker in its endpoint list
  // (docs/ha.md): kFailover (default) or kSpread.  zb::EndpointPolicy.
  EndpointPolicy endpoint_policy = EndpointPolicy::kFailover;
};

struct MdpAsyncClientOptions {
  std::chrono::milliseconds timeout{2500};  // default per-request timeout
  int retries = 0;                          // default resends on timeout
  // Negotiate the zbrokers request-tag extension ("mmi.zb.tag") on each
  // connection; false: plain RFC 7, one request per service on the wire.
  bool request_tags = true;
  // CURVE encryption and authentication (docs/security.md): the broker's
  // public key and this client's key pair.  Unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  std::int64_t max_message_size = kMdpDefaultMaxMessageSize;  // see above
  // What the client does with more than one broker in its endpoint list
  // (docs/ha.md): kFailover (default) or kSpread.  zb::EndpointPolicy.
  EndpointPolicy endpoint_policy = EndpointPolicy::kFailover;
};

class MdpClient {
 public:
  using Options = MdpClientOptions;

  // Opens the DEALER socket and connects it to `endpoint` (libzmq brings
  // the connection up in the background; a request made before it is up
  // waits in the socket).  `endpoint` may be a comma-separated list ("Many
  // brokers" above): kFailover connects to the first, kSpread to each.
  // Uses `context` when given (it must outlive the client), otherwise a
  // private one.  Fails with InvalidArgument for a list SplitEndpointList()
  // refuses, an endpoint libzmq refuses or CURVE keys it does not take.
  static absl::StatusOr<std::unique_ptr<MdpClient>> Create(
      std::string endpoint, Options options = {},
      zmq::context_t* context = nullptr);
  ~MdpClient();

  MdpClient(const MdpClient&) = delete;
  MdpClient& operator=(const MdpClient&) = delete;

  // Sends `body` (at least one frame; an empty vector sends one empty frame)
  // to `service` and waits for the reply body.
  absl::StatusOr<Frames> Request(std::string_view service, Frames body);

  // Requests resent after a timeout, and replies dropped because they named
  // another service (should not happen with a correct broker).
  // (kSpread: summed over the brokers.)
  std::uint64_t resends() const;
  std::uint64_t dropped_replies() const;
  // kFailover: times the client moved on to the next broker of its
  // endpoint list.  kSpread: times a broker came to look dead (requests
  // then go to the others).  0 with one endpoint.
  std::uint64_t failovers() const { return failovers_; }

 private:
  MdpClient(std::vector<std::string> endpoints, Options options,
            zmq::context_t* context);

  // A new socket, connected (after a timeout, Request() drops the old one
  // and the next attempt opens another).
  absl::Status Open();
  absl::Status Send(std::string_view service, const Frames& body);
  // kSpread members: a broker that looks dead gets a new socket and an
  // "mmi.zb.tag" query (any MDP broker answers an mmi.* request, if only
  // with "501"); ProbeAnswered() reads (and drops) whatever came back on
  // that socket, without waiting, and says whether anything did.
  void StartProbe();
  bool ProbeAnswered();

  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  const std::vector<std::string> endpoints_;  // from SplitEndpointList()
  std::size_t current_ = 0;  // the endpoint the next Open() connects to
  const Options options_;
  std::optional<zmq::socket_t> socket_;
  std::uint64_t resends_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t failovers_ = 0;
  // kSpread with more than one endpoint: one single-endpoint client per
  // broker (this client then has no socket of its own), whether each looks
  // dead (its last request timed out with nothing heard), and the next in
  // the round.  Empty otherwise.
  std::vector<std::unique_ptr<MdpClient>> spread_;
  std::vector<bool> spread_dead_;
  std::size_t spread_next_ = 0;
};

class MdpAsyncClient {
 public:
  using Options = MdpAsyncClientOptions;
  using Callback = absl::AnyInvocable<void(absl::StatusOr<Frames>)>;

  // Opens the DEALER socket, connects it to `endpoint`, registers it with
  // `reactor` and sends the "mmi.zb.tag" query (unless
  // Options::request_tags is false).  `endpoint` may be a comma-separated
  // list ("Many brokers" above): kFailover connects to the first, kSpread
  // opens one such connection per broker.  `reactor` and `context` must
  // outlive the client.  Fails with InvalidArgument for a list
  // SplitEndpointList() refuses, an endpoint libzmq refuses or CURVE keys
  // it does not take, or with the reactor's registration error.
  static absl::StatusOr<std::unique_ptr<MdpAsyncClient>> Create(
      Reactor& reactor, zmq::context_t& context, std::string endpoint,
      Options options = {});
  // Completes every outstanding request with Cancelled.  Callbacks must not
  // use the client.
  ~MdpAsyncClient();

  MdpAsyncClient(const MdpAsyncClient&) = delete;
  MdpAsyncClient& operator=(const MdpAsyncClient&) = delete;

  // Sends a request.  When this returns OK, `done` is called exactly once,
  // later (never from inside this call); when it returns an error (empty
  // service), `done` is not called.  `timeout` overrides Options::timeout
  // for this request.
  absl::Status Request(std::string_view service, Frames body, Callback done,
                       std::optional<std::chrono::milliseconds> timeout = {});

  // Requests without an outcome yet (on the wire or waiting in the client).
  std::size_t outstanding() const;
  // Whether the broker behind the current connection answered "mmi.zb.tag"
  // with "200" (requests are then tagged).  kSpread: whether every broker's
  // connection did.
  bool tagged() const;
  // New sockets after the first (kSpread: summed over the brokers).
  std::uint64_t reconnects() const;
  // kFailover: times the client moved on to the next broker of its
  // endpoint list.  kSpread: times a broker came to look dead (requests
  // then go to the others).  0 with one endpoint.
  std::uint64_t failovers() const;
  // Replies that matched no outstanding request (late, or for a request
  // already completed) or were malformed; dropped.  (kSpread: summed.)
  std::uint64_t stale_replies() const;

 private:
  enum class State {
    kWaiting,  // in the client, behind the plain request of its service
    kPlain,    // on the wire without a tag (the only one of its service)
    kTagged,   // on the wire with a tag
  };
  struct Pending {
    std::string service;
    Frames body;  // copies (shared buffers), kept for resends
    Callback done;
    Reactor::Timer timer;  // its timeout; cancelled with the entry
    std::chrono::milliseconds timeout{0};
    int retries_left = 0;
    State state = State::kWaiting;
    // replies_ when it was last sent: unchanged at its timeout means nothing
    // came back on the connection since.
    std::uint64_t replies_at_send = 0;
    // reconnects_ when its timer was last armed: changed at its timeout
    // means a reopen since has already sent it again.
    std::uint64_t reconnects_at_arm = 0;
  };
  // Plain RFC 7 matching for one service: at most one request on the wire.
  struct ServiceLine {
    // Its id; kProbe: the mmi.zb.tag query; kOrphan: a request that ended
    // (timed out) while its copy was on this socket, so the line's next
    // plain reply is that copy's and is dropped, not given to the next
    // request of the service.
    std::uint64_t on_wire = 0;
    std::deque<std::uint64_t> waiting;
  };
  static constexpr std::uint64_t kNone = 0;
  static constexpr std::uint64_t kProbe = ~std::uint64_t{0};
  static constexpr std::uint64_t kOrphan = ~std::uint64_t{0} - 1;

  MdpAsyncClient(Reactor& reactor, zmq::context_t& context,
                 std::vector<std::string> endpoints, Options options);

  // A new socket, connected and registered, with the tag query sent
  // (Create(), and every reconnect).
  absl::Status Open();
  void OnMessage(std::span<zmq::message_t> frames);
  void OnTagged(const mdp::ClientMessage& m);
  void OnPlain(const mdp::ClientMessage& m);
  void OnTimeout(std::uint64_t id);
  void Reset();
  // Sends `p` now (tagged when the broker speaks tags, else plain when no
  // other request of its service is out) or queues it behind that one.
  void Dispatch(std::uint64_t id, Pending& p);
  void SendPlain(std::uint64_t id, Pending& p, ServiceLine& line);
  void SendTagged(std::uint64_t id, Pending& p);
  // Sends the requests waiting for `line`'s service as far as the mode
  // allows.
  void Pump(std::string_view service, ServiceLine& line);
  // Takes request `id` (which must exist) out of the books and cancels its
  // timer; with `pump`, sends what was waiting behind it.
  Pending Remove(std::uint64_t id, bool pump);
  // Remove()s and completes request `id`, if it is still outstanding.
  void Finish(std::uint64_t id, absl::StatusOr<Frames> result);

  Reactor& reactor_;
  zmq::context_t& context_;
  const std::vector<std::string> endpoints_;  // from SplitEndpointList()
  std::size_t current_ = 0;  // the endpoint the next Open() connects to
  const Options options_;
  zmq::socket_t socket_;
  // The socket's registration; declared after it, so it goes first.
  Reactor::SocketWatch socket_watch_;
  bool tagged_ = false;  // the broker on socket_ said "200" to mmi.zb.tag
  std::uint64_t next_id_ = 1;
  // Outstanding requests by id; ids increase, so resends follow the order
  // of Request() calls.
  absl::flat_hash_map<std::uint64_t, Pending> pending_;
  absl::flat_hash_map<std::string, ServiceLine> lines_;
  Frames out_;
  std::uint64_t replies_ = 0;  // replies received on socket_
  std::uint64_t reconnects_ = 0;
  std::uint64_t stale_ = 0;
  std::uint64_t failovers_ = 0;
  // Whether the broker looks dead: a request timed out on the current
  // connection with nothing at all heard on it since the request was sent;
  // anything heard clears it.  went_dead_ counts the times it was set.
  bool looks_dead_ = false;
  std::uint64_t went_dead_ = 0;
  // kSpread with more than one endpoint: one single-endpoint client per
  // broker (this client then has no socket of its own) and the next in the
  // round.  Empty otherwise.
  std::vector<std::unique_ptr<MdpAsyncClient>> spread_;
  std::size_t spread_next_ = 0;
};

}  // namespace zb

#endif  // ZBROKERS_MAJORDOMO_CLIENT_H_
