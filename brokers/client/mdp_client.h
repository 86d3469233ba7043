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
//   zb::MdpClient client("tcp://127.0.0.1:5555");
//   absl::StatusOr<zb::Frames> reply =
//       client.Request("echo", zb::MakeFrames({"hello"}));
//
// zb::MdpAsyncClient runs on a zb::Reactor and keeps many requests
// outstanding on one DEALER socket; each request's callback is called once,
// on the reactor thread, with the reply body or an error.
//
//   zb::MdpAsyncClient client(reactor, ctx, "tcp://127.0.0.1:5555");
//   client.Start().IgnoreError();
//   client.Request("echo", zb::MakeFrames({"hi"}),
//                  [](absl::StatusOr<zb::Frames> reply) { ... });
//
// How asynchronous replies are matched.  MDP carries no request id: a reply
// names only its service.  MdpAsyncClient therefore matches replies FIFO per
// service: a reply for service S completes the oldest outstanding request for
// S.  That is exact when S has one worker (the broker dispatches a service's
// requests in arrival order), and whenever workers answer in the order they
// were given requests.  When several workers serve S and may finish out of
// order, a reply body may complete a different request of the same service
// than the one it answers; if that matters, put your own correlation id in
// the body (an MdpWorker handler sees the whole body and can echo it).
//
// What timeouts do (asynchronous).  When a request's timeout passes, the
// client closes its socket and opens a new one (so no late reply can shift
// the FIFO matching), and resends every request still outstanding, in order,
// on the new socket; the timed-out request is resent too when it has retries
// left (with a fresh timeout), and otherwise completes with
// DeadlineExceeded.  Resent requests may run twice on workers (RFC 7 assumes
// idempotent workers).
//
// Errors: InvalidArgument (empty service name), DeadlineExceeded (no reply
// after all retries), Cancelled (the async client was destroyed with the
// request outstanding), Internal (a ZeroMQ error).  MMI requests
// ("mmi.service") are ordinary requests.
//
// Threading.  MdpClient: one thread at a time.  MdpAsyncClient: construct,
// use and destroy on the reactor's thread; callbacks run there.

#ifndef ZB_BROKERS_CLIENT_MDP_CLIENT_H_
#define ZB_BROKERS_CLIENT_MDP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "reactor/frames.h"
#include "reactor/reactor.h"

namespace zb {

// Options are defined outside the classes so that they can be default
// arguments.
struct MdpClientOptions {
  std::chrono::milliseconds timeout{2500};  // per attempt
  int retries = 3;                          // resends after the first try
};

struct MdpAsyncClientOptions {
  std::chrono::milliseconds timeout{2500};  // default per-request timeout
  int retries = 0;                          // default resends on timeout
};

class MdpClient {
 public:
  using Options = MdpClientOptions;

  // Uses `context` when given (it must outlive the client), otherwise a
  // private one.  Connects lazily, on the first request.
  explicit MdpClient(std::string endpoint, Options options = {},
                     zmq::context_t* context = nullptr);
  ~MdpClient();

  MdpClient(const MdpClient&) = delete;
  MdpClient& operator=(const MdpClient&) = delete;

  // Sends `body` (at least one frame; an empty vector sends one empty frame)
  // to `service` and waits for the reply body.
  absl::StatusOr<Frames> Request(std::string_view service, Frames body);

  // Requests resent after a timeout, and replies dropped because they named
  // another service (should not happen with a correct broker).
  std::uint64_t resends() const { return resends_; }
  std::uint64_t dropped_replies() const { return dropped_; }

 private:
  absl::Status Open();
  absl::Status Send(std::string_view service, const Frames& body);

  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  const std::string endpoint_;
  const Options options_;
  std::optional<zmq::socket_t> socket_;
  std::uint64_t resends_ = 0;
  std::uint64_t dropped_ = 0;
};

class MdpAsyncClient {
 public:
  using Options = MdpAsyncClientOptions;
  using Callback = absl::AnyInvocable<void(absl::StatusOr<Frames>)>;

  MdpAsyncClient(Reactor& reactor, zmq::context_t& context,
                 std::string endpoint, Options options = {});
  // Completes every outstanding request with Cancelled.  Callbacks must not
  // use the client.
  ~MdpAsyncClient();

  MdpAsyncClient(const MdpAsyncClient&) = delete;
  MdpAsyncClient& operator=(const MdpAsyncClient&) = delete;

  // Opens the socket.  Requests made before Start() fail.
  absl::Status Start();

  // Sends a request.  When this returns OK, `done` is called exactly once,
  // later (never from inside this call); when it returns an error (not
  // started, empty service), `done` is not called.  `timeout` overrides
  // Options::timeout for this request.
  absl::Status Request(std::string_view service, Frames body, Callback done,
                       std::optional<std::chrono::milliseconds> timeout = {});

  std::size_t outstanding() const { return pending_.size(); }
  std::uint64_t reconnects() const { return reconnects_; }
  std::uint64_t stale_replies() const { return stale_; }

 private:
  struct Pending {
    std::string service;
    Frames body;  // copies (shared buffers), kept for resends
    Callback done;
    TimerId timer = 0;
    std::chrono::milliseconds timeout{0};
    int retries_left = 0;
  };

  absl::Status Open();
  void OnMessage(std::span<zmq::message_t> frames);
  void OnTimeout(std::uint64_t id);
  void Reset();
  bool SendPending(const Pending& p);
  void Finish(std::uint64_t id, absl::StatusOr<Frames> result);

  Reactor& reactor_;
  zmq::context_t& context_;
  const std::string endpoint_;
  const Options options_;
  zmq::socket_t socket_;
  bool started_ = false;
  std::uint64_t next_id_ = 1;
  // Outstanding requests by id; ids increase, so per-service FIFOs and the
  // resend order follow the order of Request() calls.
  absl::flat_hash_map<std::uint64_t, Pending> pending_;
  absl::flat_hash_map<std::string, std::deque<std::uint64_t>> fifo_;
  Frames out_;
  std::uint64_t reconnects_ = 0;
  std::uint64_t stale_ = 0;
};

}  // namespace zb

#endif  // ZB_BROKERS_CLIENT_MDP_CLIENT_H_
