// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/client.h"

#include <algorithm>
#include <limits>
#include <thread>
#include <utility>

#include "brokers/common/dealer.h"

namespace zb {
namespace {

// Result vectors kept for reuse; more would only hold memory.
constexpr std::size_t kMaxSpareResults = 16;

}  // namespace

absl::StatusOr<std::unique_ptr<ConsensusClient>> ConsensusClient::Create(
    Reactor& reactor, zmq::context_t& context, std::string endpoint,
    Options options) {
  absl::StatusOr<std::vector<std::string>> endpoints =
      SplitEndpointList(endpoint);
  if (!endpoints.ok()) {
    return absl::InvalidArgumentError(
        "ConsensusClient: " + std::string(endpoints.status().message()));
  }
  const bool spread = options.endpoint_policy == EndpointPolicy::kSpread &&
                      endpoints->size() > 1;
  std::unique_ptr<ConsensusClient> client(
      new ConsensusClient(reactor, context, *endpoints, options));
  if (!spread) {
    if (absl::Status s = client->OpenSocket(); !s.ok()) return s;
    // kFailover opens the other brokers' sockets only when it fails over:
    // have libzmq check their endpoints now, so that a bad list is refused
    // here and not found out at the first failover.
    for (std::size_t i = 1; i < endpoints->size(); ++i) {
      absl::StatusOr<zmq::socket_t> check =
          OpenDealer(context, (*endpoints)[i],
                     {.max_message_size = options.max_message_size,
                      .curve = options.curve},
                     "ConsensusClient");
      if (!check.ok()) return check.status();
    }
    return client;
  }
  // One single-broker client per broker; this one only dispatches.  On an
  // error the children made so far go with `client`.
  client->children_.reserve(endpoints->size());
  for (std::size_t i = 0; i < endpoints->size(); ++i) {
    Options child = options;
    child.endpoint_policy = EndpointPolicy::kFailover;
    if (i > 0) child.client_id = 0;  // a chosen id names the first one
    absl::StatusOr<std::unique_ptr<ConsensusClient>> c =
        Create(reactor, context, (*endpoints)[i], child);
    if (!c.ok()) return c.status();
    client->children_.push_back(*std::move(c));
  }
  return client;
}

ConsensusClient& ConsensusClient::PickChild(
    std::chrono::milliseconds probe_timeout) {
  const std::size_t n = children_.size();
  for (std::size_t k = 0; k < n; ++k) {
    ConsensusClient& c = *children_[(next_child_ + k) % n];
    if (!c.LooksDead()) {
      next_child_ = (next_child_ + k + 1) % n;
      return c;
    }
    // Passed over: ask whether it is back (an echo clears LooksDead()).
    if (!c.probe_pending_ && c.socket_) {
      c.probe_pending_ = true;
      c.Ping(probe_timeout, [&c](absl::Status) { c.probe_pending_ = false; });
    }
  }
  // Every broker looks dead: plain round-robin.
  ConsensusClient& c = *children_[next_child_];
  next_child_ = (next_child_ + 1) % n;
  return c;
}

void ConsensusClient::AddStats(Stats& into, const Stats& from) {
  into.requests += from.requests;
  into.successes += from.successes;
  into.failures += from.failures;
  into.timeouts += from.timeouts;
  into.attempt_timeouts += from.attempt_timeouts;
  into.retries += from.retries;
  into.reopens += from.reopens;
  into.new_client_ids += from.new_client_ids;
  into.rejected += from.rejected;
  into.stale_replies += from.stale_replies;
  into.malformed += from.malformed;
  into.send_failures += from.send_failures;
  into.no_workers_resends += from.no_workers_resends;
  into.failovers += from.failovers;
}

const ConsensusClient::Stats& ConsensusClient::stats() const {
  if (children_.empty()) return stats_;
  spread_stats_ = stats_;
  for (const auto& c : children_) AddStats(spread_stats_, c->stats_);
  return spread_stats_;
}

std::uint32_t ConsensusClient::client_id() const {
  return children_.empty() ? client_id_ : children_.front()->client_id_;
}

std::uint64_t ConsensusClient::next_sequence() const {
  return children_.empty() ? next_sequence_ : children_.front()->next_sequence_;
}

std::size_t ConsensusClient::open_requests() const {
  std::size_t open = open_;
  for (const auto& c : children_) open += c->open_;
  return open;
}

const std::string& ConsensusClient::endpoint() const {
  return endpoints_[current_];
}

ConsensusClient::ConsensusClient(Reactor& reactor, zmq::context_t& context,
                                 std::vector<std::string> endpoints,
                                 Options options)
    : reactor_(reactor),
      context_(context),
      endpoints_(std::move(endpoints)),
      options_(options) {
  client_id_ = options_.client_id;
  while (client_id_ == 0) client_id_ = absl::Uniform<std::uint32_t>(random_);
  out_.reserve(8);
}

ConsensusClient::~ConsensusClient() { Close(); }

// --- Socket
// --------------------------------------------------------------------

absl::Status ConsensusClient::OpenSocket() {
  // Linger 0 (OpenDealer): what is still queued when the client closes or
  // reopens belongs to requests that have ended or will be resent.
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      reactor_, context_, endpoints_[current_],
      {.max_message_size = options_.max_message_size, .curve = options_.curve},
      "ConsensusClient", [this](std::span<zmq::message_t> f) { OnMessage(f); });
  if (!dealer.ok()) return dealer.status();
  socket_.emplace(std::move(dealer->socket));
  socket_watch_ = std::move(dealer->watch);
  ++socket_epoch_;
  return absl::OkStatus();
}

