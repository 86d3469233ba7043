// Copyright 2026 The zbrokers Authors.
//
// zb::ConsensusClient sends requests to a consensus (CCp100) broker from a
// zb::Reactor.  Every request goes to every worker of its service; the
// broker answers with all their payloads, or with a failure.
// docs/consensus.md is the user guide; docs/protocols/ccp.md describes the
// wire protocol.  For simple programs without a reactor of their own, see
// zb::BlockingConsensusClient (blocking_client.h).
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   absl::StatusOr<std::unique_ptr<zb::ConsensusClient>> client =
//       zb::ConsensusClient::Create(reactor, ctx, "tcp://127.0.0.1:5556");
//   if (!client.ok()) { /* a malformed endpoint, bad CURVE keys, ... */ }
//   (*client)->Request("echo", zb::MakeFrames({"hello"}),
//                      {.timeout = std::chrono::seconds(2), .retries = 1},
//                      [&](zb::ConsensusClient::Result&& r) {
//                        if (r.ok()) { /* r.payload: every worker's frames */ }
//                        reactor.Stop();
//                      });
//   reactor.Run();
//
// Outcomes.  Every request ends exactly once, with one call of its callback:
//   - kSuccess: every worker answered success; `payload` holds all their
//     payload frames, in the broker's registration order.
//   - kFailure: `failed_by` says who failed it.
//       kWorker  a worker answered REPLY_FAILURE; `payload` is its payload
//                exactly as sent; `reason` is empty.
//       kBroker  the broker failed it; `reason` is the broker's code (one of
//                ccp::kReason*, e.g. "zb:no-workers", "zb:timeout") and
//                `payload` is [code, human-readable text].
//       kClient  the client failed it without an answer: kReasonClientClosed
//                (the client was destroyed with the request open),
//                kReasonInvalidRequest (bad service name) or
//                kReasonNotConnected (a reopen could not set up the new
//                socket).
//     The two are told apart by ccp::IsBrokerFailure(): broker codes start
//     with "zb:", worker payloads must not.
//   - kTimeout: no answer within `timeout` for the last attempt, and no
//     retries left.
// Callbacks run on the reactor thread and never inside Request() or Ping()
// themselves (immediate failures -- closed client, no socket, bad service
// name -- are delivered from a zero-delay timer of the client's own), so a
// callback may freely call Request() again.  Immediate failures belong to
// the client: those not yet delivered when it is destroyed are delivered
// inside the destructor, never after it.
//
// Timeouts and retries.  RequestOptions::timeout bounds each attempt: the
// request ends after at most timeout x (retries + 1).  When an attempt times
// out and retries remain, the request is sent again with the client's NEXT
// sequence number (the broker requires each request of a client id to be
// exactly one more than the previous).  A reply to any attempt of a request
// completes it; replies to attempts of requests that already ended are
// dropped (Stats::stale_replies).  So each request has exactly one outcome,
// while its workers may see it more than once: handlers should be
// idempotent when retries are used.  Set the broker's request deadline below
// the client's timeout, or the client times out before the broker can report
// why.
//
// Reconnects.  The client reopens its DEALER socket with a new random client
// id (and sequence numbers restarting at 1) when Options::
// reopen_after_timeouts attempts (or pings) sent on the current socket time
// out in a row with nothing heard from the broker in between (the broker is
// unreachable or the connection dead).  Attempts in flight on the old socket
// are lost with it; their requests are resent at their deadline if they have
// retries left, and otherwise end as kTimeout.  A broker restart needs
// nothing: the new broker adopts the client id at the number it presents.
// When the broker rejects a request with "zb:bad-sequence" (it ties the id
// to another socket, e.g. after the connection was re-established, or saw a
// gap), the client takes a new client id on the same socket, so attempts in
// flight under the old id are still answered; the rejected request is resent
// at once if it has retries left (that uses one), else it ends with that
// failure.
//
// Many brokers.  The endpoint given to Create() may be a comma-separated
// list ("tcp://a:5556,tcp://b:5556", zb::SplitEndpointList); with one
// endpoint nothing below applies.  Options::endpoint_policy says what the
// client does with several (docs/consensus.md "Many brokers"):
//   - kFailover (the default): one broker at a time, the first one first.
//     Where the reconnect rule above reopens the socket, the new socket
//     connects to the NEXT broker of the list (after the last, the first
//     again), and Stats::failovers counts the move.  Everything else is the
//     reopen as above: a new client id, sequence numbers from 1, attempts in
//     flight lost and resent at their deadline by the usual retry rules.
//     With reopen_after_timeouts = 0 the client never leaves the first
//     broker.
//   - kSpread: one connection per broker, each with its own DEALER socket,
//     client id, sequence numbers and reconnect rule (the broker requires
//     consecutive numbers per client id, so one socket cannot serve many
//     brokers).  Each request goes to the next broker in round-robin order
//     that does not look dead, and stays there: its retries, its
//     "zb:bad-sequence" and "zb:no-workers" resends and that connection's
//     reopens all happen on that broker; it is never sent to two.  So a
//     request is decided by the workers of the broker that took it.  A
//     broker looks dead from an attempt or ping of its connection that timed
//     out until anything is heard from it again (reopens do not clear it),
//     and while its connection has no socket.  When every broker looks dead,
//     requests go plain round-robin.  Each time a dead-looking broker is
//     passed over, the client sends it a PING (one at a time, with the
//     skipped request's timeout), so a broker that comes back is used again
//     without the caller's help.  Ping() pings the brokers in list order,
//     one per call, dead-looking ones included.  Call() waits on the socket
//     of the broker it chose; requests open on other brokers progress when
//     the reactor runs again.  stats() adds up the connections' counters
//     (failovers stays 0); client_id() and next_sequence() are those of the
//     first broker's connection.
//
// Performance.  On the request/reply path the client copies no payload
// bytes (frames are moved into the socket and out of the reply; a request
// with retries keeps its frames and sends zmq_msg_copy()s, which share
// buffers) and allocates nothing in steady state: request records are
// pooled, header frames are small enough for libzmq's in-place storage,
// and a single timer for the earliest deadline serves all requests.  The
// callback receives the result as an rvalue: frames it leaves in
// `payload` are released and the vector's capacity is reused for a later
// result.  Callbacks whose captures exceed absl::AnyInvocable's inline
// storage (two pointers) allocate once per request.
//
// Ownership and threads.  The client belongs to the reactor's thread: create
// it, call it and destroy it there (with zb::ReactorThread, inside Invoke()).
// The reactor and the context must outlive the client.  Destroying the
// client ends every open request with kFailure/kClient/kReasonClientClosed
// (callbacks run inside the destructor and must not use the client), every
// pending ping with CancelledError, and delivers the immediate failures it
// has not delivered yet.  While the reactor is not running
// nothing times out; requests still end exactly once, at the latest when the
// client is destroyed.  Do not destroy the client inside one of its own
// callbacks.

