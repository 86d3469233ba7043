// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/broker.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "brokers/common/log_text.h"
#include "brokers/common/router.h"
#include "zbrokers/common/endpoint.h"

namespace zb {
namespace {

using ccp::MessageType;

// The service frame of the answer to a malformed REQUEST whose own service
// name no client could parse (empty or too long).
constexpr std::string_view kMalformedService = "zb:malformed";

// Debian's abseil has its own absl::string_view (not std::string_view);
// heterogeneous map lookups need that type.
absl::string_view Key(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

std::string_view Std(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

zmq::message_t CopyOf(zmq::message_t& frame) {
  zmq::message_t copy;
  copy.copy(frame);  // zmq_msg_copy: shares large buffers, never allocates
  return copy;
}

// The first member of `o` outside its documented range, as
// InvalidArgument naming it.
absl::Status CheckOptions(const ConsensusBroker::Options& o) {
  auto bad = [](std::string_view member, std::string_view rule,
                std::int64_t value) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ConsensusBroker::Options::%s must be %s, not %d",
                        member, rule, value));
  };
  using std::chrono::milliseconds;
  if (o.request_timeout < milliseconds(0)) {
    return bad("request_timeout", ">= 0 ms", o.request_timeout.count());
  }
  if (o.sweep_interval <= milliseconds(0)) {
    return bad("sweep_interval", "> 0 ms", o.sweep_interval.count());
  }
  if (o.client_idle_timeout < milliseconds(0)) {
    return bad("client_idle_timeout", ">= 0 ms", o.client_idle_timeout.count());
  }
  if (o.max_service_size < 1) {
    return bad("max_service_size", ">= 1", 0);
  }
  if (o.max_heartbeat_interval <= milliseconds(0)) {
    return bad("max_heartbeat_interval", "> 0 ms",
               o.max_heartbeat_interval.count());
  }
  if (o.max_heartbeat_liveness < 1) {
    return bad("max_heartbeat_liveness", ">= 1", o.max_heartbeat_liveness);
  }
  if (o.max_message_size < 0) {
    return bad("max_message_size", ">= 0 (0 = no limit)", o.max_message_size);
  }
  if (o.linger < milliseconds(0)) {
    return bad("linger", ">= 0 ms", o.linger.count());
  }
  return absl::OkStatus();
}

}  // namespace

struct ConsensusBroker::Service {
  std::string name;
  // Registration order; a request's quorum and its reply payloads follow it.
  std::vector<Worker*> workers;
  // Open requests of this service (intrusive list through Request::svc_*).
  Request* open_head = nullptr;
};

struct ConsensusBroker::Worker {
  std::string identity;
  zmq::message_t identity_frame;  // copied (zmq_msg_copy) for every send
  Service* service = nullptr;
  // Index in service->workers, which is also this worker's slot in every
  // request fanned out since the service's membership last changed: a
  // reply finds its slot without scanning the quorum.
  std::size_t position = 0;
  Clock::duration interval{};
  Clock::duration expiry{};  // interval x retries
  Clock::time_point last_recv;
  Clock::time_point last_sent;
};

struct ConsensusBroker::Client {
  std::uint32_t id = 0;
  std::string identity;
  std::uint64_t last_sequence = 0;
  Clock::time_point last_seen;
  std::uint32_t open = 0;
  // The idle list (records with open == 0, least recently used first),
  // which eviction (max_clients) and idle expiry take from the front.
  Client* idle_prev = nullptr;
  Client* idle_next = nullptr;
};

struct ConsensusBroker::Request {
  struct Slot {
    Worker* worker = nullptr;  // nullptr once the worker left
    bool answered = false;
    Frames payload;  // capacity kept across uses of this record
  };

  ccp::SequenceId sequence;
  Service* service = nullptr;
  Client* client = nullptr;
  zmq::message_t client_identity;
  zmq::message_t service_frame;
  zmq::message_t sequence_frame;
  Clock::time_point deadline;
  // slots[0, quorum) are in use; the vector never shrinks so that the slots'
  // payload vectors keep their capacity.
  std::vector<Slot> slots;
  std::size_t quorum = 0;
  std::size_t pending = 0;   // workers still expected to answer
  std::size_t answered = 0;  // workers that answered success
  Request* svc_prev = nullptr;
  Request* svc_next = nullptr;
  Request* fifo_prev = nullptr;
  Request* fifo_next = nullptr;
};

absl::StatusOr<std::unique_ptr<ConsensusBroker>> ConsensusBroker::Create(
    Reactor& reactor, zmq::context_t& context, Options options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  std::unique_ptr<ConsensusBroker> broker(
      new ConsensusBroker(reactor, std::move(options)));
  if (absl::Status s = broker->Init(context); !s.ok()) return s;
  return broker;
}

ConsensusBroker::ConsensusBroker(Reactor& reactor, Options options)
    : reactor_(reactor), options_(std::move(options)) {
  limits_.max_frames = options_.max_frames;
  limits_.max_service_size = options_.max_service_size;
  out_.reserve(64);
  scratch_leaving_.reserve(16);
  open_.reserve(64);
  next_client_sweep_ = Clock::now();
}