void ConsensusClient::CloseSocket() {
  if (!socket_) return;
  // Safe inside this socket's own handler: the reactor never calls a removed
  // socket's handler again.
  socket_watch_.Reset();
  socket_.reset();
}

void ConsensusClient::Reopen() {
  ++stats_.reopens;
  CloseSocket();
  // Attempts sent on the old socket can no longer be answered.
  attempts_.clear();
  for (Slot& s : slots_) s.sequences.clear();
  RenewClientId();
  timeouts_in_a_row_ = 0;
  if (endpoints_.size() > 1) {
    // Fail over: the new socket goes to the next broker of the list.
    current_ = (current_ + 1) % endpoints_.size();
    ++stats_.failovers;
  }
  socket_error_ = OpenSocket();
}

void ConsensusClient::DropSocketForTesting() {
  for (const auto& c : children_) c->DropSocketForTesting();
  CloseSocket();
  attempts_.clear();
  for (Slot& s : slots_) s.sequences.clear();
  socket_error_ = absl::FailedPreconditionError(
      "ConsensusClient: the socket was dropped for testing");
}

void ConsensusClient::RenewClientId() {
  ++stats_.new_client_ids;
  const std::uint32_t old_id = client_id_;
  do {
    client_id_ = absl::Uniform<std::uint32_t>(random_);
  } while (client_id_ == 0 || client_id_ == old_id);
  next_sequence_ = 1;
}

// --- Requests
// ------------------------------------------------------------------

void ConsensusClient::Request(std::string_view service, Frames payload,
                              const RequestOptions& options, Callback done) {
  Request(service, std::span(payload), options, std::move(done));
}

std::string_view ConsensusClient::ImmediateFailure(
    std::string_view service) const {
  if (closed_) return kReasonClientClosed;
  if (!socket_) return kReasonNotConnected;
  if (service.empty() || service.size() > 255) return kReasonInvalidRequest;
  return {};
}

void ConsensusClient::Request(std::string_view service,
                              std::span<zmq::message_t> payload,
                              const RequestOptions& options, Callback done) {
  if (!children_.empty()) {
    return PickChild(options.timeout)
        .Request(service, payload, options, std::move(done));
  }
  if (std::string_view reason = ImmediateFailure(service); !reason.empty()) {
    return PostFailure(std::move(done), reason);
  }
  StartRequest(service, payload, options, std::move(done));
}

