// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/worker.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "brokers/common/dealer.h"
#include "zbrokers/common/endpoint.h"

namespace zb {

// --- Responder ---------------------------------------------------------------

ConsensusWorker::Responder::Responder(
    std::shared_ptr<ReplyChannel<ConsensusWorker>> channel,
    ccp::SequenceId sequence, std::uint32_t session, std::uint64_t connection)
    : channel_(std::move(channel)),
      sequence_(sequence),
      session_(session),
      connection_(connection) {}

ConsensusWorker::Responder::Responder(Responder&& other) noexcept
    : channel_(std::move(other.channel_)),
      sequence_(other.sequence_),
      session_(other.session_),
      connection_(other.connection_) {}

ConsensusWorker::Responder& ConsensusWorker::Responder::operator=(
    Responder&& other) noexcept {
  if (this != &other) {
    if (channel_) {
      zmq::message_t reason(kUnansweredReason.data(), kUnansweredReason.size());
      Answer(ccp::MessageType::kReplyFailure, std::span(&reason, 1));
    }
    channel_ = std::move(other.channel_);
    sequence_ = other.sequence_;
    session_ = other.session_;
    connection_ = other.connection_;
  }
  return *this;
}

ConsensusWorker::Responder::~Responder() {
  if (channel_) {
    zmq::message_t reason(kUnansweredReason.data(), kUnansweredReason.size());
    Answer(ccp::MessageType::kReplyFailure, std::span(&reason, 1));
  }
}

void ConsensusWorker::Responder::Succeed(std::span<zmq::message_t> payload) {
  Answer(ccp::MessageType::kReplySuccess, payload);
}

void ConsensusWorker::Responder::Fail(std::span<zmq::message_t> payload) {
  Answer(ccp::MessageType::kReplyFailure, payload);
}

void ConsensusWorker::Responder::Answer(ccp::MessageType type,
                                        std::span<zmq::message_t> payload) {
  // Taking the channel makes this responder answered whatever happens next.
  std::shared_ptr<ReplyChannel<ConsensusWorker>> channel = std::move(channel_);
  if (!channel) return;
  const bool unanswered = type == ccp::MessageType::kReplyFailure &&
                          payload.size() == 1 &&
                          View(payload[0]) == kUnansweredReason;
  if (channel->on_target_thread()) {
    // The hot path: delivered before Send() returns, so the payload span
    // may be used as it is (no copy, no allocation).
    channel->Send([&](ConsensusWorker& worker) {
      worker.SendAnswer(type, sequence_, session_, connection_, payload,
                        unanswered);
    });
    return;
  }
  // Another thread: the frames travel to the reactor inside the delivery.
  Frames frames;
  frames.reserve(payload.size());
  for (zmq::message_t& f : payload) frames.push_back(std::move(f));
  channel->Send([type, sequence = sequence_, session = session_,
                 connection = connection_, unanswered,
                 frames = std::move(frames)](ConsensusWorker& worker) mutable {
    worker.SendAnswer(type, sequence, session, connection, std::span(frames),
                      unanswered);
  });
}

// --- Session -----------------------------------------------------------------

// One broker's connection.  Everything here is per broker; what every
// session shares (handler, reply channel, counters, the header scratch
// frames) is the worker's.  Reactor thread only, like the worker.
class ConsensusWorker::Session {
 public:
  Session(ConsensusWorker& worker, std::uint32_t index, std::string endpoint)
      : worker_(worker), index_(index), endpoint_(std::move(endpoint)) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens the socket, sends READY and starts the tick timer.
  absl::Status Start() {
    if (absl::Status s = OpenSocket(); !s.ok()) return s;
    ArmTick(NextTick(Clock::now(), worker_.tick_period_));
    return absl::OkStatus();
  }

  // Sends DISCONNECT, closes the socket and stops the timers.  Idempotent.
  void Shutdown() {
    tick_timer_.Reset();
    ready_timer_.Reset();
    if (!socket_) return;
    SendDisconnect();
    CloseSocket(worker_.options_.linger);
  }

