// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/broker.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "brokers/common/log_text.h"
#include "brokers/common/router.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/common/log_limiter.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/codec.h"

namespace zb {
namespace {

using Clock = Reactor::Clock;

// abseil here is built with its own string_view; hash-map lookups by a
// std::string_view go through this explicit conversion.
absl::string_view AV(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

std::string_view SV(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

constexpr std::string_view kInproc = "inproc://";

// The broker's one table of peers holds both ROUTERs' peers.  An internal
// peer's identity is kept with this prefix in front: libzmq reserves
// identities that start with a zero byte for its own (5-byte) ones, so no
// well-behaved outside peer has one, and an outside peer that claims one
// anyway is refused (OnMessage), so the two ROUTERs' identities never meet.
constexpr std::string_view kInternalPrefix("\0zb-internal:", 13);

bool IsInternal(std::string_view identity) {
  return identity.size() > kInternalPrefix.size() &&
         identity.starts_with(kInternalPrefix);
}

void DefaultLog(LogLevel level, std::string_view line) {
  if (level < LogLevel::kWarning) return;
  std::fprintf(stderr, "zb::MajordomoBroker: %.*s\n",
               static_cast<int>(line.size()), line.data());
}

// A FIFO that can also push at the front, in one ring buffer that grows
// (doubling) and never shrinks: unlike std::deque, a queue that keeps
// moving does not allocate and free a block every few elements.  Popped
// slots are reset to T(), so emplace_* return a default-constructed T.
template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  T& emplace_back() {
    Reserve();
    ++size_;
    return buf_[(head_ + size_ - 1) % buf_.size()];
  }
  T& emplace_front() {
    Reserve();
    head_ = (head_ + buf_.size() - 1) % buf_.size();
    ++size_;
    return buf_[head_];
  }
  void pop_front() {
    buf_[head_] = T();
    head_ = (head_ + 1) % buf_.size();
    --size_;
  }
  // Slots allocated (the ring never shrinks by itself).
  std::size_t capacity() const { return buf_.size(); }
  // Frees the ring; the queue must be empty.
  void Release() {
    std::vector<T>().swap(buf_);
    head_ = 0;
  }

 private:
  void Reserve() {
    if (size_ < buf_.size()) return;
    std::vector<T> bigger(buf_.empty() ? 16 : buf_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) {
      bigger[i] = std::move(buf_[(head_ + i) % buf_.size()]);
    }
    buf_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace

class MajordomoBroker::Impl {
 public:
  Impl(Reactor& reactor, zmq::context_t& context, Options options)
      : reactor_(reactor),
        context_(context),
        options_(options),
        router_(context, zmq::socket_type::router),
        log_(DefaultLog) {
    SetRouterOptions(router_);
    if (options_.heartbeat_interval.count() <= 0) {
      options_.heartbeat_interval = Duration(1);
    }
    if (options_.heartbeat_liveness < 1) options_.heartbeat_liveness = 1;
    if (options_.max_redispatch < 0) options_.max_redispatch = 0;
    worker_lifetime_ =
        options_.heartbeat_interval * options_.heartbeat_liveness;
  }

  // The reactor registrations, made once by Create(); on failure none is
  // left.
  absl::Status Register() {
    absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
        router_, [this](std::span<zmq::message_t> f) { OnMessage(f); });
    if (!watch.ok()) return watch.status();
    absl::StatusOr<Reactor::Timer> sweep =
        reactor_.Every(options_.heartbeat_interval, [this] { Sweep(); });
    if (!sweep.ok()) return sweep.status();
    router_watch_ = *std::move(watch);
    sweep_timer_ = *std::move(sweep);
    return absl::OkStatus();
  }

  // The handles cancel the timers and remove the watch as members.
  ~Impl() { PostDrainCallbacks(); }  // a drain the destructor cut short

  absl::StatusOr<std::string> Bind(const std::string& endpoint,
                                   const ListenerSecurity& security) {
    return BindRouter(router_, endpoint, security);
  }

  // The internal ROUTER is made at the first internal endpoint: a broker
  // without in-process peers polls one socket, as before.
  absl::StatusOr<std::string> BindInternal(const std::string& endpoint) {
    if (!endpoint.starts_with(kInproc)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "cannot bind %s as an internal endpoint: only inproc:// endpoints "
          "are internal (a peer outside this process could reach it)",
          endpoint));
    }
    if (!internal_router_.has_value()) {
      zmq::socket_t& s =
          internal_router_.emplace(context_, zmq::socket_type::router);
      SetRouterOptions(s);
      absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
          s, [this](std::span<zmq::message_t> f) { OnInternalMessage(f); });
      if (!watch.ok()) {
        internal_router_.reset();
        return watch.status();
      }
      internal_watch_ = *std::move(watch);
    }
    return BindRouter(*internal_router_, endpoint, {});
  }