absl::Status ConsensusBroker::Init(zmq::context_t& context) {
  try {
    router_ = zmq::socket_t(context, zmq::socket_type::router);
    router_.set(zmq::sockopt::router_mandatory, 1);
    router_.set(zmq::sockopt::linger,
                static_cast<int>(options_.linger.count()));
    router_.set(zmq::sockopt::maxmsgsize, options_.max_message_size > 0
                                              ? options_.max_message_size
                                              : std::int64_t{-1});
  } catch (const zmq::error_t& e) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ConsensusBroker: cannot create its ROUTER socket: %s", e.what()));
  }
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
      router_, [this](std::span<zmq::message_t> frames) { OnMessage(frames); });
  if (!watch.ok()) return watch.status();
  router_watch_ = *std::move(watch);
  absl::StatusOr<Reactor::Timer> sweep =
      reactor_.Every(options_.sweep_interval, [this] { Sweep(); });
  if (!sweep.ok()) return sweep.status();
  sweep_timer_ = *std::move(sweep);
  return absl::OkStatus();
}

ConsensusBroker::~ConsensusBroker() {
  sweep_timer_.Reset();
  drain_timer_.Reset();
  while (fifo_head_ != nullptr) {
    Fail(fifo_head_, ccp::kReasonShutdown, "the broker is shutting down");
  }
  for (auto& [identity, worker] : workers_) {
    SendToWorker(worker.get(), MessageType::kDisconnect).IgnoreError();
  }
  FlushLogLimiters(Clock::now(), /*force=*/true);
  router_watch_.Reset();
  // libzmq 4.3 leaves the socket files of ipc:// endpoints behind.
  for (const std::string& endpoint : endpoints_) RemoveIpcSocketFile(endpoint);
}

absl::Status ConsensusBroker::Bind(const std::string& endpoint,
                                   const ListenerSecurity& security) {
  absl::StatusOr<std::string> bound = BindRouter(router_, endpoint, security);
  if (!bound.ok()) return bound.status();
  endpoints_.push_back(*std::move(bound));
  return absl::OkStatus();
}

