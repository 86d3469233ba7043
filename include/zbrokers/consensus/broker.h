// Copyright 2026 The zbrokers Authors.
//
// zb::ConsensusBroker is the CCp100 consensus broker: every request goes to
// every worker of its service, and the client gets REPLY_SUCCESS only when
// all of them answered success (with all their payloads, in registration
// order), REPLY_FAILURE otherwise.  docs/protocols/ccp.md describes the
// protocol and every rule the broker applies (sequence rules, deadlines,
// heartbeats, failure reason codes).
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   absl::StatusOr<std::unique_ptr<zb::ConsensusBroker>> broker =
//       zb::ConsensusBroker::Create(reactor, ctx, {});
//   if (!broker.ok()) ...
//   if (absl::Status s = (*broker)->Bind("tcp://127.0.0.1:5556"); !s.ok()) ...
//   reactor.Run();
//
// Threading.  The broker lives on the reactor it is given: create it, call
// its methods and destroy it on that reactor's owner thread (with a
// zb::ReactorThread, inside Invoke()).  It never locks.
//
// Ownership.  The broker owns its ROUTER socket and registers it with the
// reactor; the reactor and the context must outlive the broker.  The
// destructor answers every open request with REPLY_FAILURE "zb:shutdown",
// sends DISCONNECT to every worker, unregisters from the reactor, and
// removes the socket files of the ipc:// endpoints it bound.
//
// Performance.  The request/reply path does no heap allocation in steady
// state: request records come from a pool and keep their buffers, lookups
// use string_views into the received frames, payload frames are moved (the
// fan-out uses zmq_msg_copy, which shares large buffers), and one reusable
// frame vector serves every send.  One sweep timer per broker handles
// heartbeats, worker expiry, request deadlines and idle clients.

#ifndef ZBROKERS_CONSENSUS_BROKER_H_
#define ZBROKERS_CONSENSUS_BROKER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/log.h"
#include "zbrokers/common/log_limiter.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

class ConsensusBroker {
 public:
  // Receives the broker's log lines (set_log_hook()): worker joins and
  // leaves at kInfo, refused READYs and malformed messages at kWarning.
  // Each kind is rate-limited (zb::LogLimiter: joins and leaves 10 lines a
  // second, refusals and malformed messages 5), and what was held back is
  // reported in a summary line, so a flooding peer cannot flood the log.
  // Called on the reactor thread.
  using LogHook = zb::LogHook;