  bool open() const { return socket_.has_value(); }

  // Sends an answer unless it belongs to an earlier connection.
  void SendAnswer(ccp::MessageType type, const ccp::SequenceId& sequence,
                  std::uint64_t connection, std::span<zmq::message_t> payload);

 private:
  absl::Status OpenSocket();
  void CloseSocket(std::chrono::milliseconds linger);
  void SendDisconnect();
  // A new socket and READY.  `abandoned`: the broker went silent, so the
  // old socket says DISCONNECT first (see Reconnect()); otherwise the broker
  // itself dropped us.
  void Reconnect(bool abandoned);
  void OnMessage(std::span<zmq::message_t> frames);
  void OnTick();
  // Schedules the next OnTick() at `deadline`, a point of the tick grid.
  void ArmTick(Clock::time_point deadline);
  // Sends head + payload (moved) as one message; false when refused.
  bool Send(std::span<zmq::message_t> head, std::span<zmq::message_t> payload);
  // Send(worker_.out_, payload), then clears it for the next message.
  bool SendOut(std::span<zmq::message_t> payload);
  void SendHeartbeat();
  void SendReady();
  // Counts this broker in Stats::brokers_connected, or no longer.
  void SetConnected(bool connected) {
    if (connected == connected_) return;
    connected_ = connected;
    if (connected) {
      ++worker_.stats_.brokers_connected;
    } else {
      --worker_.stats_.brokers_connected;
    }
  }

  ConsensusWorker& worker_;
  const std::uint32_t index_;  // in worker_.sessions_
  const std::string endpoint_;
  std::optional<zmq::socket_t> socket_;
  // The socket's registration; declared after it, so it goes first.
  Reactor::SocketWatch socket_watch_;
  // Counts this session's sockets; a Responder remembers the one its
  // request came on.
  std::uint64_t connection_ = 0;
  Reactor::Timer tick_timer_;
  Clock::time_point tick_deadline_;  // of the armed tick
  bool sent_since_tick_ = false;
  int quiet_ticks_ = 0;  // ticks in a row with nothing sent
  bool heard_since_tick_ = false;
  // Since the last READY: whether the broker sent anything but DISCONNECT
  // (then a DISCONNECT is not a refusal of that READY).
  bool heard_since_ready_ = false;
  bool connected_ = false;  // counted in Stats::brokers_connected
  Clock::duration next_refusal_backoff_{};
  Reactor::Timer ready_timer_;  // READY again after a refusal
  Clock::time_point last_heard_;
};

// Ticks fall on multiples of the period on the steady clock, the same grid
// for every worker (and session) with that period: N workers sharing a
// reactor then tick in one wake-up per period instead of N, and every
// wake-up of a reactor costs a pass over all its sockets (with 256 workers
// on one reactor, unaligned ticks woke it about 5 times per round trip).
ConsensusWorker::Clock::time_point ConsensusWorker::NextTick(
    Clock::time_point after, Clock::duration period) {
  return Clock::time_point((after.time_since_epoch() / period + 1) * period);
}

void ConsensusWorker::Session::ArmTick(Clock::time_point deadline) {
  tick_deadline_ = deadline;
  // Capturing only `this` keeps the callback in AnyInvocable's inline
  // storage: re-arming allocates nothing.
  // A non-empty callback: At() cannot refuse it.
  tick_timer_ = *worker_.reactor_.At(deadline, [this] {
    // The next tick stays on the grid; ticks the loop was too late for are
    // skipped, not fired in a burst.
    const Clock::duration period = worker_.tick_period_;
    Clock::time_point next = tick_deadline_ + period;
    const Clock::time_point now = Clock::now();
    if (next <= now) next = NextTick(now, period);
    ArmTick(next);
    OnTick();
  });
}

absl::Status ConsensusWorker::Session::OpenSocket() {
  // Linger 0: closing a socket on reconnect drops what is queued for a
  // broker that is gone; Shutdown() and a reconnect after silence raise the
  // linger for their DISCONNECT.
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      worker_.reactor_, worker_.context_, endpoint_,
      {.max_message_size = worker_.options_.max_message_size,
       .curve = worker_.options_.curve},
      "ConsensusWorker", [this](std::span<zmq::message_t> f) { OnMessage(f); });
  if (!dealer.ok()) return dealer.status();
  socket_.emplace(std::move(dealer->socket));
  socket_watch_ = std::move(dealer->watch);
  ++connection_;
  last_heard_ = Clock::now();
  heard_since_tick_ = false;
  SendReady();
  return absl::OkStatus();
}