absl::Status ConsensusBroker::Monitor(const std::string& monitor_endpoint,
                                      int events) {
  if (zmq_socket_monitor(router_.handle(), monitor_endpoint.c_str(), events) !=
      0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "monitor %s: %s", monitor_endpoint, zmq_strerror(zmq_errno())));
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::size_t>>
ConsensusBroker::workers_per_service() const {
  std::vector<std::pair<std::string, std::size_t>> out;
  out.reserve(services_.size());
  for (const auto& [name, service] : services_) {
    out.emplace_back(name, service->workers.size());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t ConsensusBroker::worker_count(std::string_view service) const {
  auto it = services_.find(Key(service));
  return it == services_.end() ? 0 : it->second->workers.size();
}

// --- Receiving ---------------------------------------------------------------

void ConsensusBroker::OnMessage(std::span<zmq::message_t> frames) {
  absl::StatusOr<std::span<zmq::message_t>> body = ccp::RouterBody(frames);
  if (!body.ok()) {
    NoteMalformed(View(frames[0]), body.status());
    return;
  }
  absl::StatusOr<ccp::Header> header = ccp::ParseHeader(*body, limits_);
  if (!header.ok()) {
    NoteMalformed(View(frames[0]), header.status());
    // A REQUEST we can still tell the sequence id of is answered, so that
    // its client is not left waiting (and its number is used up as for
    // any answered request).
    if (std::optional<ccp::SequenceId> id =
            ccp::ReadableRequestSequence(*body)) {
      if (RefusedByGate()) return;
      OnMalformedRequest(frames, *body, *id, header.status());
    }
    return;
  }
  const ccp::Header& h = *header;
  switch (h.type) {
    case MessageType::kRequest:
      if (RefusedByGate()) return;
      OnRequest(frames, *body, h);
      return;
    case MessageType::kReplySuccess:
    case MessageType::kReplyFailure:
      OnReply(frames, *body, h);
      return;
    case MessageType::kHeartbeat: {
      // From an unknown identity (e.g. after a broker restart) it is
      // ignored: the worker notices our silence and re-registers.
      auto it = workers_.find(Key(View(frames[0])));
      if (it != workers_.end()) it->second->last_recv = Clock::now();
      return;
    }
    case MessageType::kReady:
      OnReady(frames, h);
      return;
    case MessageType::kDisconnect:
      OnDisconnect(View(frames[0]), h);
      return;
    case MessageType::kPing: {
      if (RefusedByGate()) return;
      // Echo the message as received: [identity][""][CCp100][0x07].
      ++stats_.pings;
      const absl::Status s = SendFrames(router_, frames);
      if (absl::IsUnavailable(s)) ++stats_.unroutable;
      if (absl::IsResourceExhausted(s)) ++stats_.dropped_replies;
      return;
    }
  }
}

bool ConsensusBroker::RefusedByGate() {
  // A draining broker answers "zb:shutdown" as before; asking the gate
  // could make a broker that is going away take over from its peer.
  if (!request_gate_ || draining_ || request_gate_()) return false;
  ++stats_.requests_refused_passive;
  return true;
}

void ConsensusBroker::OnReady(std::span<zmq::message_t> frames,
                              const ccp::Header& h) {
  const std::string_view identity = View(frames[0]);
  const Clock::time_point now = Clock::now();
  const Clock::duration interval =
      std::chrono::milliseconds(h.heartbeat_interval_ms);
  auto existing = workers_.find(Key(identity));
  if (h.heartbeat_interval_ms >
          static_cast<std::uint64_t>(options_.max_heartbeat_interval.count()) ||
      h.heartbeat_retries > options_.max_heartbeat_liveness) {
    // Such a worker would be kept for interval x retries after its socket
    // is gone.  A registered worker that sends it is dropped as well.
    ++stats_.refused_heartbeat;
    if (existing != workers_.end()) {
      RemoveWorker(existing->second.get(), Leave::kRefused);
    }
    RefuseReady(frames, h,
                absl::StrFormat("heartbeat %d ms x %d is out of bounds (at "
                                "most %d ms x %d)",
                                h.heartbeat_interval_ms, h.heartbeat_retries,
                                options_.max_heartbeat_interval.count(),
                                options_.max_heartbeat_liveness));
    return;
  }
  if (existing != workers_.end()) {
    Worker* w = existing->second.get();
    if (w->service->name == h.service) {
      // A repeated READY refreshes the heartbeat settings.
      w->interval = interval;
      w->expiry = interval * h.heartbeat_retries;
      w->last_recv = now;
      AcknowledgeReady(w);
      return;
    }
    RemoveWorker(w, Leave::kMoved);
  }

  if (options_.max_workers != 0 && workers_.size() >= options_.max_workers) {
    ++stats_.workers_refused;
    RefuseReady(frames, h,
                absl::StrFormat("the broker has its maximum of %d workers",
                                options_.max_workers));
    return;
  }
  auto sit = services_.find(Key(h.service));
  if (sit == services_.end()) {
    if (options_.max_services != 0 &&
        services_.size() >= options_.max_services) {
      ++stats_.refused_services;
      RefuseReady(frames, h,
                  absl::StrFormat("the broker knows its maximum of %d "
                                  "services",
                                  options_.max_services));
      return;
    }
    sit = services_.emplace(std::string(h.service), std::make_unique<Service>())
              .first;
    sit->second->name = sit->first;
  }
  Service* service = sit->second.get();

  auto worker = std::make_unique<Worker>();
  Worker* w = worker.get();
  w->identity.assign(identity);
  w->identity_frame = CopyOf(frames[0]);
  w->service = service;
  w->interval = interval;
  w->expiry = interval * h.heartbeat_retries;
  w->last_recv = now;
  w->last_sent = now;
  w->position = service->workers.size();
  workers_.emplace(w->identity, std::move(worker));
  service->workers.push_back(w);
  ++stats_.workers_joined;
  if (joins_log_.Admit(now)) {
    Log(LogLevel::kInfo,
        absl::StrFormat("worker %s joined service %s (heartbeat %d ms x %d); "
                        "%d worker(s)%s",
                        PrintableIdentity(identity), QuotedText(service->name),
                        h.heartbeat_interval_ms, h.heartbeat_retries,
                        service->workers.size(), joins_log_.SuppressedNote()));
  }
  AcknowledgeReady(w);
}

void ConsensusBroker::AcknowledgeReady(Worker* w) {
  // A HEARTBEAT at once, rather than after an interval of silence: the
  // worker counts its silence from the moment it opened its socket, which
  // includes the time to connect (libzmq retries every 100 ms while no
  // broker listens).  Waiting an interval made a worker whose connection
  // came late give up on a registration that had just succeeded and
  // register again on a new socket: after every broker restart the same
  // worker was registered twice, and a request fanned out to the abandoned
  // registration alone failed with "zb:worker-left".
  const absl::Status s = SendToWorker(w, MessageType::kHeartbeat);
  if (s.ok()) {
    ++stats_.heartbeats_sent;
  } else if (absl::IsUnavailable(s)) {
    ++stats_.unroutable;
    RemoveWorker(w, Leave::kUnroutable);
  }
}

void ConsensusBroker::RefuseReady(std::span<zmq::message_t> frames,
                                  const ccp::Header& h, std::string_view why) {
  // DISCONNECT tells the worker it is not registered (zbrokers' worker then
  // backs off before it tries again).
  out_.clear();
  out_.push_back(CopyOf(frames[0]));
  out_.emplace_back();
  ccp::AppendDisconnect(out_, h.service);
  SendFrames(router_, out_).IgnoreError();
  out_.clear();
  if (refused_log_.Admit(Clock::now())) {
    Log(LogLevel::kWarning,
        absl::StrFormat("refused READY from %s for service %s: %s%s",
                        PrintableIdentity(View(frames[0])),
                        QuotedText(h.service), why,
                        refused_log_.SuppressedNote()));
  }
}

void ConsensusBroker::OnDisconnect(std::string_view identity,
                                   const ccp::Header& /*h*/) {
  auto it = workers_.find(Key(identity));
  if (it == workers_.end()) return;
  RemoveWorker(it->second.get(), Leave::kDisconnect);
}

void ConsensusBroker::OnRequest(std::span<zmq::message_t> frames,
                                std::span<zmq::message_t> body,
                                const ccp::Header& h) {
  ++stats_.requests;
  if (draining_) {
    ++stats_.refused_draining;
    FailNow(frames, body, ccp::kReasonShutdown,
            "the broker is shutting down and takes no new requests");
    return;
  }
  const Clock::time_point now = Clock::now();
  const ccp::SequenceId id = h.sequence;
  Client* client = AcceptSequence(frames, body, id, now);
  if (client == nullptr) return;  // rejected and answered
  if (options_.max_requests_per_client != 0 &&
      client->open >= options_.max_requests_per_client) {
    ++stats_.client_busy;
    FailNow(frames, body, ccp::kReasonBusy,
            absl::StrFormat("client id %08x has its maximum of %d requests "
                            "open",
                            id.client_id, options_.max_requests_per_client));
    return;
  }

  auto sit = services_.find(Key(h.service));
  if (sit == services_.end() || sit->second->workers.empty()) {
    ++stats_.no_workers;
    FailNow(
        frames, body, ccp::kReasonNoWorkers,
        absl::StrFormat("no workers for service %s", QuotedText(h.service)));
    return;
  }
  Service* service = sit->second.get();
  auto [slot_in_open, inserted] = open_.try_emplace(id, nullptr);
  if (!inserted) {
    // Unreachable under the sequence rules; never let two records share a
    // key.
    ++stats_.rejected_sequence;
    FailNow(frames, body, ccp::kReasonBadSequence, "duplicate sequence id");
    return;
  }

  // A record from the pool (allocated only while the pool grows).
  Request* r;
  if (pool_.empty()) {
    r = new Request;
  } else {
    r = pool_.back().release();
    pool_.pop_back();
  }
  r->sequence = id;
  r->service = service;
  r->client = client;
  if (client->open++ == 0) UnlinkIdle(client);
  r->client_identity = CopyOf(frames[0]);
  r->service_frame = CopyOf(body[ccp::kServiceIndex]);
  r->sequence_frame = CopyOf(body[ccp::kSequenceIndex]);
  r->deadline = now + options_.request_timeout;
  const std::size_t n = service->workers.size();
  if (r->slots.size() < n) r->slots.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    Request::Slot& slot = r->slots[i];
    slot.worker = service->workers[i];
    slot.answered = false;
    slot.payload.clear();
  }
  r->quorum = n;
  r->pending = n;
  r->answered = 0;
  // Link into the service's open list and the deadline FIFO.
  r->svc_prev = nullptr;
  r->svc_next = service->open_head;
  if (service->open_head != nullptr) service->open_head->svc_prev = r;
  service->open_head = r;
  r->fifo_next = nullptr;
  r->fifo_prev = fifo_tail_;
  if (fifo_tail_ != nullptr) {
    fifo_tail_->fifo_next = r;
  } else {
    fifo_head_ = r;
  }
  fifo_tail_ = r;
  slot_in_open->second = r;

  // Fan out: [worker identity][""][body...] to every worker, sent straight
  // from zmq_msg_t copies (SendRouted) rather than through out_: this loop is
  // the broker's cost per added worker.  The body frames are shared with
  // zmq_msg_copy and moved into the last message.
  bool busy = false;
  scratch_leaving_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    Worker* w = r->slots[i].worker;
    const bool last = i + 1 == n;
    const absl::Status s = SendRouted(router_, w->identity_frame, body, last);
    if (s.ok()) {
      w->last_sent = now;
    } else if (absl::IsUnavailable(s)) {
      ++stats_.unroutable;
      scratch_leaving_.emplace_back(w, Leave::kUnroutable);
    } else {
      busy = true;
    }
  }
  if (busy) {
    ++stats_.worker_busy;
    Fail(r, ccp::kReasonWorkerBusy,
         absl::StrFormat("a worker of service %s has a full queue",
                         QuotedText(service->name)));
  }
  // RemoveWorker completes `r` when no worker is left to answer it.  `r` and
  // `service` must not be touched after this point.
  for (std::size_t i = 0; i < scratch_leaving_.size(); ++i) {
    RemoveWorker(scratch_leaving_[i].first, scratch_leaving_[i].second);
  }
  scratch_leaving_.clear();
}