  absl::Status Monitor(const std::string& monitor_endpoint, int events) {
    if (zmq_socket_monitor(router_.handle(), monitor_endpoint.c_str(),
                           events) != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "monitor %s: %s", monitor_endpoint, zmq_strerror(zmq_errno())));
    }
    return absl::OkStatus();
  }

  void set_worker_event_hook(WorkerEventHook h) { worker_hook_ = std::move(h); }
  void set_latency_hook(LatencyHook h) { latency_hook_ = std::move(h); }
  void set_request_gate(RequestGate g) { request_gate_ = std::move(g); }
  void set_log_hook(LogHook h) { log_ = h ? std::move(h) : DefaultLog; }

  Stats stats() const {
    Stats s = stats_;
    for (const auto& [name, svc] : services_) {
      ServiceStats& ss = s.services[std::string(name)];
      ss.workers = svc->workers;
      ss.idle_workers = svc->idle;
      ss.queued = svc->queued;
    }
    s.clients = clients_.size();
    return s;
  }

  void Drain(Duration grace, absl::AnyInvocable<void()> done) {
    if (done) on_drained_.push_back(std::move(done));
    if (drained_) {
      PostDrainCallbacks();
      return;
    }
    if (draining_) return;  // the first deadline stands
    draining_ = true;
    drain_timer_ = *reactor_.After(grace, [this] {
      drain_timer_.Release();  // fired: nothing left to cancel
      FinishDrain();
    });
    MaybeFinishDrain();
  }
  bool draining() const { return draining_; }
  bool drained() const { return drained_; }
  std::size_t open_requests() const { return queued_total_ + busy_total_; }
  std::size_t worker_count() const { return workers_.size(); }
  std::size_t worker_count(std::string_view service) const {
    auto it = services_.find(AV(service));
    return it == services_.end() ? 0 : it->second->workers;
  }

  void HandleForTesting(std::span<zmq::message_t> f) { OnMessage(f); }
  void SweepForTesting() { Sweep(); }
  void SetClockForTesting(absl::AnyInvocable<Clock::time_point() const> c) {
    clock_for_testing_ = std::move(c);
  }

 private:
  Clock::time_point Now() const {
    return clock_for_testing_ ? clock_for_testing_() : Clock::now();
  }

  struct Service;
  struct Client;

  // A request waiting for a worker: frames[0] is the client identity, the
  // rest is the body.
  struct Request {
    Frames frames;
    zmq::message_t tag;  // the client's request tag; empty: a plain request
    Client* client = nullptr;
    Clock::time_point arrived;
    int failures = 0;  // how many workers failed while serving it
  };

  // A request sent to a worker and not answered yet: [client identity, body
  // copies...].  The body frames are zmq_msg_copy()s (shared buffers), kept
  // to redispatch it.
  struct Outstanding {
    Frames frames;
    zmq::message_t tag;  // as Request::tag, restored on the reply
    Client* client = nullptr;
    Clock::time_point arrived;
    Clock::time_point dispatched;  // when it was sent to the worker
    int failures = 0;
  };

  struct Worker {
    std::string identity;
    Service* service = nullptr;
    // Idle list: workers that can take a request (fewer than
    // worker_prefetch outstanding), least recently dispatched to first.
    Worker* prev = nullptr;
    Worker* next = nullptr;
    bool idle = false;
    // Outstanding requests, oldest first: a ring of worker_prefetch slots,
    // allocated at READY.  A slot keeps its Frames' capacity when it is
    // freed, so dispatching does not allocate once warmed up.
    std::vector<Outstanding> ring;
    std::size_t head = 0;      // index of the oldest outstanding request
    std::size_t count = 0;     // outstanding requests
    Clock::time_point expiry;  // last heard from + lifetime
    bool sent_since_sweep = false;

    Outstanding& at(std::size_t i) { return ring[(head + i) % ring.size()]; }
    bool has_credit() const { return count < ring.size(); }
  };

  // A client (socket identity) with requests open in the broker.  A record
  // whose client has none left is kept, in the idle list, for up to two
  // sweeps, so that a client sending one request at a time does not make
  // the broker create and delete a record per request.
  struct Client {
    std::string identity;
    std::size_t open = 0;  // queued + outstanding, over all services
    // Idle list (open == 0): linked exactly while open == 0.
    Client* idle_prev = nullptr;
    Client* idle_next = nullptr;
    bool idle = false;
    int idle_sweeps = 0;
  };

  // One client's queued requests for one service, oldest first, linked in
  // the service's round-robin ring while not empty.
  struct ClientQueue {
    Client* client = nullptr;
    RingQueue<Request> requests;
    ClientQueue* prev = nullptr;
    ClientQueue* next = nullptr;
  };

  struct Service {
    std::string name;
    std::size_t workers = 0;
    std::size_t idle = 0;
    Worker* idle_head = nullptr;  // least recently used
    Worker* idle_tail = nullptr;
    // The queue, fair across clients: the ring of client queues with
    // requests, the next to serve first.  A worker takes the oldest request
    // of rr_head, which then goes to the back of the ring.
    std::size_t queued = 0;
    ClientQueue* rr_head = nullptr;
    ClientQueue* rr_tail = nullptr;
    absl::flat_hash_map<const Client*, std::unique_ptr<ClientQueue>> queues;
  };

  // --- Receiving -------------------------------------------------------------

  // A message from the external ROUTER.  An identity in the internal
  // namespace is a peer claiming to be in-process: refused before anything
  // looks it up, so that it can neither pass as internal nor disturb the
  // internal peer of that name (Malformed() would disconnect a worker).
  void OnMessage(std::span<zmq::message_t> frames) {
    if (drained_) return;  // inert after a drain
    now_ = Now();
    if (!frames.empty() && IsInternal(View(frames[0]))) {
      ++stats_.malformed;
      if (malformed_log_.Admit(now_)) {
        Log(LogLevel::kWarning,
            absl::StrCat("dropped a message from ",
                         PrintableIdentity(View(frames[0])),
                         ": that identity is reserved for in-process peers",
                         malformed_log_.SuppressedNote()));
      }
      return;
    }
    Handle(frames);
  }

  // A message from the internal ROUTER: its identity moves into the
  // internal namespace (kInternalPrefix), where no outside peer can be.
  void OnInternalMessage(std::span<zmq::message_t> frames) {
    if (drained_) return;
    now_ = Now();
    if (!frames.empty()) {
      const std::string_view id = View(frames[0]);
      zmq::message_t keyed(kInternalPrefix.size() + id.size());
      char* out = static_cast<char*>(keyed.data());
      std::copy(kInternalPrefix.begin(), kInternalPrefix.end(), out);
      std::copy(id.begin(), id.end(), out + kInternalPrefix.size());
      frames[0] = std::move(keyed);
    }
    Handle(frames);
  }

  void Handle(std::span<zmq::message_t> frames) {
    if (frames.size() < 2) {
      Malformed(frames.empty() ? std::string_view() : View(frames[0]),
                "message without a body");
      return;
    }
    zmq::message_t& identity = frames[0];
    std::span<zmq::message_t> msg = frames.subspan(1);
    absl::StatusOr<mdp::Protocol> protocol = mdp::ClassifyMessage(msg);
    if (!protocol.ok()) {
      Malformed(View(identity), SV(protocol.status().message()));
      return;
    }
    if (*protocol != mdp::Protocol::kWorker) {
      absl::StatusOr<mdp::ClientMessage> m = *protocol == mdp::Protocol::kClient
                                                 ? mdp::ParseClient(msg)
                                                 : mdp::ParseTaggedClient(msg);
      if (!m.ok()) {
        Malformed(View(identity), SV(m.status().message()));
        return;
      }
      OnClientRequest(identity, *m);
    } else {
      absl::StatusOr<mdp::WorkerMessage> m = mdp::ParseWorker(msg);
      if (!m.ok()) {
        Malformed(View(identity), SV(m.status().message()));
        return;
      }
      OnWorkerMessage(identity, *m);
    }
  }

  void Malformed(std::string_view identity, std::string_view why) {
    ++stats_.malformed;
    // A registered worker that sends garbage is treated as invalid (RFC 7).
    auto it = workers_.find(AV(identity));
    if (it != workers_.end()) {
      DisconnectWorker(it->second.get(), "malformed message");
    }
    if (malformed_log_.Admit(now_)) {
      Log(LogLevel::kWarning,
          absl::StrCat("dropped a message from ", PrintableIdentity(identity),
                       ": ", AV(why), malformed_log_.SuppressedNote()));
    }
  }

  // A worker refused or a request dropped because of a cap (or a reserved
  // name), logged rate-limited.
  void Refused(std::string_view what) {
    if (refused_log_.Admit(now_)) {
      Log(LogLevel::kWarning,
          absl::StrCat(AV(what), refused_log_.SuppressedNote()));
    }
  }

  void OnClientRequest(zmq::message_t& identity, mdp::ClientMessage& m) {
    if (draining_) {
      ++stats_.rejected_draining;
      return;
    }
    // In-process peers are the daemon's own (Titanic's dispatcher): never
    // a CLIENT_REQUEST of the pair, whatever the gate would say.
    if (IsInternal(View(identity))) {
      ++stats_.requests_internal;
    } else if (request_gate_ && !request_gate_()) {
      ++stats_.requests_refused_passive;
      return;
    }
    ++stats_.requests;
    if (m.tag != nullptr) ++stats_.tagged_requests;
    if (mdp::IsMmiService(m.service)) {
      OnMmi(identity, m);
      return;
    }
    // Before the service lookup, which may create the service: a dropped
    // request must not leave an empty service behind.
    Client* client = FindOrAddClient(View(identity));
    if (options_.max_requests_per_client != 0 &&
        client->open >= options_.max_requests_per_client) {
      ++stats_.dropped_max_requests_per_client;
      if (refused_log_.Admit(now_)) {
        Log(LogLevel::kWarning,
            absl::StrCat("dropped a request from ",
                         PrintableIdentity(View(identity)), " for service ",
                         QuotedText(m.service), ": max_requests_per_client (",
                         options_.max_requests_per_client, ") reached",
                         refused_log_.SuppressedNote()));
      }
      return;
    }
    Service* service = FindOrCreateService(m.service);
    if (service == nullptr) {
      ++stats_.dropped_max_services;
      if (refused_log_.Admit(now_)) {
        Log(LogLevel::kWarning,
            absl::StrCat("dropped a request from ",
                         PrintableIdentity(View(identity)), " for new service ",
                         QuotedText(m.service), ": max_services (",
                         options_.max_services, ") reached",
                         refused_log_.SuppressedNote()));
      }
      return;
    }
    if (service->idle_head != nullptr) {
      // The hot path: straight to the least recently used worker with
      // credit; it goes to the back of the order if it has credit left.
      AcquireClient(client);
      Worker* w = PopIdle(service);
      if (Dispatch(w, client, identity, m.tag, m.body, now_, 0) &&
          w->has_credit()) {
        PushIdle(w);
      }
      return;
    }
    if (options_.max_queue_per_service != 0 &&
        service->queued >= options_.max_queue_per_service) {
      ++stats_.dropped_queue_full;
      return;
    }
    AcquireClient(client);
    Request& r = Enqueue(service, client, /*front=*/false);
    r.frames = TakeSpareFrames();
    r.frames.push_back(std::move(identity));
    for (auto& f : m.body) r.frames.push_back(std::move(f));
    if (m.tag != nullptr) r.tag = std::move(*m.tag);
    r.arrived = now_;
  }

  void OnMmi(zmq::message_t& identity, mdp::ClientMessage& m) {
    ++stats_.mmi_requests;
    std::string_view code = mdp::kMmiNotImplemented;
    if (m.service == mdp::kMmiService) {
      auto it = services_.find(AV(View(m.body[0])));
      code = (it != services_.end() && it->second->workers > 0)
                 ? mdp::kMmiFound
                 : mdp::kMmiNotFound;
    } else if (m.service == mdp::kMmiTagService) {
      code = mdp::kMmiFound;  // this broker speaks request tags
    }
    zmq::message_t answer = Frame(code);
    std::span<zmq::message_t> body(&answer, 1);
    out_.clear();
    out_.push_back(std::move(identity));
    if (m.tag != nullptr) {
      mdp::AppendTaggedClientReply(m.service, std::move(*m.tag), body, &out_);
    } else {
      mdp::AppendClientReply(m.service, body, &out_);
    }
    if (Send()) ++stats_.replies;
  }

  void OnWorkerMessage(zmq::message_t& identity, mdp::WorkerMessage& m) {
    auto it = workers_.find(AV(View(identity)));
    Worker* w = it == workers_.end() ? nullptr : it->second.get();
    if (w != nullptr) w->expiry = now_ + worker_lifetime_;
    switch (m.command) {
      case mdp::Command::kReady:
        if (w != nullptr) {
          DisconnectWorker(w, "second READY");
        } else if (mdp::IsMmiService(m.service)) {
          SendDisconnect(View(identity));
          Refused(absl::StrCat("refused worker ",
                               PrintableIdentity(View(identity)), ": service ",
                               QuotedText(m.service), " is reserved (MMI)"));
        } else {
          RegisterWorker(View(identity), m.service);
        }
        return;
      case mdp::Command::kReply: {
        if (w == nullptr) {
          SendDisconnect(View(identity));  // e.g. after a broker restart
          return;
        }
        if (w->count == 0) {
          DisconnectWorker(w, "REPLY without a request");
          return;
        }
        // The oldest outstanding request of the client the REPLY names.
        const std::string_view client = View(*m.address);
        std::size_t i = 0;
        while (i < w->count && View(w->at(i).frames[0]) != client) ++i;
        if (i == w->count) {
          DisconnectWorker(w, "REPLY for another client");
        } else {
          OnReply(w, i, m);
        }
        return;
      }
      case mdp::Command::kHeartbeat:
        if (w == nullptr) SendDisconnect(View(identity));
        return;
      case mdp::Command::kDisconnect:
        if (w != nullptr) {
          ++stats_.workers_left;
          RemoveWorker(w, WorkerEvent::Kind::kLeft, "");
        }
        return;
      case mdp::Command::kRequest:  // only the broker sends REQUEST
        if (w != nullptr) {
          DisconnectWorker(w, "REQUEST from a worker");
        } else {
          SendDisconnect(View(identity));
        }
        return;
    }
  }

  // The REPLY settles w's i-th outstanding request.
  void OnReply(Worker* w, std::size_t i, mdp::WorkerMessage& m) {
    out_.clear();
    out_.push_back(std::move(*m.address));
    zmq::message_t& tag = w->at(i).tag;
    if (tag.size() != 0) {
      mdp::AppendTaggedClientReply(w->service->name, std::move(tag), m.body,
                                   &out_);
    } else {
      mdp::AppendClientReply(w->service->name, m.body, &out_);
    }
    if (Send()) {
      ++stats_.replies;
      if (latency_hook_) {
        latency_hook_(w->service->name, now_ - w->at(i).arrived);
      }
    }
    ReleaseClient(w->at(i).client);
    w->at(i).frames.clear();  // releases the shared request buffers
    // Close the gap: the freed slot moves to the end of the ring (swaps,
    // so every slot keeps a Frames buffer and nothing is freed).
    for (; i + 1 < w->count; ++i) std::swap(w->at(i), w->at(i + 1));
    --w->count;
    --busy_total_;
    if (!w->idle) WorkerReady(w);
    if (draining_) MaybeFinishDrain();
  }

  // --- Workers ---------------------------------------------------------------

  void RegisterWorker(std::string_view identity, std::string_view name) {
    if (options_.max_workers != 0 && workers_.size() >= options_.max_workers) {
      ++stats_.workers_refused;
      SendDisconnect(identity);
      Refused(absl::StrCat("refused worker ", PrintableIdentity(identity),
                           " for service ", QuotedText(name), ": max_workers (",
                           options_.max_workers, ") reached"));
      return;
    }
    Service* service = FindOrCreateService(name);
    if (service == nullptr) {
      ++stats_.workers_refused;
      SendDisconnect(identity);
      Refused(absl::StrCat("refused worker ", PrintableIdentity(identity),
                           " for new service ", QuotedText(name),
                           ": max_services (", options_.max_services,
                           ") reached"));
      return;
    }
    auto owned = std::make_unique<Worker>();
    Worker* w = owned.get();
    w->identity = std::string(identity);
    w->service = service;
    w->ring.resize(static_cast<std::size_t>(options_.worker_prefetch));
    w->expiry = now_ + worker_lifetime_;
    workers_.emplace(w->identity, std::move(owned));
    ++service->workers;
    ++stats_.workers_joined;
    if (joins_log_.Admit(now_)) {
      Log(LogLevel::kInfo,
          absl::StrCat("worker ", PrintableIdentity(w->identity),
                       " joined service ", QuotedText(service->name),
                       joins_log_.SuppressedNote()));
    }
    if (worker_hook_) {
      worker_hook_(WorkerEvent{WorkerEvent::Kind::kJoined, w->identity,
                               service->name, ""});
    }
    WorkerReady(w);
  }

  // `w` (not in the idle list) has credit: give it the oldest queued
  // requests while it has credit, then make it idle if it still has some.
  // May remove `w` (when a send fails).
  void WorkerReady(Worker* w) {
    Service* s = w->service;
    while (s->queued > 0 && w->has_credit()) {
      Request r = Dequeue(s);
      if (Expired(r)) {
        ReleaseClient(r.client);
        RecycleFrames(std::move(r.frames));
        continue;
      }
      if (!DispatchQueued(w, std::move(r))) return;  // w is gone
    }
    if (w->has_credit()) PushIdle(w);
  }

  bool Expired(const Request& r) {
    if (options_.queue_expiry.count() > 0 &&
        now_ - r.arrived >= options_.queue_expiry) {
      ++stats_.expired;
      return true;
    }
    return false;
  }

  // Sends a request that arrived just now (frames still in the reactor's
  // buffer) to `w`, which must have credit and not be in the idle list.
  // Returns false when the send failed and `w` was removed.
  bool Dispatch(Worker* w, Client* owner, zmq::message_t& client,
                zmq::message_t* tag, std::span<zmq::message_t> body,
                Clock::time_point arrived, int failures) {
    Outstanding& o = w->at(w->count);
    o.client = owner;
    // The tag stays here: the worker gets exactly the REQUEST a plain client
    // would have caused.
    o.tag = tag != nullptr ? std::move(*tag) : zmq::message_t();
    o.frames.clear();
    o.frames.emplace_back().copy(client);
    if (options_.max_redispatch > 0) {
      for (auto& f : body) o.frames.emplace_back().copy(f);
    }
    out_.clear();
    out_.push_back(Frame(w->identity));
    mdp::AppendRequest(std::move(client), body, &out_);
    return SendToWorker(w, arrived, failures);
  }

  // Sends a queued request to `w` (as Dispatch); its frames become w's
  // outstanding copy.
  bool DispatchQueued(Worker* w, Request r) {
    Outstanding& o = w->at(w->count);
    RecycleFrames(std::move(o.frames));
    o.frames = std::move(r.frames);
    o.tag = std::move(r.tag);
    o.client = r.client;
    out_.clear();
    out_.push_back(Frame(w->identity));
    zmq::message_t client;
    client.copy(o.frames[0]);
    mdp::AppendRequest(std::move(client), {}, &out_);
    for (std::size_t i = 1; i < o.frames.size(); ++i) {
      out_.emplace_back().copy(o.frames[i]);
    }
    return SendToWorker(w, r.arrived, r.failures);
  }

  // Sends out_ (a REQUEST for w) to `w`; the request becomes w's next
  // outstanding one.  Returns false when the send was refused: the request
  // is then back at the front of its queue and `w` has been removed.
  bool SendToWorker(Worker* w, Clock::time_point arrived, int failures) {
    Outstanding& o = w->at(w->count);
    o.arrived = arrived;
    o.dispatched = now_;
    o.failures = failures;
    w->sent_since_sweep = true;
    absl::Status s = SendRouted(out_);
    if (s.ok()) {
      ++w->count;
      ++busy_total_;
      return true;
    }
    // The worker's connection is gone (or its pipe is full).  A ROUTER
    // refuses a message at its first frame, so nothing was sent and out_
    // still holds the whole request: it goes back to the front of the queue
    // as it was.  It was never delivered, so this is no failure of the
    // request, whatever max_redispatch says.
    CountRefusedSend(s);
    o.frames.clear();  // keeps the slot's capacity
    Request& r = Enqueue(w->service, o.client, /*front=*/true);
    r.frames = TakeSpareFrames();
    r.tag = std::move(o.tag);
    r.frames.push_back(std::move(out_[kRequestClientFrame]));
    for (std::size_t i = kRequestBodyFrame; i < out_.size(); ++i) {
      r.frames.push_back(std::move(out_[i]));
    }
    r.arrived = arrived;
    r.failures = failures;
    DisconnectWorker(w, absl::StrFormat("cannot send: %s", s.message()));
    return false;
  }

  void PushIdle(Worker* w) {
    Service* s = w->service;
    w->idle = true;
    w->next = nullptr;
    w->prev = s->idle_tail;
    if (s->idle_tail != nullptr) {
      s->idle_tail->next = w;
    } else {
      s->idle_head = w;
    }
    s->idle_tail = w;
    ++s->idle;
  }

  Worker* PopIdle(Service* s) {
    Worker* w = s->idle_head;
    Unlink(w);
    return w;
  }

  void Unlink(Worker* w) {
    Service* s = w->service;
    if (w->prev != nullptr) {
      w->prev->next = w->next;
    } else {
      s->idle_head = w->next;
    }
    if (w->next != nullptr) {
      w->next->prev = w->prev;
    } else {
      s->idle_tail = w->prev;
    }
    w->prev = w->next = nullptr;
    w->idle = false;
    --s->idle;
  }

  // Protocol violation or unreachable worker: DISCONNECT and forget it.
  void DisconnectWorker(Worker* w, std::string_view reason) {
    SendDisconnect(w->identity);
    ++stats_.workers_disconnected;
    RemoveWorker(w, WorkerEvent::Kind::kDisconnected, reason);
  }

  // Forgets `w`; each of its outstanding requests goes back to the front of
  // the queue (in the order they were sent) or is counted as a failure.
  // Forgets the service too when it is left with no worker and no queued
  // request.
  void RemoveWorker(Worker* w, WorkerEvent::Kind kind,
                    std::string_view reason) {
    Service* s = w->service;
    ++removing_;
    if (leaves_log_.Admit(now_)) {
      Log(LogLevel::kInfo,
          absl::StrCat("worker ", PrintableIdentity(w->identity), " ",
                       AV(LeaveText(kind)), " service ", QuotedText(s->name),
                       reason.empty() ? "" : ": ", AV(reason),
                       leaves_log_.SuppressedNote()));
    }
    if (worker_hook_) {
      worker_hook_(WorkerEvent{kind, w->identity, s->name, reason});
    }
    if (w->idle) Unlink(w);
    --s->workers;
    // Newest first, each to the front: the queue then starts with the
    // oldest.
    for (std::size_t i = w->count; i-- > 0;) {
      Outstanding& o = w->at(i);
      --busy_total_;
      const int failures = o.failures + 1;
      if (drained_) {
        ++stats_.expired;  // the drain's grace period ran out
        ReleaseClient(o.client);
      } else if (failures > options_.max_redispatch || o.frames.size() < 2) {
        ++stats_.failures;
        ReleaseClient(o.client);
      } else {
        ++stats_.redispatched;
        Request& r = Enqueue(s, o.client, /*front=*/true);
        r.frames = std::move(o.frames);
        r.tag = std::move(o.tag);
        r.arrived = o.arrived;
        r.failures = failures;
      }
    }
    w->count = 0;
    for (Outstanding& o : w->ring) RecycleFrames(std::move(o.frames));
    std::string key = std::move(w->identity);
    workers_.erase(key);  // destroys *w
    // Workers with credit take the requeued requests (and a request whose
    // send to `w` was refused).  A failed send in there removes that worker
    // too, nested: only the outermost removal runs this loop, which then
    // goes on with the next worker, so the stack does not grow with the
    // number of dead workers.  Only the outermost removal may forget the
    // service, too: callers further up (this loop) still use `s`.
    if (removing_ == 1) {
      while (s->idle_head != nullptr && s->queued > 0) {
        WorkerReady(PopIdle(s));
      }
    }
    if (--removing_ == 0 && !drained_ && s->workers == 0 && s->queued == 0) {
      services_.erase(services_.find(s->name));  // destroys *s
    }
    if (draining_) MaybeFinishDrain();
  }

  void SendDisconnect(std::string_view identity) {
    Frames& out = control_;
    out.clear();
    out.push_back(Frame(identity));
    mdp::AppendDisconnect(&out);
    if (SendRouted(out).ok()) ++stats_.disconnects_sent;
  }

  // --- Services --------------------------------------------------------------

  Service* FindOrCreateService(std::string_view name) {
    auto it = services_.find(AV(name));
    if (it != services_.end()) return it->second.get();
    if (options_.max_services != 0 &&
        services_.size() >= options_.max_services) {
      return nullptr;
    }
    auto s = std::make_unique<Service>();
    s->name = std::string(name);
    Service* raw = s.get();
    services_.emplace(raw->name, std::move(s));
    return raw;
  }

  // --- Fair queues and client records ----------------------------------------

  // A new slot for a request of `c` queued for `s`: at the back of c's
  // queue for s, or -- a request going back after its worker failed -- at
  // its front, with c first in the ring so that it is served next.
  Request& Enqueue(Service* s, Client* c, bool front) {
    auto [it, inserted] = s->queues.try_emplace(c, nullptr);
    if (inserted) {
      it->second = TakeSpareQueue();
      it->second->client = c;
      LinkQueue(s, it->second.get(), front);
    } else if (front && s->rr_head != it->second.get()) {
      UnlinkQueue(s, it->second.get());
      LinkQueue(s, it->second.get(), /*front=*/true);
    }
    ClientQueue* q = it->second.get();
    Request& r =
        front ? q->requests.emplace_front() : q->requests.emplace_back();
    r.client = c;
    ++s->queued;
    ++queued_total_;
    return r;
  }

  // The next queued request of `s` (which has one): the oldest of the
  // client whose turn it is; that client goes to the back of the ring.
  Request Dequeue(Service* s) {
    ClientQueue* q = s->rr_head;
    Request r = std::move(q->requests.front());
    q->requests.pop_front();
    --s->queued;
    --queued_total_;
    UnlinkQueue(s, q);
    if (q->requests.empty()) {
      DropQueue(s, q);
    } else {
      LinkQueue(s, q, /*front=*/false);
    }
    return r;
  }

  // Drops what waited longer than queue_expiry (each client queue's front
  // is its oldest).
  void ExpireQueued(Service* s) {
    for (ClientQueue* q = s->rr_head; q != nullptr;) {
      ClientQueue* next = q->next;
      while (!q->requests.empty() && Expired(q->requests.front())) {
        Request& r = q->requests.front();
        ReleaseClient(r.client);
        RecycleFrames(std::move(r.frames));
        q->requests.pop_front();
        --s->queued;
        --queued_total_;
      }
      if (q->requests.empty()) {
        UnlinkQueue(s, q);
        DropQueue(s, q);
      }
      q = next;
    }
  }

  void LinkQueue(Service* s, ClientQueue* q, bool front) {
    if (front) {
      q->prev = nullptr;
      q->next = s->rr_head;
      if (s->rr_head != nullptr) {
        s->rr_head->prev = q;
      } else {
        s->rr_tail = q;
      }
      s->rr_head = q;
    } else {
      q->next = nullptr;
      q->prev = s->rr_tail;
      if (s->rr_tail != nullptr) {
        s->rr_tail->next = q;
      } else {
        s->rr_head = q;
      }
      s->rr_tail = q;
    }
  }

  void UnlinkQueue(Service* s, ClientQueue* q) {
    (q->prev != nullptr ? q->prev->next : s->rr_head) = q->next;
    (q->next != nullptr ? q->next->prev : s->rr_tail) = q->prev;
    q->prev = q->next = nullptr;
  }

  // Forgets an empty, unlinked client queue (kept for reuse).
  void DropQueue(Service* s, ClientQueue* q) {
    auto it = s->queues.find(q->client);
    std::unique_ptr<ClientQueue> owned = std::move(it->second);
    s->queues.erase(it);
    owned->client = nullptr;
    // A ring that grew for a backlog is not kept: memory comes back after
    // a flood.
    if (owned->requests.capacity() > kMaxSpareQueueCapacity) {
      owned->requests.Release();
    }
    if (spare_queues_.size() < kMaxSpareRecords) {
      spare_queues_.push_back(std::move(owned));
    }
  }

  std::unique_ptr<ClientQueue> TakeSpareQueue() {
    if (spare_queues_.empty()) return std::make_unique<ClientQueue>();
    std::unique_ptr<ClientQueue> q = std::move(spare_queues_.back());
    spare_queues_.pop_back();
    return q;
  }

  // The record of the client with this identity, made (idle) if needed.
  Client* FindOrAddClient(std::string_view identity) {
    auto it = clients_.find(AV(identity));
    if (it != clients_.end()) return it->second.get();
    std::unique_ptr<Client> owned;
    if (spare_clients_.empty()) {
      owned = std::make_unique<Client>();
    } else {
      owned = std::move(spare_clients_.back());
      spare_clients_.pop_back();
    }
    Client* c = owned.get();
    c->identity.assign(identity);
    c->open = 0;
    clients_.emplace(c->identity, std::move(owned));
    LinkIdleClient(c);
    return c;
  }

  // One more request of `c` is open in the broker.
  void AcquireClient(Client* c) {
    if (c->open++ == 0) UnlinkIdleClient(c);
  }

  // One request of `c` is over (answered, failed, expired).
  void ReleaseClient(Client* c) {
    if (--c->open == 0) LinkIdleClient(c);
  }

  void LinkIdleClient(Client* c) {
    c->idle = true;
    c->idle_sweeps = 0;
    c->idle_prev = nullptr;
    c->idle_next = idle_clients_;
    if (idle_clients_ != nullptr) idle_clients_->idle_prev = c;
    idle_clients_ = c;
  }

  void UnlinkIdleClient(Client* c) {
    if (!c->idle) return;
    (c->idle_prev != nullptr ? c->idle_prev->idle_next : idle_clients_) =
        c->idle_next;
    if (c->idle_next != nullptr) c->idle_next->idle_prev = c->idle_prev;
    c->idle_prev = c->idle_next = nullptr;
    c->idle = false;
  }

  // Forgets clients that have had nothing open for two whole sweeps.
  void SweepIdleClients() {
    for (Client* c = idle_clients_; c != nullptr;) {
      Client* next = c->idle_next;
      if (++c->idle_sweeps >= 2) {
        UnlinkIdleClient(c);
        auto it = clients_.find(c->identity);
        std::unique_ptr<Client> owned = std::move(it->second);
        clients_.erase(it);
        if (spare_clients_.size() < kMaxSpareRecords) {
          spare_clients_.push_back(std::move(owned));
        }
      }
      c = next;
    }
  }

  // --- Timers ----------------------------------------------------------------

  void Sweep() {
    if (drained_) return;
    now_ = Now();
    // Workers: expire the silent ones, disconnect those that hold a request
    // longer than reply_timeout, heartbeat the ones we did not talk to.
    // This visits every worker once per interval, which the heartbeats need
    // anyway; the reply deadline adds one comparison per busy worker (its
    // oldest outstanding request is the first of its ring).
    dead_.clear();
    timed_out_.clear();
    const bool reply_deadline = options_.reply_timeout.count() > 0;
    for (auto& [id, w] : workers_) {
      if (now_ >= w->expiry) {
        dead_.push_back(w->identity);
        // Out of the idle lists first, so that a request redispatched while
        // the dead are removed never goes to one of them.
        if (w->idle) Unlink(w.get());
        continue;
      }
      if (reply_deadline && w->count > 0 &&
          now_ - w->at(0).dispatched >= options_.reply_timeout) {
        timed_out_.push_back(w->identity);
        if (w->idle) Unlink(w.get());
        continue;
      }
      if (!w->sent_since_sweep) {
        control_.clear();
        control_.push_back(Frame(w->identity));
        mdp::AppendHeartbeat(&control_);
        if (absl::Status st = SendRouted(control_); !st.ok()) {
          CountRefusedSend(st);
        }
      }
      w->sent_since_sweep = false;
    }
    for (const std::string& identity : dead_) {
      // Looked up again: removing one worker can remove another (a failed
      // redispatch disconnects the worker it was sent to).
      auto it = workers_.find(identity);
      if (it == workers_.end()) continue;
      ++stats_.workers_expired;
      RemoveWorker(it->second.get(), WorkerEvent::Kind::kExpired,
                   "heartbeat silence");
    }
    for (const std::string& identity : timed_out_) {
      auto it = workers_.find(identity);
      if (it == workers_.end()) continue;
      ++stats_.reply_timeouts;
      DisconnectWorker(it->second.get(), "no reply within reply_timeout");
    }
    // Queues: drop what waited too long (the front is the oldest); forget
    // services that have neither workers nor requests.
    std::vector<std::string>& unused = unused_services_;
    unused.clear();
    for (auto& [name, s] : services_) {
      if (options_.queue_expiry.count() > 0) ExpireQueued(s.get());
      if (s->workers == 0 && s->queued == 0) unused.push_back(s->name);
    }
    for (const std::string& name : unused) services_.erase(name);
    SweepIdleClients();
    FlushLogLimiters();
    if (draining_) MaybeFinishDrain();
  }

  void MaybeFinishDrain() {
    if (draining_ && !drained_ && open_requests() == 0) FinishDrain();
  }

  void FinishDrain() {
    if (drained_) return;
    drained_ = true;
    drain_timer_.Reset();
    while (!workers_.empty()) {
      Worker* w = workers_.begin()->second.get();
      SendDisconnect(w->identity);
      ++stats_.workers_disconnected;
      RemoveWorker(w, WorkerEvent::Kind::kDisconnected, "broker shutdown");
    }
    for (auto& [name, s] : services_) {
      stats_.expired += s->queued;
    }
    services_.clear();
    clients_.clear();
    idle_clients_ = nullptr;
    queued_total_ = 0;
    busy_total_ = 0;
    PostDrainCallbacks();
  }

  // Posted, never called here: FinishDrain() may run inside Drain() or in
  // the middle of handling a message.
  void PostDrainCallbacks() {
    for (absl::AnyInvocable<void()>& done : on_drained_) {
      reactor_.Post([done = std::move(done)]() mutable { done(); });
    }
    on_drained_.clear();
  }

  // --- Helpers ---------------------------------------------------------------

  // Sends out_ to the peer named in out_[0]; counts a refused send.
  bool Send() {
    absl::Status s = SendRouted(out_);
    if (s.ok()) return true;
    CountRefusedSend(s);
    return false;
  }

  // Sends `frames` ([identity, ...]) on the ROUTER the identity came from:
  // an internal one loses its prefix and goes out on the internal ROUTER.
  // frames[0] is replaced then; the rest is untouched when the send is
  // refused, as SendToWorker() needs.
  absl::Status SendRouted(Frames& frames) {
    if (IsInternal(View(frames[0]))) {
      frames[0] = Frame(View(frames[0]).substr(kInternalPrefix.size()));
      return SendFrames(*internal_router_, frames);
    }
    return SendFrames(router_, frames);
  }

  // Both ROUTERs: a peer that is gone is an error (ZMQ_ROUTER_MANDATORY),
  // what is queued lingers for Options::linger, frames are bounded.
  void SetRouterOptions(zmq::socket_t& s) {
    s.set(zmq::sockopt::router_mandatory, 1);
    s.set(zmq::sockopt::linger, static_cast<int>(options_.linger.count()));
    s.set(zmq::sockopt::maxmsgsize,
          options_.max_message_size > 0 ? options_.max_message_size : -1);
  }

  // The ROUTER refuses a message when the peer is gone (EHOSTUNREACH, with
  // ZMQ_ROUTER_MANDATORY) or when its pipe is full (EAGAIN at the
  // high-water mark: the peer is there but does not read fast enough).
  void CountRefusedSend(const absl::Status& s) {
    if (s.code() == absl::StatusCode::kResourceExhausted) {
      ++stats_.dropped_full_pipe;
    } else {
      ++stats_.unroutable;
    }
  }

  void Log(LogLevel level, std::string_view line) {
    if (log_) log_(level, line);
  }

  static std::string_view LeaveText(WorkerEvent::Kind kind) {
    switch (kind) {
      case WorkerEvent::Kind::kJoined:
        return "joined";
      case WorkerEvent::Kind::kLeft:
        return "left (DISCONNECT)";
      case WorkerEvent::Kind::kExpired:
        return "expired (heartbeat silence)";
      case WorkerEvent::Kind::kDisconnected:
        return "disconnected by the broker";
    }
    return "?";
  }

  // Reports lines each limiter held back since its last admitted line, so a
  // flood that stops is still mentioned (called by the sweep).
  void FlushLogLimiters() {
    struct Kind {
      LogLimiter* limiter;
      LogLevel level;
      std::string_view what;
    };
    const Kind kinds[] = {
        {&joins_log_, LogLevel::kInfo, "worker joins"},
        {&leaves_log_, LogLevel::kInfo, "worker leaves"},
        {&refused_log_, LogLevel::kWarning, "refused workers or requests"},
        {&malformed_log_, LogLevel::kWarning, "malformed messages"},
    };
    for (const Kind& k : kinds) {
      if (std::uint64_t n = k.limiter->Flush(now_)) {
        Log(k.level, absl::StrCat(n, " more ", AV(k.what),
                                  " were not logged (rate limit)"));
      }
    }
  }

  // Queued requests reuse frame vectors so that queueing does not allocate
  // once the broker has warmed up.
  Frames TakeSpareFrames() {
    if (spare_frames_.empty()) return Frames();
    Frames f = std::move(spare_frames_.back());
    spare_frames_.pop_back();
    return f;
  }
  void RecycleFrames(Frames f) {
    f.clear();
    if (f.capacity() > 0 && spare_frames_.size() < kMaxSpareFrames) {
      spare_frames_.push_back(std::move(f));
    }
  }

  // Where the client address and the body start in out_ when it holds a
  // REQUEST for a worker: [worker, "", MDPW01, 0x02, client, "", body...].
  static constexpr std::size_t kRequestClientFrame = 4;
  static constexpr std::size_t kRequestBodyFrame = 6;
  static constexpr std::size_t kMaxSpareFrames = 1024;
  // Client records and client queues kept for reuse, and the largest ring a
  // kept queue may keep (in slots).
  static constexpr std::size_t kMaxSpareRecords = 1024;
  static constexpr std::size_t kMaxSpareQueueCapacity = 1024;

  Reactor& reactor_;
  zmq::context_t& context_;
  Options options_;
  zmq::socket_t router_;
  // Declared after router_, so they go first.
  Reactor::SocketWatch router_watch_;
  // In-process peers (BindInternal()), made at the first internal endpoint.
  std::optional<zmq::socket_t> internal_router_;
  Reactor::SocketWatch internal_watch_;  // after internal_router_: goes first
  Reactor::Timer sweep_timer_;
  Reactor::Timer drain_timer_;  // while draining, until the grace ends
  Clock::duration worker_lifetime_;

  absl::flat_hash_map<std::string, std::unique_ptr<Service>> services_;
  absl::flat_hash_map<std::string, std::unique_ptr<Worker>> workers_;
  absl::flat_hash_map<std::string, std::unique_ptr<Client>> clients_;
  Client* idle_clients_ = nullptr;  // clients with nothing open
  std::vector<std::unique_ptr<Client>> spare_clients_;
  std::vector<std::unique_ptr<ClientQueue>> spare_queues_;
  std::size_t queued_total_ = 0;
  std::size_t busy_total_ = 0;  // requests outstanding at workers
  int removing_ = 0;            // RemoveWorker nesting depth

  Clock::time_point now_;
  Frames out_;      // reused for every forwarded message
  Frames control_;  // reused for DISCONNECT / HEARTBEAT
  std::vector<Frames> spare_frames_;
  std::vector<std::string> dead_;       // identities, reused by Sweep()
  std::vector<std::string> timed_out_;  // the same
  std::vector<std::string> unused_services_;

  Stats stats_;
  bool draining_ = false;
  bool drained_ = false;
  std::vector<absl::AnyInvocable<void()>> on_drained_;

  absl::AnyInvocable<Clock::time_point() const> clock_for_testing_;
  WorkerEventHook worker_hook_;
  LatencyHook latency_hook_;
  RequestGate request_gate_;
  LogHook log_;
  // One rate limit per kind of line (see LogHook in the header).
  LogLimiter joins_log_{{.period = std::chrono::seconds(1), .burst = 10}};
  LogLimiter leaves_log_{{.period = std::chrono::seconds(1), .burst = 10}};
  LogLimiter refused_log_{{.period = std::chrono::seconds(1), .burst = 5}};
  LogLimiter malformed_log_{{.period = std::chrono::seconds(1), .burst = 5}};
};