  // Create() refuses (InvalidArgument, naming the member) values outside
  // the range given with each member.
  struct Options {
    // A request not answered by every worker within this time fails with
    // "zb:timeout".  >= 0 (0: every request fails at the next sweep).
    std::chrono::milliseconds request_timeout{5000};
    // Period of the single sweep timer: heartbeats, worker expiry, request
    // deadlines and client expiry are up to one period late.  > 0.
    std::chrono::milliseconds sweep_interval{100};
    // A client record with no open request and no request for this long is
    // forgotten (its next request is then adopted like a new client's).
    // >= 0.
    std::chrono::milliseconds client_idle_timeout{std::chrono::minutes(10)};
    // Messages with more frames than this (after the envelope) are
    // malformed; 0 = no bound.
    std::size_t max_frames = 4096;
    // Longest accepted service name.  >= 1.
    std::size_t max_service_size = 255;
    // The heartbeat settings a READY may announce.  A worker is kept until
    // interval x liveness (the READY's "heartbeat retries" field) of
    // silence, so absurd values (0xffffffff ms x 255) would keep a worker
    // whose socket is gone for months.  A READY above either bound is
    // refused: the broker answers DISCONNECT and counts it
    // (refused_heartbeat).  The defaults allow up to 10 minutes of silence,
    // far above zbrokers' worker (1 s x 3) and the 2011 worker (10 s x 3).
    // max_heartbeat_interval > 0, max_heartbeat_liveness >= 1.
    std::chrono::milliseconds max_heartbeat_interval{60000};
    int max_heartbeat_liveness = 10;
    // Most workers registered at once, and most services known at once (a
    // service is known while it has workers or open requests); 0 = no
    // bound.  A READY beyond either is refused with DISCONNECT and counted
    // (workers_refused, refused_services).
    std::size_t max_workers = 10000;
    std::size_t max_services = 10000;
    // The largest message FRAME the broker accepts, in bytes (ZMQ_MAXMSGSIZE
    // on its ROUTER socket; libzmq checks every frame on its own, so a
    // message of many frames may be larger in all).  A peer that sends a
    // bigger frame is disconnected by libzmq before the frame is read in
    // full: nothing of that message reaches the broker (it is not counted
    // anywhere), and the peer's socket reconnects as after any connection
    // loss.  0 = no limit; >= 0.  Not checked over inproc:// (libzmq).
    std::int64_t max_message_size = ccp::kDefaultMaxMessageSize;
    // Most client records kept at once (each holds a client id's sequence
    // state; one socket can present any of 2^32 ids).  A new client id
    // beyond it evicts the least recently used record with no open request
    // (clients_evicted); the evicted client's next request is adopted like
    // a new client's.  When every record has open requests the new client's
    // request is answered "zb:busy" (refused_clients).  0 = no bound.
    std::size_t max_clients = 100000;
    // Most requests one client id may have open at once.  A request beyond
    // it is answered at once with REPLY_FAILURE "zb:busy" (client_busy) and
    // never reaches a worker, so one greedy client cannot fill the workers'
    // queues and make other clients' requests time out.  0 = no bound.
    std::size_t max_requests_per_client = 10000;
    // ZMQ_LINGER of the ROUTER socket, so that the last DISCONNECTs and
    // replies get out when the broker is destroyed.  >= 0 (a broker never
    // blocks its context's termination for ever).
    std::chrono::milliseconds linger{100};
  };

  // Counters since construction.  Every request a client sends ends in
  // exactly one of replies_success / replies_failure (or, if the client is
  // gone, unroutable / dropped_replies).
  struct Stats {
    // REQUESTs received: well-formed ones, and malformed ones whose
    // sequence id could be read (they are answered too).
    std::uint64_t requests = 0;
    std::uint64_t replies_success = 0;   // REPLY_SUCCESS sent to clients
    std::uint64_t replies_failure = 0;   // REPLY_FAILURE sent to clients
    std::uint64_t timeouts = 0;          // failures because of the deadline
    std::uint64_t worker_failures = 0;   // failures because a worker failed
    std::uint64_t no_workers = 0;        // failures because of no workers
    std::uint64_t refused_draining = 0;  // failures because of Drain()
    std::uint64_t malformed = 0;         // unparseable messages
    // Malformed REQUESTs whose sequence id could be read: answered
    // "zb:malformed" (or "zb:bad-sequence"), never dropped.  Also counted
    // in `malformed` and in `requests`.
    std::uint64_t malformed_requests = 0;
    std::uint64_t rejected_sequence = 0;  // requests breaking sequence rules
    std::uint64_t unroutable = 0;         // sends to a peer that is gone
    // Replies and PING echoes to clients refused by a full queue (the
    // client's high-water mark).
    std::uint64_t dropped_replies = 0;
    // Requests failed with "zb:worker-busy": a worker's queue was full, so
    // the fan-out could not reach every worker.
    std::uint64_t worker_busy = 0;
    std::uint64_t late_replies = 0;  // worker replies matching nothing
    std::uint64_t pings = 0;         // PINGs echoed
    std::uint64_t heartbeats_sent = 0;
    std::uint64_t workers_joined = 0;
    std::uint64_t workers_left = 0;     // by DISCONNECT or unroutable
    std::uint64_t workers_expired = 0;  // by heartbeat silence
    // READYs refused with DISCONNECT: heartbeat settings out of bounds,
    // max_workers reached, max_services reached (a new service).
    std::uint64_t refused_heartbeat = 0;
    std::uint64_t workers_refused = 0;
    std::uint64_t refused_services = 0;
    std::uint64_t clients_expired = 0;  // idle client records forgotten
    // Idle client records forgotten to make room under max_clients.
    std::uint64_t clients_evicted = 0;
    // Requests answered "zb:busy": their client had max_requests_per_client
    // requests open (client_busy), or they came from a new client id while
    // max_clients records all had open requests (refused_clients).
    std::uint64_t client_busy = 0;
    std::uint64_t refused_clients = 0;
    // Client ids first seen at a sequence number other than 1 (a client that
    // outlived a broker restart or its idle record) and adopted there.
    std::uint64_t clients_adopted = 0;
    // Client messages (REQUESTs, PINGs) the request gate refused: dropped
    // without an answer while this broker is the passive half of a
    // fail-over pair (set_request_gate()).  Not in `requests`.
    std::uint64_t requests_refused_passive = 0;
  };