ConsensusBroker::Client* ConsensusBroker::AcceptSequence(
    std::span<zmq::message_t> frames, std::span<zmq::message_t> body,
    const ccp::SequenceId& id, Clock::time_point now) {
  // Sequence rules (docs/protocols/ccp.md): a client id we do not know is
  // adopted at the number it presents (a restarted broker knows nobody, and
  // the 2011 clients only start again at 1 after timeouts); from then on
  // exactly +1 each time, always from the socket we adopted it from.
  const std::string_view identity = View(frames[0]);
  Client* client = nullptr;
  auto cit = clients_.find(id.client_id);
  if (cit == clients_.end()) {
    if (options_.max_clients != 0 && clients_.size() >= options_.max_clients) {
      if (idle_head_ == nullptr) {
        // Every record has open requests: none may be forgotten.
        ++stats_.refused_clients;
        FailNow(frames, body, ccp::kReasonBusy,
                absl::StrFormat("the broker tracks its maximum of %d clients, "
                                "each with requests open",
                                options_.max_clients));
        return nullptr;
      }
      ++stats_.clients_evicted;
      EraseClient(idle_head_);
    }
    client = clients_.emplace(id.client_id, std::make_unique<Client>())
                 .first->second.get();
    client->id = id.client_id;
    client->identity.assign(identity);
    if (id.sequence != 1) ++stats_.clients_adopted;
    LinkIdle(client);
  } else {
    client = cit->second.get();
    if (client->identity != identity) {
      ++stats_.rejected_sequence;
      FailNow(frames, body, ccp::kReasonBadSequence,
              absl::StrFormat("client id %08x belongs to another socket",
                              id.client_id));
      return nullptr;
    }
    if (id.sequence != client->last_sequence + 1) {
      ++stats_.rejected_sequence;
      FailNow(frames, body, ccp::kReasonBadSequence,
              absl::StrFormat("client id %08x: expected sequence number %d, "
                              "got %d",
                              id.client_id, client->last_sequence + 1,
                              id.sequence));
      return nullptr;
    }
  }
  client->last_sequence = id.sequence;
  client->last_seen = now;
  if (client->open == 0 && client != idle_tail_) {  // most recently used now
    UnlinkIdle(client);
    LinkIdle(client);
  }
  return client;
}