absl::StatusOr<std::unique_ptr<MajordomoBroker>> MajordomoBroker::Create(
    Reactor& reactor, zmq::context_t& context, Options options) {
  // Refused before anything exists (the timings out of range are clamped
  // by Impl instead, as documented).
  if (options.worker_prefetch < 1 ||
      options.worker_prefetch > kMaxWorkerPrefetch) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MajordomoBroker: worker_prefetch must be between 1 and %d, not %d",
        kMaxWorkerPrefetch, options.worker_prefetch));
  }
  if (options.linger < std::chrono::milliseconds(0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MajordomoBroker: linger must be >= 0 ms, not %d ms",
                        options.linger.count()));
  }
  auto impl = std::make_unique<Impl>(reactor, context, options);
  if (absl::Status s = impl->Register(); !s.ok()) return s;
  return absl::WrapUnique(new MajordomoBroker(std::move(impl)));
}

MajordomoBroker::MajordomoBroker(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

MajordomoBroker::~MajordomoBroker() {
  impl_.reset();  // closes the socket
  for (const std::string& endpoint : endpoints_) RemoveIpcSocketFile(endpoint);
}

absl::Status MajordomoBroker::Bind(const std::string& endpoint,
                                   const ListenerSecurity& security) {
  absl::StatusOr<std::string> bound = impl_->Bind(endpoint, security);
  if (!bound.ok()) return bound.status();
  endpoints_.push_back(*std::move(bound));
  return absl::OkStatus();
}

absl::Status MajordomoBroker::BindInternal(const std::string& endpoint) {
  return impl_->BindInternal(endpoint).status();
}

absl::Status MajordomoBroker::Monitor(const std::string& monitor_endpoint,
                                      int events) {
  return impl_->Monitor(monitor_endpoint, events);
}

void MajordomoBroker::set_worker_event_hook(WorkerEventHook hook) {
  impl_->set_worker_event_hook(std::move(hook));
}
void MajordomoBroker::set_latency_hook(LatencyHook hook) {
  impl_->set_latency_hook(std::move(hook));
}
void MajordomoBroker::set_request_gate(RequestGate gate) {
  impl_->set_request_gate(std::move(gate));
}
void MajordomoBroker::set_log_hook(LogHook hook) {
  impl_->set_log_hook(std::move(hook));
}
MajordomoBroker::Stats MajordomoBroker::stats() const { return impl_->stats(); }
void MajordomoBroker::Drain(Duration grace, absl::AnyInvocable<void()> done) {
  impl_->Drain(grace, std::move(done));
}
bool MajordomoBroker::draining() const { return impl_->draining(); }
bool MajordomoBroker::drained() const { return impl_->drained(); }
std::size_t MajordomoBroker::open_requests() const {
  return impl_->open_requests();
}
std::size_t MajordomoBroker::worker_count() const {
  return impl_->worker_count();
}
std::size_t MajordomoBroker::worker_count(std::string_view service) const {
  return impl_->worker_count(service);
}
void MajordomoBroker::HandleForTesting(std::span<zmq::message_t> frames) {
  impl_->HandleForTesting(frames);
}
void MajordomoBroker::SweepForTesting() { impl_->SweepForTesting(); }
void MajordomoBroker::SetClockForTesting(
    absl::AnyInvocable<Reactor::Clock::time_point() const> clock) {
  impl_->SetClockForTesting(std::move(clock));
}

}  // namespace zb
