// Copyright 2026 The zbrokers Authors.
//
// zb::ConsensusWorker serves one service of a consensus (CCp100) broker on a
// zb::Reactor.  It connects a DEALER socket to the broker, announces itself
// with READY (service, heartbeat interval, heartbeat liveness), hands every
// REQUEST to a handler, and sends the handler's answer back as
// REPLY_SUCCESS or REPLY_FAILURE.  docs/consensus.md is the user guide;
// docs/protocols/ccp.md describes the wire protocol.
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   absl::StatusOr<std::unique_ptr<zb::ConsensusWorker>> worker =
//       zb::ConsensusWorker::Create(
//           reactor, ctx, "tcp://127.0.0.1:5556", "echo",
//           [](std::span<zmq::message_t> payload,
//              zb::ConsensusWorker::Responder responder) {
//             responder.Succeed(payload);  // echo: moves the frames back out
//           });
//   if (!worker.ok()) { ... }  // a bad endpoint, service or option
//   reactor.Run();
//
// Answering later.  The handler receives a move-only Responder.  It may
// answer at once, keep the responder and answer from a later callback, or
// move it (together with the payload frames it needs; the span is only valid
// during the call) to another thread and answer there: an answer given on a
// thread other than the reactor's is posted to the reactor, which sends it
// (through a zb::ReplyChannel, zbrokers/common/reply_channel.h).  A
// responder destroyed without an answer answers REPLY_FAILURE with the
// single frame kUnansweredReason, so no request is left hanging because its
// responder was dropped (for example when the handler threw): the policy of
// both workers for an unanswered request, docs/reliability.md "Unanswered
// requests".
//
// Heartbeats and reconnects.  The worker runs one periodic timer per broker
// session at half the heartbeat interval (never a timer per message; sending
// only sets a flag), on multiples of that period on the steady clock, so that
// the workers sharing a reactor tick together.  It sends HEARTBEAT when it has
// sent nothing else for one interval, so the broker hears from it at least
// every 1.5 intervals.  When it has heard nothing from the broker (no request,
// no heartbeat) for interval x liveness (checked at tick granularity, never
// early), it treats the broker as gone: it sends DISCONNECT on its socket
// and closes it with Options::linger (a broker that registered that socket
// late then drops the registration instead of keeping it next to the new
// one), opens a NEW socket (the broker sees a new identity) and sends READY
// again.  A DISCONNECT from the broker triggers the same reconnect at once
// (without a DISCONNECT back).  Answers for requests received before a
// reconnect are dropped (the broker that sent them forgot them).
//
// Many brokers.  `endpoint` may name several brokers, comma-separated
// ("tcp://a:5556,tcp://b:5556", parsed by zb::SplitEndpointList): the worker
// then registers with every one of them at once, one *session* per broker,
// each with its own socket, READY, heartbeats, liveness check, refusal
// backoff and reconnects, all handing requests to the one handler.  A
// session that loses its broker reconnects on its own; the others go on
// serving.  An answer goes back through the session its request came on,
// never to another broker, and is dropped (counted in dropped_answers) when
// that session has reconnected since.  This serves a fail-over pair (the
// backup already has the worker when it takes over) as well as many brokers
// sharing a pool of workers (docs/consensus.md "One worker, many brokers").
// With one endpoint the worker is exactly the single-broker worker.
//
// Shutdown.  Shutdown() (also run by the destructor) sends DISCONNECT to
// every broker and closes the sockets with ZMQ_LINGER = Options::linger, so
// the DISCONNECTs get out while the zmq::context_t lives.  Afterwards
// answers are dropped.
//
// Ownership and threads.  The worker belongs to the reactor's thread: create
// it, call its methods and destroy it there (with zb::ReactorThread, inside
// Invoke()).  The reactor and the context must outlive the worker.  Do not
// destroy the worker from inside its own handler (post the destruction).
// Responders are the exception: a Responder may be moved to and used on any
// thread, and it stays safe to use after the worker, and then its reactor,
// are gone (the answer is then dropped).

#ifndef ZBROKERS_CONSENSUS_WORKER_H_
#define ZBROKERS_CONSENSUS_WORKER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/common/reply_channel.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