void ConsensusBroker::LinkIdle(Client* c) {
  c->idle_next = nullptr;
  c->idle_prev = idle_tail_;
  if (idle_tail_ != nullptr) {
    idle_tail_->idle_next = c;
  } else {
    idle_head_ = c;
  }
  idle_tail_ = c;
}

void ConsensusBroker::UnlinkIdle(Client* c) {
  if (c->idle_prev != nullptr) {
    c->idle_prev->idle_next = c->idle_next;
  } else {
    idle_head_ = c->idle_next;
  }
  if (c->idle_next != nullptr) {
    c->idle_next->idle_prev = c->idle_prev;
  } else {
    idle_tail_ = c->idle_prev;
  }
  c->idle_prev = c->idle_next = nullptr;
}

void ConsensusBroker::EraseClient(Client* c) {
  UnlinkIdle(c);
  clients_.erase(c->id);  // destroys *c
}

void ConsensusBroker::OnMalformedRequest(std::span<zmq::message_t> frames,
                                         std::span<zmq::message_t> body,
                                         const ccp::SequenceId& id,
                                         const absl::Status& error) {
  ++stats_.requests;
  ++stats_.malformed_requests;
  // The answer must parse for any client (which matches it by sequence id
  // alone): a service name a client could not parse is replaced.
  const std::size_t service_size = body[ccp::kServiceIndex].size();
  if (service_size == 0 || service_size > ccp::ParseLimits{}.max_service_size) {
    body[ccp::kServiceIndex] = Frame(kMalformedService);
  }
  if (AcceptSequence(frames, body, id, Clock::now()) == nullptr) return;
  FailNow(frames, body, ccp::kReasonMalformed, Std(error.message()));
}

void ConsensusBroker::OnReply(std::span<zmq::message_t> frames,
                              std::span<zmq::message_t> body,
                              const ccp::Header& h) {
  auto wit = workers_.find(Key(View(frames[0])));
  if (wit == workers_.end()) {
    ++stats_.late_replies;
    return;
  }
  Worker* w = wit->second.get();
  w->last_recv = Clock::now();
  auto rit = open_.find(h.sequence);
  if (rit == open_.end()) {
    ++stats_.late_replies;  // already answered, failed or timed out
    return;
  }
  Request* r = rit->second;
  // The worker's slot is at its position unless a worker of the service
  // left while the request was open (positions shifted); only then search.
  // A scan per reply made every request O(workers^2).
  Request::Slot* slot = nullptr;
  if (w->position < r->quorum && r->slots[w->position].worker == w) {
    slot = &r->slots[w->position];
  } else {
    for (std::size_t i = 0; i < r->quorum; ++i) {
      if (r->slots[i].worker == w) {
        slot = &r->slots[i];
        break;
      }
    }
  }
  if (slot == nullptr || slot->answered) {
    ++stats_.late_replies;  // not in the quorum, or a second answer
    return;
  }
  std::span<zmq::message_t> payload = body.subspan(h.payload_index);
  if (h.type == MessageType::kReplyFailure) {
    ++stats_.worker_failures;
    FailWithWorkerPayload(r, payload);
    return;
  }
  slot->answered = true;
  for (zmq::message_t& f : payload) slot->payload.push_back(std::move(f));
  ++r->answered;
  if (--r->pending == 0) Succeed(r);
}