#ifndef ZBROKERS_CONSENSUS_CLIENT_H_
#define ZBROKERS_CONSENSUS_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

// Options of a zb::ConsensusClient (ConsensusClient::Options).  Declared
// outside the class so that `Options options = {}` works as a default
// argument.
struct ConsensusClientOptions {
  // Attempts (and pings) sent on the current socket that may time out in a
  // row, with nothing heard from the broker, before the client reopens its
  // socket with a new client id.  0 never reopens on timeouts.
  int reopen_after_timeouts = 2;
  // The first client id; 0 picks a random one.  Later ids are random.
  std::uint32_t client_id = 0;
  // ZMQ_MAXMSGSIZE of the client's socket: the largest frame, in bytes, it
  // accepts from the broker; 0 = no limit.  libzmq checks it per frame,
  // before allocating, and drops the connection when a bigger one arrives.
  // libzmq 4.3 does not reconnect a connection it dropped that way: the
  // reply is lost, its request ends by its timeout, and the client's
  // reopen rule (reopen_after_timeouts) opens a new socket.  Not checked
  // over inproc://.  The broker's default (16 MiB).
  std::int64_t max_message_size = ccp::kDefaultMaxMessageSize;
  // For requests with RequestOptions::retry_no_workers: the wait before the
  // first resend after "zb:no-workers"; it doubles after each one, up to
  // no_workers_backoff_max.
  std::chrono::milliseconds no_workers_backoff{10};
  std::chrono::milliseconds no_workers_backoff_max{500};
  // CURVE encryption and authentication (docs/security.md): the broker's
  // public key and this client's key pair.  Unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  // What the client does with more than one broker in its endpoint list
  // (docs/ha.md): kFailover (default) or kSpread.  zb::EndpointPolicy.
  EndpointPolicy endpoint_policy = EndpointPolicy::kFailover;
};