void ConsensusWorker::Session::SendReady() {
  heard_since_ready_ = false;
  Frames& out = worker_.out_;
  out.clear();
  out.emplace_back();  // DEALER delimiter
  ccp::AppendReady(
      out, worker_.service_,
      static_cast<std::uint32_t>(worker_.options_.heartbeat_interval.count()),
      static_cast<std::uint8_t>(worker_.options_.heartbeat_liveness));
  SendOut({});
}

void ConsensusWorker::Session::CloseSocket(std::chrono::milliseconds linger) {
  SetConnected(false);
  if (!socket_) return;
  // Safe inside this socket's own handler: the reactor never calls a removed
  // socket's handler again.
  socket_watch_.Reset();
  socket_->set(zmq::sockopt::linger, static_cast<int>(linger.count()));
  socket_.reset();
}

void ConsensusWorker::Session::SendDisconnect() {
  Frames& out = worker_.out_;
  out.clear();
  out.emplace_back();
  ccp::AppendDisconnect(out, worker_.service_);
  SendOut({});
}

void ConsensusWorker::Session::Reconnect(bool abandoned) {
  ++worker_.stats_.reconnects;
  if (abandoned && socket_) {
    // The broker may have registered this socket after all, its answer
    // late (a broker that came back while this socket was connecting, or
    // one that stalled): DISCONNECT tells it to drop that registration,
    // which it would otherwise keep next to the new one until a send to it
    // failed or it expired -- and a request fanned out to it alone failed
    // with "zb:worker-left".  Kept for Options::linger, in case the
    // connection is only now being made.
    SendDisconnect();
    CloseSocket(worker_.options_.linger);
  } else {
    CloseSocket(std::chrono::milliseconds(0));
  }
  // The endpoint and options were good for the first socket; should a new
  // one still fail, this session stays quiet (and running() turns false
  // when it was the last one open).
  OpenSocket().IgnoreError();
}

bool ConsensusWorker::Session::Send(std::span<zmq::message_t> head,
                                    std::span<zmq::message_t> payload) {
  const absl::Status s = SendFrames(*socket_, head, payload);
  if (!s.ok()) {
    ++worker_.stats_.send_failures;
    return false;
  }
  sent_since_tick_ = true;
  return true;
}

bool ConsensusWorker::Session::SendOut(std::span<zmq::message_t> payload) {
  const bool sent = Send(worker_.out_, payload);
  worker_.out_.clear();
  return sent;
}

void ConsensusWorker::Session::SendHeartbeat() {
  Frames& out = worker_.out_;
  out.clear();
  out.emplace_back();
  ccp::AppendHeader(out, ccp::MessageType::kHeartbeat);
  if (SendOut({})) ++worker_.stats_.heartbeats_sent;
}