// --- Answering
// ----------------------------------------------------------------

absl::Status ConsensusBroker::SendOut() {
  const absl::Status s = SendFrames(router_, out_);
  if (absl::IsUnavailable(s)) ++stats_.unroutable;
  if (absl::IsResourceExhausted(s)) ++stats_.dropped_replies;
  out_.clear();
  return s;
}

absl::Status ConsensusBroker::SendToWorker(Worker* w, MessageType type) {
  out_.clear();
  out_.push_back(CopyOf(w->identity_frame));
  out_.emplace_back();
  if (type == MessageType::kDisconnect) {
    ccp::AppendDisconnect(out_, w->service->name);
  } else {
    ccp::AppendHeader(out_, type);
  }
  const absl::Status s = SendFrames(router_, out_);
  out_.clear();
  if (s.ok()) w->last_sent = Clock::now();
  return s;
}

void ConsensusBroker::FailNow(std::span<zmq::message_t> frames,
                              std::span<zmq::message_t> body,
                              std::string_view reason, std::string_view text) {
  out_.clear();
  out_.push_back(std::move(frames[0]));
  out_.emplace_back();
  ccp::AppendHeader(out_, MessageType::kReplyFailure);
  out_.push_back(std::move(body[ccp::kServiceIndex]));
  out_.push_back(std::move(body[ccp::kSequenceIndex]));
  out_.push_back(Frame(reason));
  out_.push_back(Frame(text));
  ++stats_.replies_failure;
  SendOut().IgnoreError();
}

void ConsensusBroker::Drain(std::chrono::milliseconds grace,
                            absl::AnyInvocable<void()> done) {
  if (done) on_drained_.push_back(std::move(done));
  if (!draining_) {
    draining_ = true;
    drain_timer_ = *reactor_.After(grace, [this] {
      drain_timer_.Release();  // fired: nothing left to cancel
      EndGrace();
    });
  }
  MaybeDrained();
}

void ConsensusBroker::EndGrace() {
  // Release() posts the callbacks once the last one is gone.
  while (fifo_head_ != nullptr) {
    Fail(fifo_head_, ccp::kReasonShutdown,
         "the broker is shutting down: the drain's grace period ended");
  }
}

void ConsensusBroker::MaybeDrained() {
  if (on_drained_.empty() || !open_.empty()) return;
  // Posted: the caller may be in the middle of answering the last request
  // (Release() comes before the reply is sent), or inside Drain().
  for (absl::AnyInvocable<void()>& done : on_drained_) {
    reactor_.Post([done = std::move(done)]() mutable { done(); });
  }
  on_drained_.clear();
}

void ConsensusBroker::NoteLatency(const Request* r) {
  if (!latency_hook_) return;
  // The deadline was set at arrival, request_timeout ahead.
  const Clock::time_point arrived = r->deadline - options_.request_timeout;
  latency_hook_(r->service->name, Clock::now() - arrived);
}

void ConsensusBroker::Succeed(Request* r) {
  out_.clear();
  out_.push_back(std::move(r->client_identity));
  out_.emplace_back();
  ccp::AppendHeader(out_, MessageType::kReplySuccess);
  out_.push_back(std::move(r->service_frame));
  out_.push_back(std::move(r->sequence_frame));
  const std::size_t header_size = out_.size();
  // Payloads in registration order.  A worker that answered and then left
  // still counts: its answer stands.
  for (std::size_t i = 0; i < r->quorum; ++i) {
    Request::Slot& slot = r->slots[i];
    if (!slot.answered) continue;
    for (zmq::message_t& f : slot.payload) out_.push_back(std::move(f));
  }
  if (out_.size() == header_size) out_.emplace_back();  // one empty frame
  ++stats_.replies_success;
  NoteLatency(r);
  Release(r);
  SendOut().IgnoreError();
}

void ConsensusBroker::Fail(Request* r, std::string_view reason,
                           std::string_view text) {
  out_.clear();
  out_.push_back(std::move(r->client_identity));
  out_.emplace_back();
  ccp::AppendHeader(out_, MessageType::kReplyFailure);
  out_.push_back(std::move(r->service_frame));
  out_.push_back(std::move(r->sequence_frame));
  out_.push_back(Frame(reason));
  out_.push_back(Frame(text));
  ++stats_.replies_failure;
  Release(r);
  SendOut().IgnoreError();
}

