// Copyright 2026 The zbrokers Authors.
//
// zb::MajordomoBroker is a Majordomo Protocol broker (MDP/0.1, ZeroMQ RFC 7)
// with the Majordomo Management Interface (RFC 8), running on a zb::Reactor.
//
// Clients (REQ, or DEALER sending an empty frame first) and workers (DEALER)
// connect to one ROUTER socket, which may be bound to several endpoints.  A
// client request for service S goes to the least-recently-used idle worker
// of S; when no worker of S is idle it waits in S's queue (bounded, with an
// expiry).  S's queue is fair across clients: each client (socket identity)
// has its own FIFO within S, and a worker that becomes free takes the
// oldest request of the next client in round-robin order, so a client with
// a huge backlog delays another client's request by at most one request of
// its own per turn; Options::max_requests_per_client bounds what one client
// may have open at all.  Requests for "mmi.*" services are answered by the
// broker itself: "mmi.service" answers "200" when the service named in the body
// has a worker and "404" otherwise; "mmi.zb.tag" answers "200" (request tags,
// below); every other "mmi.*" service answers "501".
//
// Request tags (a zbrokers extension, docs/protocols/mdp.md).  A client may
// send "", "zb.tag.MDPC01", service, tag, body... instead of a plain
// request.  The broker keeps the tag with the request and sends the worker
// exactly the RFC 7 REQUEST the plain request would have caused; the reply
// goes back as "", "zb.tag.MDPC01", service, tag, body..., so a client with
// many requests outstanding for one service matches every reply exactly.
// Plain RFC 7 clients and workers see nothing new.
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   absl::StatusOr<std::unique_ptr<zb::MajordomoBroker>> broker =
//       zb::MajordomoBroker::Create(reactor, ctx, {});
//   if (!broker.ok()) { ... }
//   if (absl::Status s = (*broker)->Bind("tcp://*:5555"); !s.ok()) { ... }
//   reactor.Run();
//
// What happens to requests that cannot be answered (RFC 7 has no error reply,
// so in every case below the client simply gets no reply and relies on its
// own timeout and retry; each case is counted in Stats):
//   - the service queue is full (Options::max_queue_per_service):
//     dropped_queue_full;
//   - its client already has Options::max_requests_per_client requests
//     open: dropped_max_requests_per_client;
//   - the request waited in the queue longer than Options::queue_expiry:
//     expired;
//   - its worker died, disconnected, was expired, or held it longer than
//     Options::reply_timeout (the worker is then sent DISCONNECT) while
//     serving it (with
//     prefetch: every request outstanding at that worker): the
//     request goes back to the FRONT of its service queue and is dispatched
//     again (workers are idempotent per RFC 7), at most
//     Options::max_redispatch times (redispatched); after that it is dropped
//     (failures);
//   - its worker's connection was gone when the broker sent it the request
//     (the worker had not expired yet): the request was never delivered, so
//     it goes back to the FRONT of its queue unchanged, whatever
//     max_redispatch says (counted in unroutable);
//   - the broker is draining: rejected_draining;
//   - the client is gone when the reply comes (ZMQ_ROUTER_MANDATORY reports
//     it): unroutable;
//   - the client is connected but its pipe is full (it does not read; the
//     ROUTER's send high-water mark): dropped_full_pipe.
//
// Prefetch (Options::worker_prefetch = N > 1, an opt-in extension of RFC 7).
// The broker keeps up to N requests outstanding at each worker instead of
// one; the extra ones wait in the worker's socket until it has replied to the
// previous ones, so any sequential RFC 7 worker copes (zb::MdpWorker hands
// each request to its handler as it arrives; see worker.h).  This hides
// the broker->worker->broker round trip, which otherwise bounds a worker's
// throughput.  Dispatch rule: a request goes to the worker with free credit
// (fewer than N outstanding) that has waited longest since it was last given
// a request; after a dispatch a worker with credit left goes to the back of
// that order, so requests spread over all workers (one each) before any
// worker gets a second one.  A REPLY settles the oldest outstanding request
// of that worker with the same client address (the REPLY carries it); a
// REPLY matching none of them is unexpected (DISCONNECT, as below).  Costs:
// a request can wait behind a slow one on the same worker (head-of-line
// blocking) even when another worker is idle, and when a worker fails all
// of its up to N requests are redispatched (or counted as failures) under
// the rule below, each with its own failure count.
//
// Workers.  Every worker, idle or busy, must send something (a HEARTBEAT if
// nothing else) at least every heartbeat_interval; one that stays silent for
// heartbeat_interval * heartbeat_liveness is dropped (and its request, if
// any, redispatched).  The broker sends a HEARTBEAT to every worker each
// interval in which it sent it nothing else.  A valid but unexpected command
// (a second READY, a REPLY matching no request outstanding at that worker, a
// REQUEST from a worker, a REPLY or HEARTBEAT from a peer that is not a
// registered worker, a READY for an "mmi.*" service) is answered with
// DISCONNECT and the peer is forgotten.  A malformed message is dropped and
// counted (and logged, rate-limited); when it comes from a registered worker
// that worker is treated as invalid: it is disconnected as above.
//
// Ownership and threading.  The broker owns its ROUTER socket (two, with an
// internal endpoint: BindInternal()) and registers it with the reactor; the
// context and the reactor must outlive it.  Every method must be called on the
// reactor's thread (construct and destroy the broker there too, e.g. through
// ReactorThread::Invoke).  Hooks are called on that thread, synchronously; they
// must not destroy the broker.