  // Checks `options` (InvalidArgument naming the first member out of its
  // range), creates the ROUTER socket (ZMQ_ROUTER_MANDATORY on) and
  // registers it and the sweep timer with `reactor`; a socket or reactor
  // error is returned, never thrown, and leaves nothing registered.  Call
  // Bind() to listen.  Call it on the reactor's owner thread.
  static absl::StatusOr<std::unique_ptr<ConsensusBroker>> Create(
      Reactor& reactor, zmq::context_t& context, Options options);
  ~ConsensusBroker();

  ConsensusBroker(const ConsensusBroker&) = delete;
  ConsensusBroker& operator=(const ConsensusBroker&) = delete;

  // Binds the ROUTER to `endpoint` (may be called several times, e.g.
  // "tcp://127.0.0.1:*" for an ephemeral port).  The resolved endpoint is
  // appended to endpoints().  Fails with InvalidArgument, binding nothing,
  // for an endpoint libzmq refuses ("cannot bind EP: why") or a tcp port out
  // of range.  `security` applies to this endpoint only (CURVE or
  // plaintext, zbrokers/security/curve.h).
  absl::Status Bind(const std::string& endpoint,
                    const ListenerSecurity& security = {});
  // Starts libzmq's socket monitor on the ROUTER: `events` (ZMQ_EVENT_*)
  // are published on the inproc PAIR endpoint `monitor_endpoint`, e.g. for
  // a zb::HandshakeMonitor (zbrokers/security/handshake_monitor.h).
  absl::Status Monitor(const std::string& monitor_endpoint, int events);
  // Every bound endpoint as resolved by ZeroMQ (ZMQ_LAST_ENDPOINT), in Bind
  // order.
  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // Graceful shutdown (the same contract as MajordomoBroker::Drain).
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
  // Here: a new REQUEST is answered at once with REPLY_FAILURE
  // "zb:shutdown" (refused_draining); an open request runs to its end (all
  // answers, a failure, or its own deadline) or, when the grace ends first,
  // is answered REPLY_FAILURE "zb:shutdown".  Workers stay registered and
  // keep being heartbeated until the broker is destroyed.
  void Drain(std::chrono::milliseconds grace, absl::AnyInvocable<void()> done);
  bool draining() const { return draining_; }