void ConsensusWorker::Session::SendAnswer(ccp::MessageType type,
                                          const ccp::SequenceId& sequence,
                                          std::uint64_t connection,
                                          std::span<zmq::message_t> payload) {
  Stats& stats = worker_.stats_;
  if (!socket_ || connection != connection_) {
    ++stats.dropped_answers;
    return;
  }
  zmq::message_t empty;
  std::span<zmq::message_t> body =
      payload.empty() ? std::span(&empty, 1) : payload;
  bool sent;
  if (worker_.current_session_ == this && !worker_.current_envelope_.empty() &&
      sequence == worker_.current_sequence_) {
    // Answered while its handler runs: send the request's own delimiter,
    // tag, service and sequence frames back, straight from the received
    // message (moved into the socket, not rebuilt), with a new type frame.
    // The received type frame is replaced, not written to: it may share its
    // buffer with another message.
    const char type_byte = static_cast<char>(type);
    std::span<zmq::message_t> envelope = worker_.current_envelope_;
    envelope[1 + ccp::kTypeIndex] = zmq::message_t(&type_byte, 1);
    worker_.current_envelope_ = {};  // used up
    sent = Send(envelope, body);
  } else {
    Frames& out = worker_.out_;
    out.clear();
    out.emplace_back();
    ccp::AppendHeader(out, type, worker_.service_, sequence);
    sent = SendOut(body);
  }
  if (!sent) return;
  if (type == ccp::MessageType::kReplySuccess) {
    ++stats.replies_success;
  } else {
    ++stats.replies_failure;
  }
}

void ConsensusWorker::Session::OnMessage(std::span<zmq::message_t> frames) {
  heard_since_tick_ = true;
  Stats& stats = worker_.stats_;
  absl::StatusOr<std::span<zmq::message_t>> body = ccp::DealerBody(frames);
  if (!body.ok()) {
    ++stats.malformed;
    return;
  }
  absl::StatusOr<ccp::Header> h = ccp::ParseHeader(*body);
  if (!h.ok()) {
    ++stats.malformed;
    return;
  }
  if (h->type != ccp::MessageType::kDisconnect) {
    // The broker talks to us: our READY was accepted.
    heard_since_ready_ = true;
    next_refusal_backoff_ = Clock::duration::zero();
    SetConnected(true);
  }
  switch (h->type) {
    case ccp::MessageType::kRequest: {
      if (h->service != worker_.service_) {
        // Not ours: answer failure rather than leave the request open.
        ++stats.malformed;
        zmq::message_t reason("worker:wrong-service", 20);
        SendAnswer(ccp::MessageType::kReplyFailure, h->sequence, connection_,
                   std::span(&reason, 1));
        return;
      }
      ++stats.requests;
      // Offer the received header frames to an answer given during the call;
      // the guard withdraws them however the handler returns.
      struct Withdraw {
        ConsensusWorker& worker;
        ~Withdraw() {
          worker.current_envelope_ = {};
          worker.current_session_ = nullptr;
        }
      } withdraw{worker_};
      worker_.current_envelope_ = frames.first(1 + ccp::kPayloadIndex);
      worker_.current_session_ = this;
      worker_.current_sequence_ = h->sequence;
      worker_.handler_(body->subspan(h->payload_index),
                       Responder(worker_.channel_.channel(), h->sequence,
                                 index_, connection_));
      return;
    }
    case ccp::MessageType::kHeartbeat:
      return;
    case ccp::MessageType::kDisconnect:
      if (!heard_since_ready_) {
        // The broker answered our READY with DISCONNECT: it refused it (a
        // cap, or our heartbeat settings).  Ask again later, not at once.
        ++stats.refusals;
        const Options& options = worker_.options_;
        if (next_refusal_backoff_ == Clock::duration::zero()) {
          next_refusal_backoff_ = options.refusal_backoff;
        }
        if (!ready_timer_) {
          ready_timer_ = *worker_.reactor_.After(next_refusal_backoff_, [this] {
            ready_timer_.Release();  // fired: nothing left to cancel
            if (socket_) SendReady();
          });
        }
        next_refusal_backoff_ = std::min<Clock::duration>(
            next_refusal_backoff_ * 2, options.refusal_backoff_max);
        return;
      }
      // The broker dropped us (e.g. it expired us); register again.
      Reconnect(/*abandoned=*/false);
      return;
    default:
      ++stats.malformed;
      return;
  }
}