#ifndef ZBROKERS_MAJORDOMO_BROKER_H_
#define ZBROKERS_MAJORDOMO_BROKER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/log.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

class MajordomoBroker {
 public:
  using Duration = std::chrono::milliseconds;

  // Options::max_message_size's default: 16 MiB.
  static constexpr std::int64_t kDefaultMaxMessageSize = 16 << 20;

  struct Options {
    // Heartbeat period towards workers, and the period of the broker's single
    // sweep timer (heartbeats, worker expiry, queue expiry).  Workers must use
    // the same interval (RFC 7).
    Duration heartbeat_interval{2500};
    // A worker silent for heartbeat_interval * heartbeat_liveness is dead.
    int heartbeat_liveness = 3;
    // Most requests waiting per service; a request beyond it is dropped.
    // 0 means unbounded.
    std::size_t max_queue_per_service = 100'000;
    // A queued request older than this (since it reached the broker) is
    // dropped.  Checked on every sweep, so it fires up to one sweep late.
    // Zero means never.  RFC 7 asks brokers to expire requests for services
    // that have no worker; this applies to every queued request.
    Duration queue_expiry{30'000};
    // How many times a request whose worker failed is dispatched again.
    int max_redispatch = 1;
    // The longest a request may stay outstanding at a worker.  When it
    // passes, that worker is sent DISCONNECT and forgotten (a worker that
    // heartbeats but never answers would otherwise hold the request for
    // ever), and its requests are redispatched or failed under
    // max_redispatch.  Checked by the sweep, so it fires up to one
    // heartbeat_interval late.  Zero means never.
    Duration reply_timeout{60'000};
    // Most requests one client (socket identity) may have open in the
    // broker at once -- queued or outstanding at a worker, over all
    // services.  A request beyond it is dropped (RFC 7 has no error reply:
    // the client's own timeout applies) and counted in
    // dropped_max_requests_per_client, logged rate-limited.  0 means no bound.
    // With the fair queues below, it keeps one client's backlog from filling a
    // service's queue (max_queue_per_service) and pushing out others.
    std::size_t max_requests_per_client = 10'000;
    // Most services known at once (a service exists while it has workers or
    // queued requests).  Beyond it, a request naming a new service is
    // dropped (dropped_max_services) and a READY for a new service is
    // refused with DISCONNECT (workers_refused); both are logged,
    // rate-limited.  Guards against a client inventing service names
    // without end.  0 means no bound.
    std::size_t max_services = 10'000;
    // Most workers registered at once, over all services.  Beyond it a
    // READY is refused with DISCONNECT (workers_refused, logged
    // rate-limited); the worker retries after its reconnect delay.  0 means
    // no bound.
    std::size_t max_workers = 10'000;
    // Most requests outstanding at one worker (an opt-in extension of RFC 7,
    // see "Prefetch" above and docs/majordomo.md).  1, the default, is
    // RFC 7's one request per worker at a time.  Must be between 1 and
    // kMaxWorkerPrefetch: Create() fails with InvalidArgument otherwise.
    int worker_prefetch = 1;
    // The largest message FRAME the broker accepts, in bytes (ZMQ_MAXMSGSIZE
    // on its ROUTER socket; libzmq checks every frame on its own, so a
    // message of many frames may be larger in all).  A peer that sends a
    // bigger frame is disconnected by libzmq before the frame is read in
    // full; nothing of that message reaches the broker, and the peer's
    // socket reconnects as it would after any connection loss.  0 means no
    // limit.  16 MiB by default: far above what a request broker carries,
    // far below what lets one peer balloon the broker's memory.
    std::int64_t max_message_size = kDefaultMaxMessageSize;
    // ZMQ_LINGER of the ROUTER sockets: how long the replies and commands
    // already queued may still go out after the broker is destroyed.  Not
    // 0: libzmq 4.3 aborts the process (an assertion in
    // session_base_t::clean_pipes()) when a socket closed with linger 0
    // sees the connection of a peer fail while a multipart message to that
    // peer is half written, as to a worker that stopped reading.  While a
    // linger runs the pipe waits for its delimiter and the rest of the
    // message can still be read, so only a connection that fails at the
    // instant the linger runs out is left to that race.  >= 0 (a broker
    // never blocks its context's termination for ever): Create() fails with
    // InvalidArgument otherwise.  The same option, with the same default,
    // as ConsensusBroker's.
    std::chrono::milliseconds linger{100};
  };
  static constexpr int kMaxWorkerPrefetch = 1000;

  // Counters since construction.  Per-service entries exist for every service
  // the broker currently knows.
  struct ServiceStats {
    std::size_t workers = 0;       // registered workers
    std::size_t idle_workers = 0;  // of which can take a request now
                                   // (idle, or with prefetch credit left)
    std::size_t queued = 0;        // requests waiting
  };
  struct Stats {
    std::uint64_t requests = 0;         // client requests accepted (incl. mmi)
    std::uint64_t mmi_requests = 0;     // of which answered by MMI
    std::uint64_t tagged_requests = 0;  // of which carried a request tag
    std::uint64_t replies = 0;          // replies sent to clients (incl. mmi)
    std::uint64_t failures = 0;         // dropped after max_redispatch failures
    std::uint64_t redispatched = 0;     // requests re-queued after a failure
    std::uint64_t expired = 0;          // dropped after queue_expiry
    std::uint64_t dropped_queue_full = 0;    // service queue full
    std::uint64_t dropped_max_services = 0;  // new service beyond the cap
    std::uint64_t dropped_max_requests_per_client =
        0;                                // max_requests_per_client
    std::uint64_t rejected_draining = 0;  // new requests while draining
    // Requests (MMI included) the request gate refused: dropped while this
    // broker is the passive half of a fail-over pair
    // (set_request_gate()).  Not in `requests`.
    std::uint64_t requests_refused_passive = 0;
    // Requests (MMI included) from internal peers (BindInternal()), which
    // the gate is never asked about.  Also in `requests`.
    std::uint64_t requests_internal = 0;
    std::uint64_t malformed = 0;          // messages dropped as invalid
    std::uint64_t unroutable = 0;         // sends to a peer that was gone
    std::uint64_t dropped_full_pipe = 0;  // sends refused because the
                                          // peer's pipe was full (HWM)
    std::uint64_t workers_joined = 0;
    std::uint64_t workers_refused = 0;       // READY beyond max_workers or
                                             // max_services
    std::uint64_t workers_left = 0;          // sent DISCONNECT themselves
    std::uint64_t workers_expired = 0;       // heartbeat silence
    std::uint64_t reply_timeouts = 0;        // workers disconnected because
                                             // a request passed reply_timeout
    std::uint64_t workers_disconnected = 0;  // by the broker (protocol error,
                                             // drain)
    std::uint64_t disconnects_sent = 0;
    std::size_t clients = 0;  // client records kept (gauge): clients with
                              // requests open, and idle ones for up to two
                              // sweeps
    absl::flat_hash_map<std::string, ServiceStats> services;
  };

  // Worker membership changes.  The hook is called for every one, not
  // rate-limited (the log hook already carries rate-limited lines for
  // them), so it must be cheap.
  struct WorkerEvent {
    enum class Kind {
      kJoined,        // READY accepted
      kLeft,          // the worker sent DISCONNECT
      kExpired,       // heartbeat silence
      kDisconnected,  // the broker sent DISCONNECT (protocol error, drain,
                      // unroutable)
    };
    Kind kind;
    std::string_view identity;  // raw socket identity (may be binary)
    std::string_view service;
    std::string_view reason;  // human-readable, for kDisconnected
  };
  using WorkerEventHook = absl::AnyInvocable<void(const WorkerEvent&)>;

  // Called once per reply forwarded to a client (not for MMI), with the time
  // from the request's arrival at the broker to the reply's.
  using LatencyHook = absl::AnyInvocable<void(
      std::string_view service, std::chrono::nanoseconds latency)>;

  // Log lines (zbrokers/common/log.h): worker joins and leaves
  // (LogLevel::kInfo), refused workers and requests dropped by a cap,
  // malformed messages (LogLevel::kWarning).  Each kind is
  // rate-limited by its own zb::LogLimiter (joins and leaves: 10 lines per
  // second; refusals and malformed messages: 5), and what was held back is
  // reported: in the next line of that kind, or by the sweep in one
  // summary line.  So a flooding peer cannot flood the log.  Default:
  // warnings to stderr.
  using LogHook = zb::LogHook;

  // Checks `options`, opens the ROUTER socket and registers it and the
  // sweep timer with `reactor`; binds nothing yet (Bind()).  Fails with
  // InvalidArgument naming the option when one is out of range
  // (worker_prefetch outside 1..kMaxWorkerPrefetch, a negative linger), or
  // with the reactor's
  // error when the registration fails; nothing is left registered then.
  // Out-of-range timings are not errors: a heartbeat_interval <= 0 counts
  // as 1 ms, a heartbeat_liveness < 1 as 1, a max_redispatch < 0 as 0.
  static absl::StatusOr<std::unique_ptr<MajordomoBroker>> Create(
      Reactor& reactor, zmq::context_t& context, Options options);
  // Sends nothing more; unregisters and closes the sockets (with
  // Options::linger for what is already queued).
  ~MajordomoBroker();

  MajordomoBroker(const MajordomoBroker&) = delete;
  MajordomoBroker& operator=(const MajordomoBroker&) = delete;

  // Binds the ROUTER socket to `endpoint` (may be called several times).
  // "tcp://127.0.0.1:*" picks a free port; see endpoints() for the result.
  // Fails with InvalidArgument, binding nothing, for an endpoint libzmq
  // refuses ("cannot bind EP: why") or a tcp port out of range.  `security`
  // applies to this endpoint only (CURVE or plaintext,
  // zbrokers/security/curve.h).
  absl::Status Bind(const std::string& endpoint,
                    const ListenerSecurity& security = {});
  // Binds an internal endpoint: `endpoint` must be "inproc://..."
  // (InvalidArgument otherwise, or when libzmq refuses it), reachable only
  // by code in this process that shares the broker's zmq context.  Its
  // peers are served by the same broker, workers and clients alike, on a
  // second ROUTER socket made at the first call; their client requests are
  // never put to the request gate (set_request_gate()) and are counted in
  // requests_internal as well as in requests.  For the broker's own
  // process: zb-broker's Titanic, whose dispatcher is a client of this
  // broker and must neither be dropped by a passive broker nor make it
  // take over (docs/ha.md).  The socket an internal peer came in on is the
  // proof that it is one: nothing it sends can claim it, and an outside
  // peer that presents an identity of the internal namespace (libzmq
  // reserves identities starting with a zero byte) is dropped as
  // malformed.  Workers see an internal client's address with a prefix
  // they never need to read.  Not in endpoints(); Monitor() does not
  // watch it.
  absl::Status BindInternal(const std::string& endpoint);
  // Starts libzmq's socket monitor on the ROUTER: `events` (ZMQ_EVENT_*)
  // are published on the inproc PAIR endpoint `monitor_endpoint`, e.g. for
  // a zb::HandshakeMonitor (zbrokers/security/handshake_monitor.h).
  absl::Status Monitor(const std::string& monitor_endpoint, int events);
  // The resolved endpoints bound so far (ZMQ_LAST_ENDPOINT of each Bind).
  const std::vector<std::string>& endpoints() const { return endpoints_; }

  void set_worker_event_hook(WorkerEventHook hook);
  void set_latency_hook(LatencyHook hook);
  void set_log_hook(LogHook hook);
  // The fail-over pair's gate (zbrokers/ha/node.h): asked once per client
  // request, MMI included, on the reactor thread, before anything else
  // looks at it (a draining broker drops requests without asking).  false
  // drops the request without an answer (RFC 7 has no error reply),
  // counted as requests_refused_passive, so that the client times out and
  // moves on to the next broker of its list.  Workers are never gated: a
  // passive broker keeps its workers, and neither are the requests of
  // internal peers (BindInternal()).  Empty, the default: every request is
  // served.
  using RequestGate = absl::AnyInvocable<bool()>;
  void set_request_gate(RequestGate gate);

  // A snapshot of the counters and per-service gauges.
  Stats stats() const;

  // Graceful shutdown (the same contract as ConsensusBroker::Drain).
  // From now on the broker takes no new requests; the requests open at the
  // call may finish for up to `grace`.  When `grace` has passed, every
  // request still open is failed with this protocol's shutdown reason.
  // `done`, when given, is posted to the reactor exactly once, when no
  // request is open any more: never called inside Drain() itself, always
  // after the last answer was sent.  A later Drain() keeps the first
  // deadline; its `done` is posted too (at once when already drained).
  // Destroying the broker before then ends the drain: each `done` not yet
  // posted is posted by the destructor.
  //
  // Here: a new request is dropped (rejected_draining; RFC 7 has no error
  // reply); requests already queued or being served go on.  When none is
  // left, or when `grace` has passed, every worker is sent DISCONNECT and
  // forgotten and the requests still open are dropped (counted as
  // expired).  The broker then stays inert (it drops everything) until
  // destroyed: drained() is true.
  void Drain(Duration grace, absl::AnyInvocable<void()> done);
  bool draining() const;
  bool drained() const;

  // Requests queued or being served (outstanding at a worker), over all
  // services.
  std::size_t open_requests() const;
  // Registered workers: of `service`, and of all services.
  std::size_t worker_count(std::string_view service) const;
  std::size_t worker_count() const;

  // Test-only entry points, for the fuzzer
  // (brokers/majordomo/broker_fuzz.cc), which drives the broker without
  // running the reactor.  HandleForTesting() hands `frames` ([identity,
  // body...]) to the message handler exactly as if the ROUTER socket had
  // received them; SweepForTesting() does the sweep timer's work once;
  // SetClockForTesting() replaces the clock that both read (nullptr:
  // Reactor::Clock::now), so that heartbeat and queue expiry can be reached
  // without waiting.  Reactor thread only; production code never calls them.
  void HandleForTesting(std::span<zmq::message_t> frames);
  void SweepForTesting();
  void SetClockForTesting(
      absl::AnyInvocable<Reactor::Clock::time_point() const> clock);

 private:
  class Impl;
  explicit MajordomoBroker(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::vector<std::string> endpoints_;
};

}  // namespace zb

#endif  // ZBROKERS_MAJORDOMO_BROKER_H_