// Options of one request (ConsensusClient::RequestOptions).
struct ConsensusRequestOptions {
  // How long each attempt waits for the broker's answer.
  std::chrono::milliseconds timeout{5000};
  // How many times the request is sent again after a timed-out attempt.
  int retries = 0;
  // When the broker answers "zb:no-workers" (the service has no worker yet,
  // e.g. a client started together with its workers), send the request
  // again after a backoff (Options::no_workers_backoff, doubling) for as
  // long as the current attempt's timeout allows.  When the next resend
  // would come after the deadline, or the deadline passes before the last
  // resend is answered (and no retries remain), the request ends with the
  // broker's last "zb:no-workers" answer.  Off by default: the broker's
  // immediate answer is the protocol, and it tells a caller at once that a
  // service has no workers (a misspelled name, every worker gone) instead of
  // after the timeout. No worker has seen a request answered "zb:no-workers",
  // so resending it is always safe.
  bool retry_no_workers = false;
};

class ConsensusClient {
 public:
  using Clock = Reactor::Clock;

  // Reasons of client-generated failures (Result::failed_by == kClient).
  static constexpr std::string_view kReasonClientClosed = "zb:client-closed";
  static constexpr std::string_view kReasonInvalidRequest =
      "zb:invalid-request";
  static constexpr std::string_view kReasonNotConnected = "zb:not-connected";

  using Options = ConsensusClientOptions;
  using RequestOptions = ConsensusRequestOptions;

  enum class Outcome { kSuccess, kFailure, kTimeout };
  enum class FailedBy { kNone, kWorker, kBroker, kClient };

  struct Result {
    Outcome outcome = Outcome::kFailure;
    FailedBy failed_by = FailedBy::kNone;  // kFailure only
    std::string reason;                    // see the file comment
    Frames payload;
    int attempts = 0;  // how many times the request was sent

    bool ok() const { return outcome == Outcome::kSuccess; }
  };

  using Callback = absl::AnyInvocable<void(Result&&)>;
  // OK when the broker echoed the PING; DeadlineExceeded when it did not in
  // time; Cancelled when the client was destroyed first.
  using PingCallback = absl::AnyInvocable<void(absl::Status)>;