void ConsensusWorker::Session::OnTick() {
  const Clock::time_point now = Clock::now();
  const Options& options = worker_.options_;
  if (heard_since_tick_) {
    // The tick time is an upper bound for when we last heard from the broker,
    // so the silence measured below is never longer than the real one.
    heard_since_tick_ = false;
    last_heard_ = now;
  } else if (now - last_heard_ >=
             options.heartbeat_interval * options.heartbeat_liveness) {
    Reconnect(/*abandoned=*/true);
    return;
  }
  // Ticks come every half interval: two quiet ticks in a row mean nothing
  // was sent for at least one interval (and at most 1.5).
  quiet_ticks_ = sent_since_tick_ ? 0 : quiet_ticks_ + 1;
  sent_since_tick_ = false;
  if (quiet_ticks_ >= 2) {
    quiet_ticks_ = 0;
    SendHeartbeat();
    sent_since_tick_ = false;
  }
}

// --- ConsensusWorker ---------------------------------------------------------

ConsensusWorker::ConsensusWorker(Reactor& reactor, zmq::context_t& context,
                                 std::string service, Handler handler,
                                 Options options)
    : reactor_(reactor),
      context_(context),
      service_(std::move(service)),
      handler_(std::move(handler)),
      options_(options) {
  out_.reserve(8);
}

absl::StatusOr<std::unique_ptr<ConsensusWorker>> ConsensusWorker::Create(
    Reactor& reactor, zmq::context_t& context, std::string endpoint,
    std::string service, Handler handler, Options options) {
  if (service.empty() || service.size() > 255) {
    return absl::InvalidArgumentError(
        "ConsensusWorker: the service name must be 1..255 bytes");
  }
  if (!handler) {
    return absl::InvalidArgumentError("ConsensusWorker: no handler");
  }
  if (options.heartbeat_interval < std::chrono::milliseconds(1) ||
      options.heartbeat_interval.count() > 0xffffffffLL) {
    return absl::InvalidArgumentError(
        "ConsensusWorker: heartbeat_interval must be 1 ms .. 2^32-1 ms");
  }
  if (options.heartbeat_liveness < 1 || options.heartbeat_liveness > 255) {
    return absl::InvalidArgumentError(
        "ConsensusWorker: heartbeat_liveness must be 1..255");
  }
  absl::StatusOr<std::vector<std::string>> endpoints =
      SplitEndpointList(endpoint);
  if (!endpoints.ok()) {
    return absl::InvalidArgumentError(
        "ConsensusWorker: " + std::string(endpoints.status().message()));
  }
  std::unique_ptr<ConsensusWorker> worker(new ConsensusWorker(
      reactor, context, std::move(service), std::move(handler), options));
  worker->channel_ = ReplyChannel<ConsensusWorker>::Open(reactor, *worker);
  worker->tick_period_ = std::max<Clock::duration>(
      options.heartbeat_interval / 2, std::chrono::microseconds(500));
  worker->stats_.brokers = endpoints->size();
  worker->sessions_.reserve(endpoints->size());
  for (std::string& ep : *endpoints) {
    const auto index = static_cast<std::uint32_t>(worker->sessions_.size());
    worker->sessions_.push_back(
        std::make_unique<Session>(*worker, index, std::move(ep)));
    // On an error the worker goes, and with it every session started so far
    // (each sends its DISCONNECT).
    if (absl::Status s = worker->sessions_.back()->Start(); !s.ok()) return s;
  }
  return worker;
}

ConsensusWorker::~ConsensusWorker() {
  Shutdown();
  channel_.Close();
}

void ConsensusWorker::Shutdown() {
  for (const std::unique_ptr<Session>& session : sessions_) {
    session->Shutdown();
  }
}

bool ConsensusWorker::running() const {
  return std::any_of(
      sessions_.begin(), sessions_.end(),
      [](const std::unique_ptr<Session>& s) { return s->open(); });
}

void ConsensusWorker::SendAnswer(ccp::MessageType type,
                                 const ccp::SequenceId& sequence,
                                 std::uint32_t session,
                                 std::uint64_t connection,
                                 std::span<zmq::message_t> payload,
                                 bool unanswered) {
  if (unanswered) ++stats_.unanswered;
  sessions_[session]->SendAnswer(type, sequence, connection, payload);
}

}  // namespace zb