  // Called once per request answered by its workers (REPLY_SUCCESS, or a
  // worker's REPLY_FAILURE forwarded), with the time from the request's
  // arrival at the broker to the answer; not for requests the broker fails
  // itself (deadline, no workers, ...).  For metrics: it runs on the hot
  // path, so keep it cheap.  Without a hook no clock is read for it.
  using LatencyHook = absl::AnyInvocable<void(
      std::string_view service, std::chrono::nanoseconds latency)>;
  void set_latency_hook(LatencyHook hook) { latency_hook_ = std::move(hook); }
  // Where the log lines go (see LogHook); an empty hook, the default, writes
  // them to stderr as "consensus LEVEL: line".
  void set_log_hook(LogHook hook) { log_hook_ = std::move(hook); }
  // The fail-over pair's gate (zbrokers/ha/node.h): asked once per client
  // message (a REQUEST, a malformed REQUEST whose sequence id can be read,
  // a PING), on the reactor thread, before anything else looks at it (a
  // draining broker answers "zb:shutdown" without asking).  false drops the
  // message without an answer, counted as requests_refused_passive, so that
  // the client times out and moves on to the next broker of its list.
  // Workers are never gated: a passive broker keeps its workers.  Empty,
  // the default: every request is served.
  using RequestGate = absl::AnyInvocable<bool()>;
  void set_request_gate(RequestGate gate) { request_gate_ = std::move(gate); }

  // A snapshot of the counters.
  Stats stats() const { return stats_; }
  // Registered workers per service, services sorted by name.  Allocates; for
  // reports, not for the hot path.
  std::vector<std::pair<std::string, std::size_t>> workers_per_service() const;
  // Registered workers: of `service`, and of all services.
  std::size_t worker_count(std::string_view service) const;
  std::size_t worker_count() const { return workers_.size(); }
  std::size_t open_requests() const { return open_.size(); }
  std::size_t client_count() const { return clients_.size(); }

  // Test-only entry points, for the fuzzer
  // (brokers/consensus/broker_fuzz.cc), which drives the broker without
  // running the reactor.  HandleForTesting() hands `frames` ([identity,
  // body...]) to the message handler exactly as if the ROUTER socket had
  // received them; SweepForTesting() does the sweep timer's work once.  Reactor
  // thread only; production code never calls them.
  void HandleForTesting(std::span<zmq::message_t> frames) { OnMessage(frames); }
  void SweepForTesting() { Sweep(); }
  // Checks the broker's own bookkeeping: every open request counted by its
  // client record, the idle list holding exactly the records without open
  // requests, and the caps (max_clients, max_requests_per_client) held.
  // An error says what is wrong.  Walks everything; for the fuzzer.
  absl::Status CheckInvariantsForTesting() const;

 private:
  using Clock = Reactor::Clock;
  struct Worker;
  struct Service;
  struct Client;
  struct Request;

  // Does no I/O; Create() calls Init().
  ConsensusBroker(Reactor& reactor, Options options);
  // The socket and the reactor registrations.
  absl::Status Init(zmq::context_t& context);

  void OnMessage(std::span<zmq::message_t> frames);
  void OnReady(std::span<zmq::message_t> frames, const ccp::Header& h);
  // Answers an accepted READY with a HEARTBEAT at once (drops the worker
  // when it is unroutable already).
  void AcknowledgeReady(Worker* w);
  void OnRequest(std::span<zmq::message_t> frames,
                 std::span<zmq::message_t> body, const ccp::Header& h);
  // A REQUEST that ParseHeader() rejected but whose sequence id `id` could
  // be read: answered "zb:malformed" when it keeps the sequence rules.
  void OnMalformedRequest(std::span<zmq::message_t> frames,
                          std::span<zmq::message_t> body,
                          const ccp::SequenceId& id, const absl::Status& error);
  // Applies the client sequence rules to a request: returns its client's
  // record, updated, or nullptr after answering "zb:bad-sequence".
  Client* AcceptSequence(std::span<zmq::message_t> frames,
                         std::span<zmq::message_t> body,
                         const ccp::SequenceId& id, Clock::time_point now);
  // The idle list of client records (open == 0), least recently used first.
  void LinkIdle(Client* c);  // at the back: most recently used
  void UnlinkIdle(Client* c);
  // Forgets a record with no open request.
  void EraseClient(Client* c);
  void OnReply(std::span<zmq::message_t> frames, std::span<zmq::message_t> body,
               const ccp::Header& h);
  void OnDisconnect(std::string_view identity, const ccp::Header& h);
  void Sweep();
  // True when the request gate refuses a client message (counted).
  bool RefusedByGate();