// Options of a zb::ConsensusWorker (ConsensusWorker::Options).  Declared
// outside the class so that `Options options = {}` works as a default
// argument.
struct ConsensusWorkerOptions {
  // Announced in READY.  The worker heartbeats at this period and the
  // broker expects to hear from the worker within interval x liveness.
  // Sent on the wire in whole milliseconds (at least 1).
  std::chrono::milliseconds heartbeat_interval{1000};
  // Announced in READY (1..255; the wire field is CCp100's "heartbeat
  // retries").  The worker reconnects after interval x liveness without a
  // message from the broker.
  int heartbeat_liveness = 3;
  // ZMQ_LINGER of the sockets closed by Shutdown() and by a reconnect after
  // the broker went silent: how long libzmq keeps trying to deliver their
  // DISCONNECT (and answers still queued).
  std::chrono::milliseconds linger{200};
  // CURVE encryption and authentication (docs/security.md): the broker's
  // public key and this worker's key pair.  Unset = plaintext.
  std::optional<CurveClientKeys> curve = std::nullopt;
  // A DISCONNECT that answers READY before anything else came from the
  // broker means the broker refused the registration (its worker or
  // service cap is reached, or these heartbeat settings are out of its
  // bounds).  The worker then sends READY again after this wait, doubled
  // after each refusal in a row up to refusal_backoff_max, instead of at
  // once (which would make a refused worker spin).
  std::chrono::milliseconds refusal_backoff{100};
  std::chrono::milliseconds refusal_backoff_max{10000};
  // ZMQ_MAXMSGSIZE of the worker's socket: the largest frame, in bytes, it
  // accepts from the broker; 0 = no limit.  libzmq checks it per frame,
  // before allocating, and drops the connection when a bigger one arrives.
  // libzmq 4.3 does not reconnect a connection it dropped that way: the
  // request is lost (the broker fails it at its deadline) and the worker
  // reconnects when the broker has been silent for interval x liveness.  Not
  // checked over inproc://.  The broker's default (16 MiB).
  std::int64_t max_message_size = ccp::kDefaultMaxMessageSize;
};

class ConsensusWorker {
 public:
  using Clock = Reactor::Clock;

  // The payload of the REPLY_FAILURE sent for a responder destroyed without
  // an answer.  It does not start with "zb:", so clients see it as a worker
  // failure (see ccp::IsBrokerFailure).
  static constexpr std::string_view kUnansweredReason = "worker:unanswered";

  using Options = ConsensusWorkerOptions;

  // Counters, for tests and monitoring.  Read them on the reactor thread.
  struct Stats {
    std::uint64_t requests = 0;         // REQUESTs handed to the handler
    std::uint64_t replies_success = 0;  // REPLY_SUCCESS sent
    std::uint64_t replies_failure = 0;  // REPLY_FAILURE sent
    std::uint64_t unanswered = 0;       // responders dropped unanswered
    std::uint64_t dropped_answers = 0;  // answers for a gone connection
    std::uint64_t send_failures = 0;    // sends refused (high-water mark)
    std::uint64_t heartbeats_sent = 0;
    std::uint64_t reconnects = 0;  // new sockets after the first
    std::uint64_t malformed = 0;   // messages from the broker rejected
    std::uint64_t refusals = 0;    // READYs answered with DISCONNECT
    // Every counter above sums all sessions.  These two are the sessions:
    // `brokers` is the number of endpoints, `brokers_connected` how many of
    // them have answered the session's latest READY with something other
    // than DISCONNECT (a heartbeat or a request) and not been lost since.
    std::uint64_t brokers = 0;
    std::uint64_t brokers_connected = 0;
  };

  // Answers one request.  Move-only.  The first Succeed()/Fail() answers;
  // later calls, and calls on a moved-from responder, do nothing.
  //
  // Succeed()/Fail() move the payload frames out of what they are given (a
  // span of frames you own, e.g. the handler's payload span or a Frames
  // lvalue, or a Frames rvalue).  An empty payload is sent as one empty
  // frame.  On the reactor thread the answer is sent at once, without any
  // allocation; on any other thread it is posted to the reactor.
  //
  // Thread-safety: one Responder must not be used by two threads at once;
  // different responders may be used concurrently.
  class Responder {
   public:
    Responder() = default;  // answers nothing; pending() is false
    Responder(Responder&& other) noexcept;
    // Answers this responder's own request with failure first when it is
    // still pending.
    Responder& operator=(Responder&& other) noexcept;
    Responder(const Responder&) = delete;
    Responder& operator=(const Responder&) = delete;
    // Answers REPLY_FAILURE [kUnansweredReason] when still pending.
    ~Responder();