std::uint32_t ConsensusClient::StartRequest(std::string_view service,
                                            std::span<zmq::message_t> payload,
                                            const RequestOptions& options,
                                            Callback done) {
  ++stats_.requests;
  std::uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[index];
  s.done = std::move(done);
  s.service.assign(service);
  s.timeout = std::max(options.timeout, std::chrono::milliseconds(0));
  s.retries_left = std::max(options.retries, 0);
  s.attempts = 0;
  s.retry_no_workers = options.retry_no_workers;
  s.resend_pending = false;
  s.backoff = options_.no_workers_backoff;
  s.answered_no_workers = false;
  s.no_workers_text.clear();
  s.open = true;
  s.sequences.clear();
  s.payload.clear();
  ++open_;

  zmq::message_t empty;
  if (KeepsPayload(s)) {
    // Keep the frames: every attempt but the last sends copies of them.
    for (zmq::message_t& f : payload) s.payload.push_back(std::move(f));
    if (s.payload.empty()) s.payload.push_back(std::move(empty));
    SendAttempt(index);
  } else {
    std::span<zmq::message_t> body =
        payload.empty() ? std::span(&empty, 1) : payload;
    SendAttempt(index, &body);
  }
  return index;
}

void ConsensusClient::Call(std::string_view service,
                           std::span<zmq::message_t> payload,
                           const RequestOptions& options, Callback done) {
  if (!children_.empty()) {
    return PickChild(options.timeout)
        .Call(service, payload, options, std::move(done));
  }
  if (std::string_view reason = ImmediateFailure(service); !reason.empty()) {
    Result r;
    r.outcome = Outcome::kFailure;
    r.failed_by = FailedBy::kClient;
    r.reason.assign(reason);
    done(std::move(r));
    return;
  }
  const std::uint32_t index =
      StartRequest(service, payload, options, std::move(done));
  const std::uint64_t generation = slots_[index].generation;
  // slots_ may grow while waiting (callbacks may add requests): index it
  // afresh every time.
  while (slots_[index].generation == generation) WaitOnce();
}

void ConsensusClient::WaitOnce() {
  // Every open request has a deadline, and timer_ is armed at or before the
  // earliest one.
  const Clock::time_point now = Clock::now();
  if (timer_ && timer_at_ <= now) {
    // Due: do what the reactor's timer would have done.
    timer_.Reset();
    OnTimer();
    return;
  }
  if (!socket_) {
    // Reopening failed: nothing can arrive; sleep in the reactor until the
    // deadline ends the request.
    Idle(timer_ ? timer_at_ - now : std::chrono::seconds(1));
    return;
  }
  int timeout_ms = -1;
  if (timer_) {
    // Rounded up, so that the receive never ends before the deadline.
    const auto wait =
        std::chrono::ceil<std::chrono::milliseconds>(timer_at_ - now);
    timeout_ms = static_cast<int>(
        std::min<std::int64_t>(wait.count(), std::numeric_limits<int>::max()));
  }
  socket_->set(zmq::sockopt::rcvtimeo, timeout_ms);
  const int n = ReceiveMessage(*socket_, in_, 0);
  if (n < 0) {
    // EAGAIN: the deadline came first (handled on the next call); EINTR: try
    // again; anything else ends the request at its deadline.
    if (errno != EAGAIN && errno != EINTR) Idle(std::chrono::milliseconds(1));
    return;
  }
  OnMessage(std::span<zmq::message_t>(in_.data(), static_cast<std::size_t>(n)));
}

void ConsensusClient::Idle(Clock::duration wait) {
  // Inside a reactor callback the reactor refuses to run (a nested
  // iteration would corrupt the outer one): just sleep, bounded, and let the
  // deadline check in WaitOnce() end the request.
  if (!reactor_.RunOnce(wait).ok()) {
    std::this_thread::sleep_for(
        std::min<Clock::duration>(wait, std::chrono::milliseconds(10)));
  }
}