  // Counters, for tests and monitoring.  Read them on the reactor thread.
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t successes = 0;
    std::uint64_t failures = 0;
    std::uint64_t timeouts = 0;            // requests that ended as kTimeout
    std::uint64_t attempt_timeouts = 0;    // attempts (and pings) timed out
    std::uint64_t retries = 0;             // attempts after the first
    std::uint64_t reopens = 0;             // new sockets (each a new id)
    std::uint64_t new_client_ids = 0;      // ids taken after the first
    std::uint64_t rejected = 0;            // "zb:bad-sequence" answers
    std::uint64_t stale_replies = 0;       // replies to ended requests
    std::uint64_t malformed = 0;           // unparseable broker messages
    std::uint64_t send_failures = 0;       // sends refused (high-water mark)
    std::uint64_t no_workers_resends = 0;  // resends after "zb:no-workers"
    std::uint64_t failovers = 0;  // moves of the client to another broker
  };

  // Connects a DEALER socket to `endpoint` (with kSpread and a list, one
  // to each broker of the list) and registers it with `reactor`.  Never
  // throws: a socket that cannot be set up (a malformed endpoint, CURVE keys
  // libzmq refuses, a terminated context) is the returned error
  // (InvalidArgument for the endpoint, and for a list SplitEndpointList()
  // refuses: an empty item, the same endpoint twice, ...), and nothing is
  // left registered.  libzmq checks every endpoint of a list here: with
  // kFailover a socket is connected to each broker after the first and
  // closed again at once.  Call it on the reactor's thread.
  static absl::StatusOr<std::unique_ptr<ConsensusClient>> Create(
      Reactor& reactor, zmq::context_t& context, std::string endpoint,
      Options options = {});
  ~ConsensusClient();

  ConsensusClient(const ConsensusClient&) = delete;
  ConsensusClient& operator=(const ConsensusClient&) = delete;

  // Sends `payload` (moved; an empty payload is sent as one empty frame) to
  // every worker of `service`; `done` is called exactly once with the
  // outcome.  The span overload moves the frames out of the span (useful to
  // reuse one Frames vector without allocating).
  void Request(std::string_view service, Frames payload,
               const RequestOptions& options, Callback done);
  void Request(std::string_view service, std::span<zmq::message_t> payload,
               const RequestOptions& options, Callback done);

  // Like Request(), but returns only after `done` has run.  For a
  // sequential client (one request at a time, as in the per-worker latency
  // test): instead of running the reactor, it waits on the calling thread
  // with blocking receives on the client's own socket, until this request's
  // outcome -- a blocking zmq_msg_recv() makes about half the syscalls of a
  // reactor iteration (ZMQ_EVENTS check, poll, then a receive and a final
  // EAGAIN receive), and syscalls are most of what a round trip costs.
  // Deadlines, retries, reopens, pings and other open requests' replies are
  // handled as usual (messages for them are taken while waiting), but the
  // reactor itself does not run: its other sockets, timers and posted tasks
  // wait until Call() returns.  Call it on the reactor's thread, never from
  // inside a reactor callback (including this client's).  An immediate
  // failure (closed client, no socket, bad service name) runs `done` before
  // Call() returns rather than being posted.
  void Call(std::string_view service, std::span<zmq::message_t> payload,
            const RequestOptions& options, Callback done);

  // Sends PING; `done` gets OK when the broker echoes it within `timeout`.
  // Echoes carry no id, so each echo completes the oldest pending ping.
  // With kSpread, each call pings the next broker of the list in turn.
  void Ping(std::chrono::milliseconds timeout, PingCallback done);
  void Ping(PingCallback done) {
    Ping(std::chrono::seconds(5), std::move(done));
  }

  // With kSpread and several brokers, the sum over their connections.
  const Stats& stats() const;
  // The client id of the current socket.
  std::uint32_t client_id() const;
  // The sequence number the next attempt will use.
  std::uint64_t next_sequence() const;
  // Requests that have not ended yet.
  std::size_t open_requests() const;
  // The broker the current socket connects to: with kFailover it moves
  // along the list at each failover; with kSpread the first of the list.
  const std::string& endpoint() const;

  // Test-only: closes the socket (with kSpread every broker's) and leaves
  // the client without one, as a reopen that cannot set up its new socket
  // does (requests then fail with kReasonNotConnected, pings with
  // FailedPrecondition).  Reactor thread only; production code never calls
  // it.
  void DropSocketForTesting();

 private:
  // One open request; pooled and reused.
  struct Slot {
    Callback done;
    std::string service;
    Frames payload;  // kept only while retries remain (for resending)
    Clock::time_point deadline;
    std::chrono::milliseconds timeout{0};
    int retries_left = 0;
    int attempts = 0;
    bool retry_no_workers = false;
    // Waiting for a resend after "zb:no-workers" (at resend_at, before
    // `deadline`); `backoff` is the wait before the next one.
    bool resend_pending = false;
    Clock::time_point resend_at;
    Clock::duration backoff{0};
    // Set by a "zb:no-workers" answer that was resent after (with its
    // text): a deadline that passes before the next answer ends the request
    // with that answer, not as a timeout.
    bool answered_no_workers = false;
    std::string no_workers_text;
    std::uint64_t socket_epoch = 0;  // socket of the latest attempt
    bool open = false;
    // Bumped whenever the request in this slot ends (Call() waits for it).
    std::uint64_t generation = 0;
    // Sequence ids of this request's attempts on the current socket.
    absl::InlinedVector<ccp::SequenceId, 2> sequences;
  };
  struct PendingPing {
    Clock::time_point deadline;
    std::uint64_t socket_epoch;
    PingCallback done;
  };

  // Adds every counter of `from` to `into`.
  static void AddStats(Stats& into, const Stats& from);
  // kSpread: the connection (child) the next request goes to, advancing the
  // round-robin; pings the dead-looking ones it passes over.
  ConsensusClient& PickChild(std::chrono::milliseconds probe_timeout);
  // kSpread child: an attempt or ping timed out and nothing was heard
  // since, or there is no socket.
  bool LooksDead() const { return silent_timeouts_ > 0 || !socket_; }

  // Does no I/O; Create() opens the first socket.
  ConsensusClient(Reactor& reactor, zmq::context_t& context,
                  std::vector<std::string> endpoints, Options options);

  absl::Status OpenSocket();
  void CloseSocket();
  void Reopen();
  // A new random client id (never 0 or the current one), numbers from 1.
  void RenewClientId();
  // Request() without the immediate failures: opens a slot, sends the
  // first attempt and returns the slot's index.
  std::uint32_t StartRequest(std::string_view service,
                             std::span<zmq::message_t> payload,
                             const RequestOptions& options, Callback done);
  // Why a request cannot be sent at all, or empty.
  std::string_view ImmediateFailure(std::string_view service) const;
  // One blocking wait of Call(): a message on the socket, or the earliest
  // deadline.
  void WaitOnce();
  // Runs the reactor for at most `wait` when nothing can arrive on the
  // socket; sleeps instead (at most 10 ms) when the reactor refuses because
  // Call() was made from inside one of its callbacks.
  void Idle(Clock::duration wait);
  void OnMessage(std::span<zmq::message_t> frames);
  void OnReply(const ccp::Header& h, std::span<zmq::message_t> payload);
  // Sends one attempt of slots_[index] (the frames of `payload`, moved, or
  // copies of the slot's kept payload when `payload` is null).  A new
  // attempt gets a new deadline; a resend after "zb:no-workers" keeps it.
  void SendAttempt(std::uint32_t index,
                   std::span<zmq::message_t>* payload = nullptr,
                   bool new_deadline = true);
  // True while the slot's payload must be kept for a later send.
  static bool KeepsPayload(const Slot& s) {
    return s.retries_left > 0 || s.retry_no_workers;
  }
  // After "zb:no-workers": schedules a resend and returns true when it fits
  // before the attempt's deadline.
  bool ScheduleNoWorkersResend(std::uint32_t index);
  void Finish(std::uint32_t index, Outcome outcome, FailedBy failed_by,
              std::string_view reason, std::span<zmq::message_t> payload);
  // Queues an immediate failure (request or ping) for delivery from
  // immediate_timer_, or from Close() at the latest.
  void PostFailure(Callback done, std::string_view reason);
  void PostPingFailure(PingCallback done, absl::Status status);
  void DeliverImmediate();
  void Expire(std::uint32_t index, Clock::time_point now);
  void NoteTimeout(std::uint64_t socket_epoch);
  void ArmTimer(Clock::time_point deadline);
  void OnTimer();
  Frames TakeSpare();
  void Close();

  Reactor& reactor_;
  zmq::context_t& context_;
  // The brokers of the endpoint list, in its order; never empty.
  const std::vector<std::string> endpoints_;
  // kFailover: the broker the current socket connects to.
  std::size_t current_ = 0;
  const Options options_;
  // Why the last OpenSocket() failed (only a reopen's can leave the client
  // without a socket); the reason of a ping refused for it.
  absl::Status socket_error_;
  bool closed_ = false;

  std::optional<zmq::socket_t> socket_;
  // The socket's registration; declared after it, so it goes first.
  Reactor::SocketWatch socket_watch_;
  std::uint64_t socket_epoch_ = 0;
  std::uint32_t client_id_ = 0;
  std::uint64_t next_sequence_ = 1;
  int timeouts_in_a_row_ = 0;
  // Timeouts since anything was last heard; unlike timeouts_in_a_row_ it
  // survives reopens (LooksDead()).
  int silent_timeouts_ = 0;
  absl::BitGen random_;

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t open_ = 0;
  // Sequence id of every live attempt on the current socket -> slot.  Keyed
  // by the whole id: after a "zb:bad-sequence" the client takes a new id on
  // the same socket, and attempts sent under the old one may still be
  // answered.
  absl::flat_hash_map<ccp::SequenceId, std::uint32_t> attempts_;
  std::deque<PendingPing> pings_;
  // Failures known at once, in the order they happened; delivered by a
  // zero-delay timer (never inside Request()/Ping()) or by Close().
  struct Immediate {
    Callback done;            // a request's, or
    PingCallback ping_done;   // a ping's
    std::string_view reason;  // for `done`: a kReason* constant
    absl::Status status;      // for `ping_done`
  };
  std::vector<Immediate> immediate_;
  Reactor::Timer immediate_timer_;

  // The one timer for every deadline.  It is armed at or before the earliest
  // deadline: a request that ends does not move it; when it fires it ends
  // what is due and re-arms for the earliest deadline left.
  Reactor::Timer timer_;
  Clock::time_point timer_at_;

  Frames out_;     // header frames of the message being sent; reused
  Frames copies_;  // zmq_msg_copy()s of a kept payload; reused
  Frames in_;      // frames received by Call(); reused
  std::vector<Frames> spare_;  // result vectors handed back by callbacks
  Stats stats_;

  // kSpread with several brokers: one single-broker client (kFailover, one
  // endpoint) per broker, in list order; this client then has no socket of
  // its own and hands every call to one of them.
  std::vector<std::unique_ptr<ConsensusClient>> children_;
  std::size_t next_child_ = 0;  // round-robin position of requests
  std::size_t next_ping_ = 0;   // round-robin position of Ping()
  // A child's probe PING is pending (PickChild() sends one at a time).
  bool probe_pending_ = false;
  // stats() of a spread client: the children's sum, made when read.
  mutable Stats spread_stats_;
};

}  // namespace zb

#endif  // ZBROKERS_CONSENSUS_CLIENT_H_
