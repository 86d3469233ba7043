// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/worker.h"

#include <algorithm>
#include <utility>

#include "brokers/common/dealer.h"

namespace zb {

// --- Responder ---------------------------------------------------------------

ConsensusWorker::Responder::Responder(
    std::shared_ptr<ReplyChannel<ConsensusWorker>> channel,
    ccp::SequenceId sequence, std::uint64_t connection)
    : channel_(std::move(channel)),
      sequence_(sequence),
      connection_(connection) {}

ConsensusWorker::Responder::Responder(Responder&& other) noexcept
    : channel_(std::move(other.channel_)),
      sequence_(other.sequence_),
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
      worker.SendAnswer(type, sequence_, connection_, payload, unanswered);
    });
    return;
  }
  // Another thread: the frames travel to the reactor inside the delivery.
  Frames frames;
  frames.reserve(payload.size());
  for (zmq::message_t& f : payload) frames.push_back(std::move(f));
  channel->Send([type, sequence = sequence_, connection = connection_,
                 unanswered,
                 frames = std::move(frames)](ConsensusWorker& worker) mutable {
    worker.SendAnswer(type, sequence, connection, std::span(frames),
                      unanswered);
  });
}

// --- ConsensusWorker ---------------------------------------------------------

ConsensusWorker::ConsensusWorker(Reactor& reactor, zmq::context_t& context,
                                 std::string endpoint, std::string service,
                                 Handler handler, Options options)
    : reactor_(reactor),
      context_(context),
      endpoint_(std::move(endpoint)),
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
  std::unique_ptr<ConsensusWorker> worker(
      new ConsensusWorker(reactor, context, std::move(endpoint),
                          std::move(service), std::move(handler), options));
  worker->channel_ = ReplyChannel<ConsensusWorker>::Open(reactor, *worker);
  if (absl::Status s = worker->OpenSocket(); !s.ok()) return s;
  worker->tick_period_ = std::max<Clock::duration>(
      options.heartbeat_interval / 2, std::chrono::microseconds(500));
  worker->ArmTick(NextTick(Clock::now(), worker->tick_period_));
  return worker;
}

// Ticks fall on multiples of the period on the steady clock, the same grid
// for every worker with that period: N workers sharing a reactor then tick
// in one wake-up per period instead of N, and every wake-up of a reactor
// costs a pass over all its sockets (with 256 workers on one reactor,
// unaligned ticks woke it about 5 times per round trip).
ConsensusWorker::Clock::time_point ConsensusWorker::NextTick(
    Clock::time_point after, Clock::duration period) {
  return Clock::time_point((after.time_since_epoch() / period + 1) * period);
}

void ConsensusWorker::ArmTick(Clock::time_point deadline) {
  tick_deadline_ = deadline;
  // Capturing only `this` keeps the callback in AnyInvocable's inline
  // storage: re-arming allocates nothing.
  // A non-empty callback: at() cannot refuse it.
  tick_timer_ = *reactor_.At(deadline, [this] {
    // The next tick stays on the grid; ticks the loop was too late for are
    // skipped, not fired in a burst.
    Clock::time_point next = tick_deadline_ + tick_period_;
    const Clock::time_point now = Clock::now();
    if (next <= now) next = NextTick(now, tick_period_);
    ArmTick(next);
    OnTick();
  });
}

ConsensusWorker::~ConsensusWorker() {
  Shutdown();
  channel_.Close();
}

absl::Status ConsensusWorker::OpenSocket() {
  // Linger 0: closing a socket on reconnect drops what is queued for a
  // broker that is gone; Shutdown() raises the linger for its DISCONNECT.
  absl::StatusOr<zmq::socket_t> socket = OpenDealer(
      context_, endpoint_,
      {.max_message_size = options_.max_message_size, .curve = options_.curve},
      "ConsensusWorker");
  if (!socket.ok()) return socket.status();
  socket_.emplace(*std::move(socket));
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
      *socket_, [this](std::span<zmq::message_t> f) { OnMessage(f); });
  if (!watch.ok()) {
    socket_.reset();
    return watch.status();
  }
  socket_watch_ = *std::move(watch);
  ++connection_;
  last_heard_ = Clock::now();
  heard_since_tick_ = false;
  SendReady();
  return absl::OkStatus();
}

void ConsensusWorker::SendReady() {
  heard_since_ready_ = false;
  out_.clear();
  out_.emplace_back();  // DEALER delimiter
  ccp::AppendReady(
      out_, service_,
      static_cast<std::uint32_t>(options_.heartbeat_interval.count()),
      static_cast<std::uint8_t>(options_.heartbeat_liveness));
  SendOut({});
}

void ConsensusWorker::CloseSocket(std::chrono::milliseconds linger) {
  if (!socket_) return;
  // Safe inside this socket's own handler: the reactor never calls a removed
  // socket's handler again.
  socket_watch_.Reset();
  socket_->set(zmq::sockopt::linger, static_cast<int>(linger.count()));
  socket_.reset();
}

void ConsensusWorker::Reconnect() {
  ++stats_.reconnects;
  CloseSocket(std::chrono::milliseconds(0));
  // The endpoint and options were good for the first socket; should a new
  // one still fail, running() turns false and the worker stays quiet.
  OpenSocket().IgnoreError();
}