void ConsensusClient::SendAttempt(std::uint32_t index,
                                  std::span<zmq::message_t>* payload,
                                  bool new_deadline) {
  Slot& s = slots_[index];
  if (new_deadline) s.deadline = Clock::now() + s.timeout;
  s.resend_pending = false;
  s.socket_epoch = socket_epoch_;
  ++s.attempts;
  ArmTimer(s.deadline);
  if (!socket_) {
    ++stats_.send_failures;
    return;
  }

  const ccp::SequenceId sequence{next_sequence_, client_id_};
  out_.clear();
  out_.emplace_back();  // DEALER delimiter
  ccp::AppendHeader(out_, ccp::MessageType::kRequest, s.service, sequence);
  std::span<zmq::message_t> body;
  if (payload != nullptr) {
    body = *payload;
  } else if (!KeepsPayload(s)) {
    body = s.payload;  // the last attempt: no copies needed any more
  } else {
    copies_.clear();
    for (zmq::message_t& f : s.payload) {
      copies_.emplace_back();
      copies_.back().copy(f);
    }
    body = copies_;
  }
  const absl::Status sent = SendFrames(*socket_, out_, body);
  out_.clear();
  copies_.clear();
  if (!sent.ok()) {
    // Nothing was queued (a multipart send is all or nothing), so the
    // sequence number stays unused.  The attempt is lost like an unanswered
    // one: its deadline retries it or ends the request.
    ++stats_.send_failures;
    return;
  }
  if (!KeepsPayload(s)) s.payload.clear();
  attempts_.emplace(sequence, index);
  s.sequences.push_back(sequence);
  ++next_sequence_;
}

void ConsensusClient::Finish(std::uint32_t index, Outcome outcome,
                             FailedBy failed_by, std::string_view reason,
                             std::span<zmq::message_t> payload) {
  Slot& s = slots_[index];
  for (const ccp::SequenceId& sequence : s.sequences) {
    attempts_.erase(sequence);
  }
  s.sequences.clear();

  Result r;
  r.outcome = outcome;
  r.failed_by = failed_by;
  r.reason.assign(reason);  // before the frames `reason` may point into move
  r.attempts = s.attempts;
  r.payload = TakeSpare();
  for (zmq::message_t& f : payload) r.payload.push_back(std::move(f));

  Callback done = std::move(s.done);
  s.done = nullptr;
  s.open = false;
  ++s.generation;
  s.payload.clear();
  free_slots_.push_back(index);
  --open_;
  switch (outcome) {
    case Outcome::kSuccess:
      ++stats_.successes;
      break;
    case Outcome::kFailure:
      ++stats_.failures;
      break;
    case Outcome::kTimeout:
      ++stats_.timeouts;
      break;
  }

  done(std::move(r));
  // Whatever the callback left behind is released here; the vector itself
  // is kept for the next result.
  if (r.payload.capacity() != 0 && spare_.size() < kMaxSpareResults) {
    r.payload.clear();
    spare_.push_back(std::move(r.payload));
  }
}

Frames ConsensusClient::TakeSpare() {
  if (spare_.empty()) return Frames();
  Frames f = std::move(spare_.back());
  spare_.pop_back();
  return f;
}

void ConsensusClient::PostFailure(Callback done, std::string_view reason) {
  immediate_.push_back(Immediate{std::move(done), nullptr, reason, {}});
  // Not reactor_.Post(): a posted task outlives the client, and the
  // callback may capture what the client's owner frees with it.  The
  // client's own timer is cancelled by Close(), which delivers the rest.
  if (!immediate_timer_ && !closed_) {
    immediate_timer_ = *reactor_.After(Clock::duration::zero(), [this] {
      immediate_timer_.Release();  // fired: nothing left to cancel
      DeliverImmediate();
    });
  }
}

void ConsensusClient::PostPingFailure(PingCallback done, absl::Status status) {
  immediate_.push_back(Immediate{nullptr, std::move(done), {}, status});
  if (!immediate_timer_ && !closed_) {
    immediate_timer_ = *reactor_.After(Clock::duration::zero(), [this] {
      immediate_timer_.Release();  // fired: nothing left to cancel
      DeliverImmediate();
    });
  }
}