void ConsensusBroker::FailWithWorkerPayload(Request* r,
                                            std::span<zmq::message_t> payload) {
  if (payload.empty()) {
    Fail(r, ccp::kReasonWorkerFailed,
         absl::StrFormat("a worker of service %s answered failure without a "
                         "reason",
                         QuotedText(r->service->name)));
    return;
  }
  out_.clear();
  out_.push_back(std::move(r->client_identity));
  out_.emplace_back();
  ccp::AppendHeader(out_, MessageType::kReplyFailure);
  out_.push_back(std::move(r->service_frame));
  out_.push_back(std::move(r->sequence_frame));
  for (zmq::message_t& f : payload) out_.push_back(std::move(f));
  ++stats_.replies_failure;
  NoteLatency(r);
  Release(r);
  SendOut().IgnoreError();
}

void ConsensusBroker::Release(Request* r) {
  open_.erase(r->sequence);
  Service* service = r->service;
  if (r->svc_prev != nullptr) {
    r->svc_prev->svc_next = r->svc_next;
  } else {
    service->open_head = r->svc_next;
  }
  if (r->svc_next != nullptr) r->svc_next->svc_prev = r->svc_prev;
  if (r->fifo_prev != nullptr) {
    r->fifo_prev->fifo_next = r->fifo_next;
  } else {
    fifo_head_ = r->fifo_next;
  }
  if (r->fifo_next != nullptr) {
    r->fifo_next->fifo_prev = r->fifo_prev;
  } else {
    fifo_tail_ = r->fifo_prev;
  }
  r->svc_prev = r->svc_next = r->fifo_prev = r->fifo_next = nullptr;
  Client* client = r->client;
  client->last_seen = Clock::now();
  if (--client->open == 0) LinkIdle(client);
  for (std::size_t i = 0; i < r->quorum; ++i) {
    r->slots[i].worker = nullptr;
    r->slots[i].payload.clear();  // keeps capacity
  }
  r->quorum = 0;
  r->client = nullptr;
  r->service = nullptr;
  // The frames were moved into the reply; make sure nothing lingers.
  r->client_identity.rebuild();
  r->service_frame.rebuild();
  r->sequence_frame.rebuild();
  pool_.emplace_back(r);
  if (draining_) MaybeDrained();
}

// --- Workers leaving
// ----------------------------------------------------------

void ConsensusBroker::RemoveWorker(Worker* w, Leave why) {
  Service* service = w->service;
  if (why == Leave::kExpired) {
    // Tell a worker that is merely slow to register again.
    SendToWorker(w, MessageType::kDisconnect).IgnoreError();
  }
  auto& list = service->workers;
  auto at = list.erase(list.begin() + static_cast<std::ptrdiff_t>(w->position));
  for (; at != list.end(); ++at) --(*at)->position;

  // Drop it from every open request of its service; a request with nobody
  // left to answer is completed now.
  for (Request* r = service->open_head; r != nullptr;) {
    Request* next = r->svc_next;
    for (std::size_t i = 0; i < r->quorum; ++i) {
      Request::Slot& slot = r->slots[i];
      if (slot.worker != w) continue;
      // Forget the pointer either way: a new worker may get this address.
      slot.worker = nullptr;
      if (!slot.answered && --r->pending == 0) {
        if (r->answered > 0) {
          Succeed(r);
        } else {
          Fail(r, ccp::kReasonWorkerLeft,
               absl::StrFormat("every worker of service %s left before "
                               "answering",
                               QuotedText(service->name)));
        }
      }
      break;
    }
    r = next;
  }

  const char* reason = "left";
  switch (why) {
    case Leave::kDisconnect:
      ++stats_.workers_left;
      reason = "disconnected";
      break;
    case Leave::kUnroutable:
      ++stats_.workers_left;
      reason = "is unroutable (its socket is gone)";
      break;
    case Leave::kExpired:
      ++stats_.workers_expired;
      reason = "expired (no heartbeat)";
      break;
    case Leave::kMoved:
      ++stats_.workers_left;
      reason = "re-registered for another service";
      break;
    case Leave::kRefused:
      ++stats_.workers_left;
      reason = "was dropped (its new heartbeat settings are out of bounds)";
      break;
    case Leave::kShutdown:
      reason = "was dropped at shutdown";
      break;
  }
  if (leaves_log_.Admit(Clock::now())) {
    Log(LogLevel::kInfo,
        absl::StrFormat("worker %s %s; service %s has %d worker(s)%s",
                        PrintableIdentity(w->identity), reason,
                        QuotedText(service->name), service->workers.size(),
                        leaves_log_.SuppressedNote()));
  }

  auto wit = workers_.find(w->identity);
  workers_.erase(wit);  // destroys *w
  if (service->workers.empty() && service->open_head == nullptr) {
    auto sit = services_.find(service->name);
    services_.erase(sit);  // destroys *service
  }
}

// --- The sweep
// ------------------------------------------------------------------