void ConsensusWorker::Shutdown() {
  tick_timer_.Reset();
  ready_timer_.Reset();
  if (!socket_) return;
  out_.clear();
  out_.emplace_back();
  ccp::AppendDisconnect(out_, service_);
  SendOut({});
  CloseSocket(options_.linger);
}

bool ConsensusWorker::Send(std::span<zmq::message_t> head,
                           std::span<zmq::message_t> payload) {
  const absl::Status s = SendFrames(*socket_, head, payload);
  if (!s.ok()) {
    ++stats_.send_failures;
    return false;
  }
  sent_since_tick_ = true;
  return true;
}

bool ConsensusWorker::SendOut(std::span<zmq::message_t> payload) {
  const bool sent = Send(out_, payload);
  out_.clear();
  return sent;
}

void ConsensusWorker::SendHeartbeat() {
  out_.clear();
  out_.emplace_back();
  ccp::AppendHeader(out_, ccp::MessageType::kHeartbeat);
  if (SendOut({})) ++stats_.heartbeats_sent;
}

void ConsensusWorker::SendAnswer(ccp::MessageType type,
                                 const ccp::SequenceId& sequence,
                                 std::uint64_t connection,
                                 std::span<zmq::message_t> payload,
                                 bool unanswered) {
  if (unanswered) ++stats_.unanswered;
  if (!socket_ || connection != connection_) {
    ++stats_.dropped_answers;
    return;
  }
  zmq::message_t empty;
  std::span<zmq::message_t> body =
      payload.empty() ? std::span(&empty, 1) : payload;
  bool sent;
  if (!current_envelope_.empty() && sequence == current_sequence_) {
    // Answered while its handler runs: send the request's own delimiter,
    // tag, service and sequence frames back, straight from the received
    // message (moved into the socket, not rebuilt), with a new type frame.
    // The received type frame is replaced, not written to: it may share its
    // buffer with another message.
    const char type_byte = static_cast<char>(type);
    current_envelope_[1 + ccp::kTypeIndex] = zmq::message_t(&type_byte, 1);
    std::span<zmq::message_t> envelope = current_envelope_;
    current_envelope_ = {};  // used up
    sent = Send(envelope, body);
  } else {
    out_.clear();
    out_.emplace_back();
    ccp::AppendHeader(out_, type, service_, sequence);
    sent = SendOut(body);
  }
  if (!sent) return;
  if (type == ccp::MessageType::kReplySuccess) {
    ++stats_.replies_success;
  } else {
    ++stats_.replies_failure;
  }
}

void ConsensusWorker::OnMessage(std::span<zmq::message_t> frames) {
  heard_since_tick_ = true;
  absl::StatusOr<std::span<zmq::message_t>> body = ccp::DealerBody(frames);
  if (!body.ok()) {
    ++stats_.malformed;
    return;
  }
  absl::StatusOr<ccp::Header> h = ccp::ParseHeader(*body);
  if (!h.ok()) {
    ++stats_.malformed;
    return;
  }
  if (h->type != ccp::MessageType::kDisconnect) {
    // The broker talks to us: our READY was accepted.
    heard_since_ready_ = true;
    next_refusal_backoff_ = Clock::duration::zero();
  }
  switch (h->type) {
    case ccp::MessageType::kRequest: {
      if (h->service != service_) {
        // Not ours: answer failure rather than leave the request open.
        ++stats_.malformed;
        zmq::message_t reason("worker:wrong-service", 20);
        SendAnswer(ccp::MessageType::kReplyFailure, h->sequence, connection_,
                   std::span(&reason, 1), false);
        return;
      }
      ++stats_.requests;
      // Offer the received header frames to an answer given during the call;
      // the guard withdraws them however the handler returns.
      struct Withdraw {
        std::span<zmq::message_t>& envelope;
        ~Withdraw() { envelope = {}; }
      } withdraw{current_envelope_};
      current_envelope_ = frames.first(1 + ccp::kPayloadIndex);
      current_sequence_ = h->sequence;
      handler_(body->subspan(h->payload_index),
               Responder(channel_.channel(), h->sequence, connection_));
      return;
    }
    case ccp::MessageType::kHeartbeat:
      return;
    case ccp::MessageType::kDisconnect:
      if (!heard_since_ready_) {
        // The broker answered our READY with DISCONNECT: it refused it (a
        // cap, or our heartbeat settings).  Ask again later, not at once.
        ++stats_.refusals;
        if (next_refusal_backoff_ == Clock::duration::zero()) {
          next_refusal_backoff_ = options_.refusal_backoff;
        }
        if (!ready_timer_) {
          ready_timer_ = *reactor_.After(next_refusal_backoff_, [this] {
            ready_timer_.Release();  // fired: nothing left to cancel
            if (socket_) SendReady();
          });
        }
        next_refusal_backoff_ = std::min<Clock::duration>(
            next_refusal_backoff_ * 2, options_.refusal_backoff_max);
        return;
      }
      // The broker dropped us (e.g. it expired us); register again.
      Reconnect();
      return;
    default:
      ++stats_.malformed;
      return;
  }
}

void ConsensusWorker::OnTick() {
  const Clock::time_point now = Clock::now();
  if (heard_since_tick_) {
    // The tick time is an upper bound for when we last heard from the broker,
    // so the silence measured below is never longer than the real one.
    heard_since_tick_ = false;
    last_heard_ = now;
  } else if (now - last_heard_ >=
             options_.heartbeat_interval * options_.heartbeat_liveness) {
    Reconnect();
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

}  // namespace zb