    void Succeed(std::span<zmq::message_t> payload);
    void Succeed(Frames&& payload) { Succeed(std::span(payload)); }
    void Fail(std::span<zmq::message_t> payload);
    void Fail(Frames&& payload) { Fail(std::span(payload)); }

    // True until the request has been answered (or the responder moved).
    bool pending() const { return channel_ != nullptr; }
    // The request's sequence id as the broker sent it.
    const ccp::SequenceId& sequence() const { return sequence_; }

   private:
    friend class ConsensusWorker;
    Responder(std::shared_ptr<ReplyChannel<ConsensusWorker>> channel,
              ccp::SequenceId sequence, std::uint32_t session,
              std::uint64_t connection);
    void Answer(ccp::MessageType type, std::span<zmq::message_t> payload);

    std::shared_ptr<ReplyChannel<ConsensusWorker>> channel_;
    ccp::SequenceId sequence_;
    std::uint32_t session_ = 0;     // which broker the request came from
    std::uint64_t connection_ = 0;  // which of that session's sockets
  };

  // Called on the reactor thread for every REQUEST.  `payload` is valid only
  // during the call; move frames out to keep them.  It may be empty: a 2011
  // client sends a request without payload frames when its message encodes
  // to nothing (ConsensusClient sends one empty frame instead).
  using Handler =
      absl::AnyInvocable<void(std::span<zmq::message_t> payload, Responder)>;

  // Connects to every broker of `endpoint` (one endpoint or a
  // comma-separated list, see "Many brokers") and sends each READY for
  // `service`.  InvalidArgument for a service name that is not 1..255 bytes,
  // a missing handler, options out of range or a list SplitEndpointList()
  // refuses; the socket's error (OpenDealer) for an endpoint libzmq refuses.
  static absl::StatusOr<std::unique_ptr<ConsensusWorker>> Create(
      Reactor& reactor, zmq::context_t& context, std::string endpoint,
      std::string service, Handler handler, Options options = {});
  // Shutdown(), then closes the reply channel: outstanding responders'
  // answers are dropped from then on.
  ~ConsensusWorker();

  ConsensusWorker(const ConsensusWorker&) = delete;
  ConsensusWorker& operator=(const ConsensusWorker&) = delete;

  // Sends DISCONNECT to every broker, closes the sockets and stops
  // heartbeating.  Idempotent.
  void Shutdown();

  const Stats& stats() const { return stats_; }
  const std::string& service() const { return service_; }
  const Options& options() const { return options_; }
  // True between Create() and Shutdown() while a session's socket is open.
  bool running() const;

 private:
  // One broker of the endpoint list: its socket, registration, heartbeats
  // and reconnects (worker.cc).  The worker owns one per endpoint, for its
  // whole life, so a session's index in sessions_ names it in Responders.
  class Session;

  // Only stores its arguments; Create() opens the sessions.
  ConsensusWorker(Reactor& reactor, zmq::context_t& context,
                  std::string service, Handler handler, Options options);

  // The first multiple of `period` on the steady clock after `after`.
  static Clock::time_point NextTick(Clock::time_point after,
                                    Clock::duration period);
  // Sends an answer through session `session` unless it belongs to an
  // earlier connection of it.  (Reached by Responder, a nested class,
  // through the reply channel.)
  void SendAnswer(ccp::MessageType type, const ccp::SequenceId& sequence,
                  std::uint32_t session, std::uint64_t connection,
                  std::span<zmq::message_t> payload, bool unanswered);

  Reactor& reactor_;
  zmq::context_t& context_;
  const std::string service_;
  Handler handler_;
  const Options options_;
  // Carries answers from Responders on any thread; closed by the
  // destructor, before anything else goes.
  ReplyChannel<ConsensusWorker>::Binding channel_;
  // Every session ticks at this period, on the same grid.
  Clock::duration tick_period_{};
  Frames out_;  // header frames of the message being sent; reused
  // While the handler runs: the request's received [""][tag][type][service]
  // [sequence] frames and the session they came on, so that an answer given
  // during the call reuses them instead of building new ones (the
  // raw-libzmq way).  Empty (and null) otherwise.
  std::span<zmq::message_t> current_envelope_;
  const Session* current_session_ = nullptr;
  ccp::SequenceId current_sequence_;
  Stats stats_;
  // Declared last: a session uses everything above, so it goes first.
  std::vector<std::unique_ptr<Session>> sessions_;
};

}  // namespace zb

#endif  // ZBROKERS_CONSENSUS_WORKER_H_