void ConsensusBroker::Sweep() {
  const Clock::time_point now = Clock::now();

  // Deadlines: the FIFO is in deadline order, so only expired heads are
  // looked at.
  while (fifo_head_ != nullptr && fifo_head_->deadline <= now) {
    Request* r = fifo_head_;
    ++stats_.timeouts;
    Fail(r, ccp::kReasonTimeout,
         absl::StrFormat("%d of %d worker(s) did not answer within %d ms",
                         r->pending, r->quorum,
                         options_.request_timeout.count()));
  }

  // Heartbeats and expiry.  Removal changes workers_, so collect first.
  scratch_leaving_.clear();
  for (auto& [identity, worker] : workers_) {
    Worker* w = worker.get();
    if (now - w->last_recv > w->expiry) {
      scratch_leaving_.emplace_back(w, Leave::kExpired);
    } else if (now - w->last_sent >= w->interval) {
      const absl::Status s = SendToWorker(w, MessageType::kHeartbeat);
      if (s.ok()) {
        ++stats_.heartbeats_sent;
      } else if (absl::IsUnavailable(s)) {
        ++stats_.unroutable;
        scratch_leaving_.emplace_back(w, Leave::kUnroutable);
      }
    }
  }
  for (std::size_t i = 0; i < scratch_leaving_.size(); ++i) {
    RemoveWorker(scratch_leaving_[i].first, scratch_leaving_[i].second);
  }
  scratch_leaving_.clear();

  // Idle clients, at most every quarter of the idle timeout (and at most
  // once a second).
  if (now >= next_client_sweep_) {
    // The idle list is in last_seen order: only expired heads are looked at.
    while (idle_head_ != nullptr &&
           now - idle_head_->last_seen > options_.client_idle_timeout) {
      ++stats_.clients_expired;
      EraseClient(idle_head_);
    }
    const Clock::duration period = std::clamp<Clock::duration>(
        options_.client_idle_timeout / 4, options_.sweep_interval,
        std::chrono::seconds(1));
    next_client_sweep_ = now + period;
  }

  FlushLogLimiters(now, /*force=*/false);
}

absl::Status ConsensusBroker::CheckInvariantsForTesting() const {
  std::size_t open = 0, idle = 0;
  for (const auto& [id, client] : clients_) {
    if (client->id != id) return absl::InternalError("client record id");
    open += client->open;
    if (client->open == 0) ++idle;
    if (options_.max_requests_per_client != 0 &&
        client->open > options_.max_requests_per_client) {
      return absl::InternalError("a client above max_requests_per_client");
    }
  }
  if (open != open_.size()) {
    return absl::InternalError(absl::StrFormat(
        "clients count %d open requests, the broker %d", open, open_.size()));
  }
  std::size_t linked = 0;
  const Client* prev = nullptr;
  for (const Client* c = idle_head_; c != nullptr; c = c->idle_next) {
    if (c->open != 0 || c->idle_prev != prev) {
      return absl::InternalError("idle list broken");
    }
    prev = c;
    if (++linked > clients_.size()) return absl::InternalError("idle cycle");
  }
  if (prev != idle_tail_ || linked != idle) {
    return absl::InternalError(
        absl::StrFormat("%d idle records, %d on the idle list", idle, linked));
  }
  if (options_.max_clients != 0 && clients_.size() > options_.max_clients) {
    return absl::InternalError("more client records than max_clients");
  }
  return absl::OkStatus();
}

// --- Logging
// ------------------------------------------------------------------

void ConsensusBroker::NoteMalformed(std::string_view identity,
                                    const absl::Status& error) {
  ++stats_.malformed;
  if (malformed_log_.Admit(Clock::now())) {
    Log(LogLevel::kWarning,
        absl::StrFormat("malformed message from %s: %s%s",
                        PrintableIdentity(identity), error.message(),
                        malformed_log_.SuppressedNote()));
  }
}

void ConsensusBroker::FlushLogLimiters(Clock::time_point now, bool force) {
  struct Kind {
    LogLimiter* limiter;
    LogLevel level;
    const char* what;
  };
  const Kind kinds[] = {
      {&joins_log_, LogLevel::kInfo, "worker join line(s)"},
      {&leaves_log_, LogLevel::kInfo, "worker leave line(s)"},
      {&refused_log_, LogLevel::kWarning, "refused READY line(s)"},
      {&malformed_log_, LogLevel::kWarning, "malformed message line(s)"},
  };
  for (const Kind& k : kinds) {
    const std::uint64_t n =
        force ? k.limiter->TakeSuppressed() : k.limiter->Flush(now);
    if (n != 0) {
      Log(k.level,
          absl::StrFormat("%d more %s not logged (rate limit)", n, k.what));
    }
  }
}

void ConsensusBroker::Log(LogLevel level, std::string_view line) {
  if (log_hook_) {
    log_hook_(level, line);
    return;
  }
  const std::string_view name = LogLevelName(level);
  std::fprintf(stderr, "consensus %.*s: %.*s\n", static_cast<int>(name.size()),
               name.data(), static_cast<int>(line.size()), line.data());
}

}  // namespace zb