  // Reject a request at once (before it becomes a Request record).
  void FailNow(std::span<zmq::message_t> frames, std::span<zmq::message_t> body,
               std::string_view reason, std::string_view text);
  // Complete an open request and release its record.
  void Succeed(Request* r);
  void Fail(Request* r, std::string_view reason, std::string_view text);
  void FailWithWorkerPayload(Request* r, std::span<zmq::message_t> payload);
  void Release(Request* r);
  // Reports `r`'s latency to the hook, if any.
  void NoteLatency(const Request* r);
  // Posts every drain callback once draining and nothing is open.
  void MaybeDrained();
  // The grace period ended: fails what is still open.
  void EndGrace();
  // Removes `w` from every open request's quorum and from the broker.
  enum class Leave {
    kDisconnect,
    kExpired,
    kUnroutable,
    kMoved,
    kRefused,  // a repeated READY out of bounds
    kShutdown
  };
  void RemoveWorker(Worker* w, Leave why);
  // Sends out_ to its first frame's peer; counts and classifies failures.
  // Returns the send status.
  absl::Status SendOut();
  absl::Status SendToWorker(Worker* w, ccp::MessageType type);
  // Refuses a READY: DISCONNECT to its sender, the refusal logged.
  void RefuseReady(std::span<zmq::message_t> frames, const ccp::Header& h,
                   std::string_view why);
  void NoteMalformed(std::string_view identity, const absl::Status& error);
  // Logs what the limiters held back (from the sweep, and at the end).
  void FlushLogLimiters(Clock::time_point now, bool force);
  void Log(LogLevel level, std::string_view line);

  Reactor& reactor_;
  Options options_;
  ccp::ParseLimits limits_;
  zmq::socket_t router_;
  // The registrations; declared after the socket they watch, so they go
  // first (the destructor also ends them explicitly, in its own order).
  Reactor::SocketWatch router_watch_;
  Reactor::Timer sweep_timer_;
  Reactor::Timer drain_timer_;  // the grace period, while it runs
  std::vector<std::string> endpoints_;
  Stats stats_;
  bool draining_ = false;
  std::vector<absl::AnyInvocable<void()>> on_drained_;
  LatencyHook latency_hook_;
  LogHook log_hook_;
  RequestGate request_gate_;

  absl::flat_hash_map<std::string, std::unique_ptr<Service>> services_;
  absl::flat_hash_map<std::string, std::unique_ptr<Worker>> workers_;
  absl::flat_hash_map<std::uint32_t, std::unique_ptr<Client>> clients_;
  // Records without open requests, least recently used first.
  Client* idle_head_ = nullptr;
  Client* idle_tail_ = nullptr;
  absl::flat_hash_map<ccp::SequenceId, Request*> open_;
  // Open requests in arrival order = deadline order (one timeout for all).
  Request* fifo_head_ = nullptr;
  Request* fifo_tail_ = nullptr;
  std::vector<std::unique_ptr<Request>> pool_;

  // Scratch space reused by every send and sweep.
  Frames out_;
  std::vector<std::pair<Worker*, Leave>> scratch_leaving_;

  Clock::time_point next_client_sweep_;
  // Log rate limits, one per kind of line.
  LogLimiter joins_log_{{.period = std::chrono::seconds(1), .burst = 10}};
  LogLimiter leaves_log_{{.period = std::chrono::seconds(1), .burst = 10}};
  LogLimiter refused_log_{{.period = std::chrono::seconds(1), .burst = 5}};
  LogLimiter malformed_log_{{.period = std::chrono::seconds(1), .burst = 5}};
};

}  // namespace zb

#endif  // ZBROKERS_CONSENSUS_BROKER_H_