void ConsensusClient::DeliverImmediate() {
  // Callbacks may queue more (a Request() from inside one); those wait for
  // the next timer, or for the loop in Close().
  std::vector<Immediate> batch = std::move(immediate_);
  immediate_.clear();
  for (Immediate& i : batch) {
    if (i.done) {
      Result r;
      r.outcome = Outcome::kFailure;
      r.failed_by = FailedBy::kClient;
      r.reason.assign(i.reason);
      i.done(std::move(r));
    } else {
      i.ping_done(std::move(i.status));
    }
  }
}

// --- Incoming
// ------------------------------------------------------------------

void ConsensusClient::OnMessage(std::span<zmq::message_t> frames) {
  // Any message shows that the broker is there.
  timeouts_in_a_row_ = 0;
  silent_timeouts_ = 0;
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
  switch (h->type) {
    case ccp::MessageType::kReplySuccess:
    case ccp::MessageType::kReplyFailure:
      OnReply(*h, body->subspan(h->payload_index));
      return;
    case ccp::MessageType::kPing:
      if (!pings_.empty()) {
        PingCallback done = std::move(pings_.front().done);
        pings_.pop_front();
        done(absl::OkStatus());
      }
      return;
    case ccp::MessageType::kHeartbeat:
      return;
    default:
      ++stats_.malformed;
      return;
  }
}

void ConsensusClient::OnReply(const ccp::Header& h,
                              std::span<zmq::message_t> payload) {
  const auto it = attempts_.find(h.sequence);
  if (it == attempts_.end()) {
    ++stats_.stale_replies;
    return;
  }
  const std::uint32_t index = it->second;
  if (h.type == ccp::MessageType::kReplySuccess) {
    Finish(index, Outcome::kSuccess, FailedBy::kNone, {}, payload);
    return;
  }
  if (!ccp::IsBrokerFailure(payload)) {
    Finish(index, Outcome::kFailure, FailedBy::kWorker, {}, payload);
    return;
  }
  const std::string_view code = View(payload[0]);
  if (code == ccp::kReasonNoWorkers && slots_[index].retry_no_workers &&
      ScheduleNoWorkersResend(index)) {
    slots_[index].answered_no_workers = true;
    slots_[index].no_workers_text.assign(
        payload.size() > 1 ? View(payload[1]) : std::string_view());
    return;
  }
  if (code == ccp::kReasonBadSequence) {
    // The broker ties our client id to another socket (our connection was
    // re-established, so the broker sees a new identity) or saw a gap: go
    // on under a new client id, which the broker adopts.  The socket is
    // fine -- the broker answered on it -- so attempts in flight under the
    // old id stay answerable.  Unless the id was already renewed after an
    // earlier rejection.
    ++stats_.rejected;
    if (h.sequence.client_id == client_id_) RenewClientId();
    Slot& s = slots_[index];
    if (s.retries_left > 0) {
      --s.retries_left;
      ++stats_.retries;
      SendAttempt(index);
      return;
    }
  }
  Finish(index, Outcome::kFailure, FailedBy::kBroker, code, payload);
}

bool ConsensusClient::ScheduleNoWorkersResend(std::uint32_t index) {
  Slot& s = slots_[index];
  const Clock::time_point at = Clock::now() + s.backoff;
  if (at >= s.deadline) return false;  // no time left: end with the answer
  s.resend_pending = true;
  s.resend_at = at;
  s.backoff =
      std::min<Clock::duration>(s.backoff * 2, options_.no_workers_backoff_max);
  ArmTimer(at);
  return true;
}

// --- Deadlines
// -----------------------------------------------------------------

void ConsensusClient::ArmTimer(Clock::time_point deadline) {
  if (timer_ && timer_at_ <= deadline) return;
  timer_at_ = deadline;
  // Replacing the handle cancels the later timer it held.
  timer_ = *reactor_.At(deadline, [this] { OnTimer(); });
}

void ConsensusClient::NoteTimeout(std::uint64_t socket_epoch) {
  ++stats_.attempt_timeouts;
  ++silent_timeouts_;
  // An attempt lost with an older socket says nothing about this one.
  if (socket_epoch != socket_epoch_ || options_.reopen_after_timeouts <= 0) {
    return;
  }
  if (++timeouts_in_a_row_ >= options_.reopen_after_timeouts) Reopen();
}

