// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/worker.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>

#include "brokers/common/dealer.h"

namespace zb {
namespace internal {

// What a Responder needs to reach its worker from any thread, and to notice
// that the worker is gone.  Shared by the worker and its responders.
struct ConsensusWorkerLink {
  std::mutex mu;
  // Written only on the owner thread, under `mu`; read on the owner thread
  // without the lock (no concurrent writer there) and elsewhere under it.
  ConsensusWorker* worker = nullptr;
  Reactor* reactor = nullptr;
  std::thread::id owner;
};

}  // namespace internal

// --- Responder ---------------------------------------------------------------

ConsensusWorker::Responder::Responder(
    std::shared_ptr<internal::ConsensusWorkerLink> link,
    ccp::SequenceId sequence, std::uint64_t connection)
    : link_(std::move(link)), sequence_(sequence), connection_(connection) {}

ConsensusWorker::Responder::Responder(Responder&& other) noexcept
    : link_(std::move(other.link_)),
      sequence_(other.sequence_),
      connection_(other.connection_) {}

ConsensusWorker::Responder& ConsensusWorker::Responder::operator=(
    Responder&& other) noexcept {
  if (this != &other) {
    if (link_) {
      zmq::message_t reason(kUnansweredReason.data(), kUnansweredReason.size());
      answer(ccp::MessageType::kReplyFailure, std::span(&reason, 1));
    }
    link_ = std::move(other.link_);
    sequence_ = other.sequence_;
    connection_ = other.connection_;
  }
  return *this;
}

ConsensusWorker::Responder::~Responder() {
  if (link_) {
    zmq::message_t reason(kUnansweredReason.data(), kUnansweredReason.size());
    answer(ccp::MessageType::kReplyFailure, std::span(&reason, 1));
  }
}

void ConsensusWorker::Responder::succeed(std::span<zmq::message_t> payload) {
  answer(ccp::MessageType::kReplySuccess, payload);
}

void ConsensusWorker::Responder::fail(std::span<zmq::message_t> payload) {
  answer(ccp::MessageType::kReplyFailure, payload);
}

void ConsensusWorker::Responder::answer(ccp::MessageType type,
                                        std::span<zmq::message_t> payload) {
  // Taking the link makes this responder answered whatever happens next.
  std::shared_ptr<internal::ConsensusWorkerLink> link = std::move(link_);
  if (!link) return;
  const bool unanswered = type == ccp::MessageType::kReplyFailure &&
                          payload.size() == 1 &&
                          View(payload[0]) == kUnansweredReason;
  if (std::this_thread::get_id() == link->owner) {
    // The hot path: no lock, no allocation, sent before returning.
    if (ConsensusWorker* worker = link->worker) {
      worker->send_answer(type, sequence_, connection_, payload, unanswered);
    }
    return;
  }
  // Another thread: the frames travel to the reactor inside a posted task.
  // Holding the lock while posting keeps the worker (and so its reactor)
  // alive until the task is queued; the task checks again when it runs.
  Frames frames;
  frames.reserve(payload.size());
  for (zmq::message_t& f : payload) frames.push_back(std::move(f));
  std::lock_guard<std::mutex> lock(link->mu);
  if (link->worker == nullptr) return;
  link->reactor->Post([link, type, sequence = sequence_,
                       connection = connection_, unanswered,
                       frames = std::move(frames)]() mutable {
    if (ConsensusWorker* worker = link->worker) {
      worker->send_answer(type, sequence, connection, std::span(frames),
                          unanswered);
    }
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
      options_(options),
      link_(std::make_shared<internal::ConsensusWorkerLink>()) {
  link_->worker = this;
  link_->reactor = &reactor_;
  link_->owner = std::this_thread::get_id();
  out_.reserve(8);

  if (service_.empty() || service_.size() > 255) {
    status_ = absl::InvalidArgumentError(
        "ConsensusWorker: the service name must be 1..255 bytes");
  } else if (!handler_) {
    status_ = absl::InvalidArgumentError("ConsensusWorker: no handler");
  } else if (options_.heartbeat_interval < std::chrono::milliseconds(1) ||
             options_.heartbeat_interval.count() > 0xffffffffLL) {
    status_ = absl::InvalidArgumentError(
        "ConsensusWorker: heartbeat_interval must be 1 ms .. 2^32-1 ms");
  } else if (options_.heartbeat_retries < 1 ||
             options_.heartbeat_retries > 255) {
    status_ = absl::InvalidArgumentError(
        "ConsensusWorker: heartbeat_retries must be 1..255");
  }
  if (!status_.ok()) return;

  status_ = open_socket();
  if (!status_.ok()) return;
  tick_period_ = std::max<Clock::duration>(options_.heartbeat_interval / 2,
                                           std::chrono::microseconds(500));
  arm_tick(NextTick(Clock::now(), tick_period_));
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

void ConsensusWorker::arm_tick(Clock::time_point deadline) {
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
    arm_tick(next);
    on_tick();
  });
}

ConsensusWorker::~ConsensusWorker() {
  shutdown();
  std::lock_guard<std::mutex> lock(link_->mu);
  link_->worker = nullptr;
}

absl::Status ConsensusWorker::open_socket() {
  // Linger 0: closing a socket on reconnect drops what is queued for a
  // broker that is gone; shutdown() raises the linger for its DISCONNECT.
  absl::StatusOr<zmq::socket_t> socket = OpenDealer(
      context_, endpoint_,
      {.max_message_size = options_.max_message_size, .curve = options_.curve},
      "ConsensusWorker");
  if (!socket.ok()) return socket.status();
  socket_.emplace(*std::move(socket));
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
      *socket_, [this](std::span<zmq::message_t> f) { on_message(f); });
  if (!watch.ok()) {
    socket_.reset();
    return watch.status();
  }
  socket_watch_ = *std::move(watch);
  ++connection_;
  last_heard_ = Clock::now();
  heard_since_tick_ = false;
  send_ready();
  return absl::OkStatus();
}

void ConsensusWorker::send_ready() {
  heard_since_ready_ = false;
  out_.clear();
  out_.emplace_back();  // DEALER delimiter
  ccp::AppendReady(
      out_, service_,
      static_cast<std::uint32_t>(options_.heartbeat_interval.count()),
      static_cast<std::uint8_t>(options_.heartbeat_retries));
  send_out({});
}

void ConsensusWorker::close_socket(std::chrono::milliseconds linger) {
  if (!socket_) return;
  // Safe inside this socket's own handler: the reactor never calls a removed
  // socket's handler again.
  socket_watch_.Reset();
  socket_->set(zmq::sockopt::linger, static_cast<int>(linger.count()));
  socket_.reset();
}

void ConsensusWorker::reconnect() {
  ++stats_.reconnects;
  close_socket(std::chrono::milliseconds(0));
  status_ = open_socket();
}

void ConsensusWorker::shutdown() {
  tick_timer_.Reset();
  ready_timer_.Reset();
  if (!socket_) return;
  out_.clear();
  out_.emplace_back();
  ccp::AppendDisconnect(out_, service_);
  send_out({});
  close_socket(options_.linger);
}

bool ConsensusWorker::send(std::span<zmq::message_t> head,
                           std::span<zmq::message_t> payload) {
  const absl::Status s = SendFrames(*socket_, head, payload);
  if (!s.ok()) {
    ++stats_.send_failures;
    return false;
  }
  sent_since_tick_ = true;
  return true;
}

bool ConsensusWorker::send_out(std::span<zmq::message_t> payload) {
  const bool sent = send(out_, payload);
  out_.clear();
  return sent;
}

void ConsensusWorker::send_heartbeat() {
  out_.clear();
  out_.emplace_back();
  ccp::AppendHeader(out_, ccp::MessageType::kHeartbeat);
  if (send_out({})) ++stats_.heartbeats_sent;
}

void ConsensusWorker::send_answer(ccp::MessageType type,
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
    sent = send(envelope, body);
  } else {
    out_.clear();
    out_.emplace_back();
    ccp::AppendHeader(out_, type, service_, sequence);
    sent = send_out(body);
  }
  if (!sent) return;
  if (type == ccp::MessageType::kReplySuccess) {
    ++stats_.replies_success;
  } else {
    ++stats_.replies_failure;
  }
}

void ConsensusWorker::on_message(std::span<zmq::message_t> frames) {
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
        send_answer(ccp::MessageType::kReplyFailure, h->sequence, connection_,
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
               Responder(link_, h->sequence, connection_));
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
            if (socket_) send_ready();
          });
        }
        next_refusal_backoff_ = std::min<Clock::duration>(
            next_refusal_backoff_ * 2, options_.refusal_backoff_max);
        return;
      }
      // The broker dropped us (e.g. it expired us); register again.
      reconnect();
      return;
    default:
      ++stats_.malformed;
      return;
  }
}

void ConsensusWorker::on_tick() {
  const Clock::time_point now = Clock::now();
  if (heard_since_tick_) {
    // The tick time is an upper bound for when we last heard from the broker,
    // so the silence measured below is never longer than the real one.
    heard_since_tick_ = false;
    last_heard_ = now;
  } else if (now - last_heard_ >=
             options_.heartbeat_interval * options_.heartbeat_retries) {
    reconnect();
    return;
  }
  // Ticks come every half interval: two quiet ticks in a row mean nothing
  // was sent for at least one interval (and at most 1.5).
  quiet_ticks_ = sent_since_tick_ ? 0 : quiet_ticks_ + 1;
  sent_since_tick_ = false;
  if (quiet_ticks_ >= 2) {
    quiet_ticks_ = 0;
    send_heartbeat();
    sent_since_tick_ = false;
  }
}

}  // namespace zb