void ConsensusClient::Expire(std::uint32_t index, Clock::time_point /*now*/) {
  NoteTimeout(slots_[index].socket_epoch);
  Slot& s = slots_[index];
  s.resend_pending = false;
  if (s.retries_left > 0) {
    --s.retries_left;
    ++stats_.retries;
    SendAttempt(index);
  } else if (s.answered_no_workers) {
    // The last answer was "zb:no-workers" and the resend after it is still
    // unanswered: that answer is the outcome, not a timeout.
    Frames failure = MakeFrames({ccp::kReasonNoWorkers, s.no_workers_text});
    Finish(index, Outcome::kFailure, FailedBy::kBroker, ccp::kReasonNoWorkers,
           failure);
  } else {
    Finish(index, Outcome::kTimeout, FailedBy::kNone, {}, {});
  }
}

void ConsensusClient::OnTimer() {
  timer_.Release();  // fired (or already reset by WaitOnce())
  const Clock::time_point now = Clock::now();
  // Callbacks run from here may add requests (slots_ may grow: index, never
  // hold references across a call).
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].open) continue;
    if (slots_[i].deadline <= now) {
      Expire(i, now);
    } else if (slots_[i].resend_pending && slots_[i].resend_at <= now) {
      ++stats_.no_workers_resends;
      SendAttempt(i, nullptr, /*new_deadline=*/false);
    }
  }
  if (!pings_.empty()) {
    std::vector<PingCallback> expired;
    for (auto it = pings_.begin(); it != pings_.end();) {
      if (it->deadline <= now) {
        NoteTimeout(it->socket_epoch);
        expired.push_back(std::move(it->done));
        it = pings_.erase(it);
      } else {
        ++it;
      }
    }
    for (PingCallback& done : expired) {
      done(absl::DeadlineExceededError("the broker did not echo the PING"));
    }
  }
  Clock::time_point next = Clock::time_point::max();
  for (const Slot& s : slots_) {
    if (!s.open) continue;
    next = std::min(next, s.deadline);
    if (s.resend_pending) next = std::min(next, s.resend_at);
  }
  for (const PendingPing& p : pings_) next = std::min(next, p.deadline);
  if (next != Clock::time_point::max()) ArmTimer(next);
}

// --- Ping
// ----------------------------------------------------------------------

void ConsensusClient::Ping(std::chrono::milliseconds timeout,
                           PingCallback done) {
  if (!children_.empty()) {
    ConsensusClient& c = *children_[next_ping_];
    next_ping_ = (next_ping_ + 1) % children_.size();
    return c.Ping(timeout, std::move(done));
  }
  if (closed_) {
    PostPingFailure(std::move(done),
                    absl::CancelledError("the client is closed"));
    return;
  }
  if (!socket_) {
    PostPingFailure(std::move(done),
                    absl::FailedPreconditionError(socket_error_.message()));
    return;
  }
  out_.clear();
  out_.emplace_back();
  ccp::AppendHeader(out_, ccp::MessageType::kPing);
  if (!SendFrames(*socket_, out_).ok()) ++stats_.send_failures;
  out_.clear();
  const Clock::time_point deadline = Clock::now() + timeout;
  pings_.push_back(PendingPing{deadline, socket_epoch_, std::move(done)});
  ArmTimer(deadline);
}

// --- Closing
// -------------------------------------------------------------------

void ConsensusClient::Close() {
  if (closed_) return;
  closed_ = true;
  // Each broker's connection ends its own requests and pings.
  children_.clear();
  timer_.Reset();
  CloseSocket();
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].open) {
      Finish(i, Outcome::kFailure, FailedBy::kClient, kReasonClientClosed, {});
    }
  }
  attempts_.clear();
  std::deque<PendingPing> pings = std::move(pings_);
  pings_.clear();
  for (PendingPing& p : pings) {
    p.done(absl::CancelledError("the client was destroyed"));
  }
  // Immediate failures not delivered yet end here, inside the destructor:
  // after it nothing of this client may run.
  immediate_timer_.Reset();
  while (!immediate_.empty()) DeliverImmediate();
}

}  // namespace zb
