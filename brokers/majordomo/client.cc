// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/client.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>
#include <zmq_addon.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "brokers/common/dealer.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/majordomo/codec.h"

namespace zb {
namespace {

using Clock = std::chrono::steady_clock;

absl::string_view AV(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Appends a request whose body is a copy of `body` (zmq_msg_copy shares
// large buffers, so this copies no payload bytes beyond small frames).
void AppendRequestCopy(std::string_view service, const Frames& body,
                       Frames* out) {
  mdp::AppendClientRequest(service, {}, out);
  for (const auto& f : body) {
    out->emplace_back().copy(const_cast<zmq::message_t&>(f));
  }
}

// With kFailover only the first endpoint of a list is connected at
// Create(); the others are opened (and closed again) once, so that one that
// libzmq refuses fails Create() rather than a later failover.
absl::Status CheckOpens(zmq::context_t& context,
                        const std::vector<std::string>& endpoints,
                        const DealerOptions& options, std::string_view who) {
  for (std::size_t i = 1; i < endpoints.size(); ++i) {
    absl::StatusOr<zmq::socket_t> s =
        OpenDealer(context, endpoints[i], options, who);
    if (!s.ok()) return s.status();
  }
  return absl::OkStatus();
}

bool Spreads(const std::vector<std::string>& endpoints, EndpointPolicy p) {
  return endpoints.size() > 1 && p == EndpointPolicy::kSpread;
}

}  // namespace

// --- MdpClient
// ----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MdpClient>> MdpClient::Create(
    std::string endpoint, Options options, zmq::context_t* context) {
  absl::StatusOr<std::vector<std::string>> endpoints =
      SplitEndpointList(endpoint);
  if (!endpoints.ok()) return endpoints.status();
  std::unique_ptr<MdpClient> client(
      new MdpClient(*std::move(endpoints), options, context));
  if (Spreads(client->endpoints_, options.endpoint_policy)) {
    Options one = options;
    one.endpoint_policy = EndpointPolicy::kFailover;
    for (const std::string& ep : client->endpoints_) {
      absl::StatusOr<std::unique_ptr<MdpClient>> member =
          Create(ep, one, client->context_);
      if (!member.ok()) return member.status();
      client->spread_.push_back(*std::move(member));
    }
    client->spread_dead_.assign(client->spread_.size(), false);
    return client;
  }
  if (absl::Status s = CheckOpens(*client->context_, client->endpoints_,
                                  {.max_message_size = options.max_message_size,
                                   .curve = options.curve},
                                  "MdpClient");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = client->Open(); !s.ok()) return s;
  return client;
}

MdpClient::MdpClient(std::vector<std::string> endpoints, Options options,
                     zmq::context_t* context)
    : endpoints_(std::move(endpoints)), options_(options) {
  if (context == nullptr) {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context = own_context_.get();
  }
  context_ = context;
}

MdpClient::~MdpClient() {
  spread_.clear();  // they may use own_context_
  socket_.reset();
}

std::uint64_t MdpClient::resends() const {
  std::uint64_t n = resends_;
  for (const auto& m : spread_) n += m->resends();
  return n;
}

std::uint64_t MdpClient::dropped_replies() const {
  std::uint64_t n = dropped_;
  for (const auto& m : spread_) n += m->dropped_replies();
  return n;
}

absl::Status MdpClient::Open() {
  absl::StatusOr<zmq::socket_t> s = OpenDealer(
      *context_, endpoints_[current_],
      {.max_message_size = options_.max_message_size, .curve = options_.curve},
      "MdpClient");
  if (!s.ok()) return s.status();
  socket_.emplace(*std::move(s));
  return absl::OkStatus();
}

void MdpClient::StartProbe() {
  socket_.reset();
  if (!Open().ok()) return;  // opened before: does not fail
  Send(mdp::kMmiTagService, MakeFrames({"alive?"})).IgnoreError();
}

bool MdpClient::ProbeAnswered() {
  if (!socket_) return false;
  Frames got;
  bool any = false;
  while (zmq::recv_multipart(*socket_, std::back_inserter(got),
                             zmq::recv_flags::dontwait)) {
    any = true;  // whatever it says: the broker is there
    got.clear();
  }
  return any;
}

absl::Status MdpClient::Send(std::string_view service, const Frames& body) {
  Frames out;
  out.reserve(3 + body.size());
  AppendRequestCopy(service, body, &out);
  // A DEALER queues the message while it is not connected yet; only a full
  // queue (the high-water mark) fails, and that ends like a timeout.
  return SendFrames(*socket_, out);
}

absl::StatusOr<Frames> MdpClient::Request(std::string_view service,
                                          Frames body) {
  if (service.empty()) {
    return absl::InvalidArgumentError("MdpClient: empty service name");
  }
  if (!spread_.empty()) {
    // The next broker of the round that does not look dead (when all do,
    // simply the next); the request and its retries stay with it.
    const std::size_t n = spread_.size();
    for (std::size_t k = 0; k < n; ++k) {
      if (spread_dead_[k] && spread_[k]->ProbeAnswered()) {
        spread_dead_[k] = false;  // back: it answered its probe
      }
    }
    std::size_t pick = spread_next_ % n;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = (spread_next_ + i) % n;
      if (!spread_dead_[k]) {
        pick = k;
        break;
      }
    }
    spread_next_ = (pick + 1) % n;
    MdpClient& member = *spread_[pick];
    // A dead broker's probe socket goes: its late answer must not meet this
    // request.  The request itself tells whether the broker is back.
    if (spread_dead_[pick]) member.socket_.reset();
    const std::uint64_t dropped_before = member.dropped_;
    absl::StatusOr<Frames> reply = member.Request(service, std::move(body));
    if (reply.ok() || member.dropped_ != dropped_before) {
      spread_dead_[pick] = false;  // it answered, or at least said something
    } else if (absl::IsDeadlineExceeded(reply.status())) {
      if (!spread_dead_[pick]) ++failovers_;
      spread_dead_[pick] = true;
      member.StartProbe();
    }
    return reply;
  }
  if (body.empty()) body.emplace_back();
  const int attempts = 1 + std::max(0, options_.retries);
  Frames reply;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) ++resends_;
    if (!socket_) {
      if (absl::Status s = Open(); !s.ok()) return s;
    }
    Send(service, body).IgnoreError();
    const Clock::time_point deadline = Clock::now() + options_.timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - Clock::now());
      if (left.count() <= 0) break;
      zmq_pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
      int rc;
      try {
        rc = zmq::poll(&item, 1, left);
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        return absl::InternalError(
            absl::StrFormat("MdpClient: poll: %s", e.what()));
      }
      if (rc == 0) continue;  // re-check the deadline
      reply.clear();
      if (!zmq::recv_multipart(*socket_, std::back_inserter(reply),
                               zmq::recv_flags::dontwait)) {
        continue;
      }
      absl::StatusOr<mdp::ClientMessage> m = mdp::ParseClient(reply);
      if (!m.ok() || m->service != service) {
        ++dropped_;  // not the answer to this request
        continue;
      }
      Frames result;
      result.reserve(m->body.size());
      for (auto& f : m->body) result.push_back(std::move(f));
      return result;
    }
    // No reply in time: a new socket, so a late reply cannot be mistaken for
    // the answer to the next request; with a list, to the next broker.
    socket_.reset();
    if (endpoints_.size() > 1) {
      current_ = (current_ + 1) % endpoints_.size();
      ++failovers_;
    }
  }
  return absl::DeadlineExceededError(absl::StrFormat(
      "MdpClient: no reply from service \"%s\" after %d attempt(s) of %d ms",
      service, attempts, options_.timeout.count()));
}

// --- MdpAsyncClient
// -------------------------------------------------------------

namespace {

// A request tag: the request's id, 8 bytes big-endian (inside zmq_msg_t, no
// allocation).
zmq::message_t TagFrame(std::uint64_t id) {
  char bytes[8];
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<char>(id & 0xff);
    id >>= 8;
  }
  return zmq::message_t(bytes, sizeof bytes);
}

// The id in a tag this client made, or 0 (no request has id 0).
std::uint64_t TagId(const zmq::message_t& tag) {
  if (tag.size() != 8) return 0;
  const auto* b = static_cast<const unsigned char*>(tag.data());
  std::uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = (id << 8) | b[i];
  return id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MdpAsyncClient>> MdpAsyncClient::Create(
    Reactor& reactor, zmq::context_t& context, std::string endpoint,
    Options options) {
  absl::StatusOr<std::vector<std::string>> endpoints =
      SplitEndpointList(endpoint);
  if (!endpoints.ok()) return endpoints.status();
  std::unique_ptr<MdpAsyncClient> client(
      new MdpAsyncClient(reactor, context, *std::move(endpoints), options));
  if (Spreads(client->endpoints_, options.endpoint_policy)) {
    Options one = options;
    one.endpoint_policy = EndpointPolicy::kFailover;
    for (const std::string& ep : client->endpoints_) {
      absl::StatusOr<std::unique_ptr<MdpAsyncClient>> member =
          Create(reactor, context, ep, one);
      if (!member.ok()) return member.status();
      client->spread_.push_back(*std::move(member));
    }
    return client;
  }
  if (absl::Status s = CheckOpens(context, client->endpoints_,
                                  {.max_message_size = options.max_message_size,
                                   .curve = options.curve},
                                  "MdpAsyncClient");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = client->Open(); !s.ok()) return s;
  return client;
}

MdpAsyncClient::MdpAsyncClient(Reactor& reactor, zmq::context_t& context,
                               std::vector<std::string> endpoints,
                               Options options)
    : reactor_(reactor),
      context_(context),
      endpoints_(std::move(endpoints)),
      options_(options) {}

MdpAsyncClient::~MdpAsyncClient() {
  // kSpread: each broker's client cancels its own requests.
  spread_.clear();
  if (socket_) {
    socket_watch_.Reset();
    socket_.close();
  }
  // Complete everything still open, oldest first.
  std::vector<std::uint64_t> ids;
  ids.reserve(pending_.size());
  for (const auto& [id, p] : pending_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  lines_.clear();
  for (std::uint64_t id : ids) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    p.timer.Reset();
    if (p.done) {
      p.done(absl::CancelledError("MdpAsyncClient destroyed"));
    }
  }
}

std::size_t MdpAsyncClient::outstanding() const {
  std::size_t n = pending_.size();
  for (const auto& m : spread_) n += m->outstanding();
  return n;
}

bool MdpAsyncClient::tagged() const {
  if (spread_.empty()) return tagged_;
  return std::all_of(spread_.begin(), spread_.end(),
                     [](const auto& m) { return m->tagged(); });
}

std::uint64_t MdpAsyncClient::reconnects() const {
  std::uint64_t n = reconnects_;
  for (const auto& m : spread_) n += m->reconnects();
  return n;
}

std::uint64_t MdpAsyncClient::failovers() const {
  std::uint64_t n = failovers_;
  for (const auto& m : spread_) n += m->went_dead_;
  return n;
}

std::uint64_t MdpAsyncClient::stale_replies() const {
  std::uint64_t n = stale_;
  for (const auto& m : spread_) n += m->stale_replies();
  return n;
}

absl::Status MdpAsyncClient::Open() {
  // Outstanding requests are bounded by the caller, not by the socket.
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      reactor_, context_, endpoints_[current_],
      {.max_message_size = options_.max_message_size,
       .curve = options_.curve,
       .unlimited_hwm = true},
      "MdpAsyncClient", [this](std::span<zmq::message_t> f) { OnMessage(f); });
  if (!dealer.ok()) return dealer.status();
  socket_ = std::move(dealer->socket);
  socket_watch_ = std::move(dealer->watch);
  tagged_ = false;
  replies_ = 0;
  if (options_.request_tags) {
    // Ask whether the broker speaks request tags.  The query is the plain
    // request on the wire for its service until answered (a broker without
    // MMI never answers; the client then simply stays plain).
    ServiceLine& line = lines_[std::string(mdp::kMmiTagService)];
    line.on_wire = kProbe;
    zmq::message_t what = Frame("tags?");
    out_.clear();
    mdp::AppendClientRequest(mdp::kMmiTagService,
                             std::span<zmq::message_t>(&what, 1), &out_);
    SendFrames(socket_, out_).IgnoreError();  // no HWM: queued until connected
  }
  return absl::OkStatus();
}

absl::Status MdpAsyncClient::Request(
    std::string_view service, Frames body, Callback done,
    std::optional<std::chrono::milliseconds> timeout) {
  if (service.empty()) {
    return absl::InvalidArgumentError("MdpAsyncClient: empty service name");
  }
  if (!spread_.empty()) {
    // The next broker of the round that does not look dead (when all do,
    // simply the next); the request, its retries and any reopen for it stay
    // with that broker's connection.
    const std::size_t n = spread_.size();
    std::size_t pick = spread_next_ % n;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = (spread_next_ + i) % n;
      if (!spread_[k]->looks_dead_) {
        pick = k;
        break;
      }
    }
    spread_next_ = (pick + 1) % n;
    return spread_[pick]->Request(service, std::move(body), std::move(done),
                                  timeout);
  }
  if (body.empty()) body.emplace_back();
  const std::uint64_t id = next_id_++;
  Pending& p = pending_[id];
  p.service = std::string(service);
  p.body = std::move(body);
  p.done = std::move(done);
  p.timeout = timeout.value_or(options_.timeout);
  p.retries_left = std::max(0, options_.retries);
  p.timer = *reactor_.After(p.timeout, [this, id] { OnTimeout(id); });
  p.reconnects_at_arm = reconnects_;
  Dispatch(id, p);
  return absl::OkStatus();
}

void MdpAsyncClient::Dispatch(std::uint64_t id, Pending& p) {
  if (tagged_) {
    SendTagged(id, p);
    return;
  }
  ServiceLine& line = lines_[p.service];
  if (line.on_wire == kNone) {
    SendPlain(id, p, line);
  } else {
    p.state = State::kWaiting;
    line.waiting.push_back(id);
  }
}

// With no high-water mark a DEALER only fails to send on a closed context;
// the request then ends by its timeout like any lost request.
void MdpAsyncClient::SendPlain(std::uint64_t id, Pending& p,
                               ServiceLine& line) {
  p.state = State::kPlain;
  p.replies_at_send = replies_;
  line.on_wire = id;
  out_.clear();
  AppendRequestCopy(p.service, p.body, &out_);
  SendFrames(socket_, out_).IgnoreError();
}

void MdpAsyncClient::SendTagged(std::uint64_t id, Pending& p) {
  p.state = State::kTagged;
  p.replies_at_send = replies_;
  out_.clear();
  mdp::AppendTaggedClientRequest(p.service, TagFrame(id), {}, &out_);
  for (const auto& f : p.body) {
    out_.emplace_back().copy(const_cast<zmq::message_t&>(f));
  }
  SendFrames(socket_, out_).IgnoreError();
}

void MdpAsyncClient::Pump(std::string_view service, ServiceLine& line) {
  while ((tagged_ || line.on_wire == kNone) && !line.waiting.empty()) {
    const std::uint64_t id = line.waiting.front();
    line.waiting.pop_front();
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    if (tagged_) {
      SendTagged(id, it->second);
    } else {
      SendPlain(id, it->second, line);
    }
  }
  if (line.on_wire == kNone && line.waiting.empty()) {
    lines_.erase(AV(service));  // invalidates `line`
  }
}

void MdpAsyncClient::OnMessage(std::span<zmq::message_t> frames) {
  ++replies_;
  looks_dead_ = false;  // something came back: the broker is there
  absl::StatusOr<mdp::Protocol> protocol = mdp::ClassifyMessage(frames);
  if (!protocol.ok() || *protocol == mdp::Protocol::kWorker) {
    ++stale_;
    return;
  }
  if (*protocol == mdp::Protocol::kTaggedClient) {
    absl::StatusOr<mdp::ClientMessage> m = mdp::ParseTaggedClient(frames);
    if (!m.ok()) {
      ++stale_;
      return;
    }
    OnTagged(*m);
  } else {
    absl::StatusOr<mdp::ClientMessage> m = mdp::ParseClient(frames);
    if (!m.ok()) {
      ++stale_;
      return;
    }
    OnPlain(*m);
  }
}

void MdpAsyncClient::OnTagged(const mdp::ClientMessage& m) {
  const std::uint64_t id = TagId(*m.tag);
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.state != State::kTagged ||
      it->second.service != m.service) {
    ++stale_;  // a late reply to a request already completed or resent
    return;
  }
  Frames body;
  body.reserve(m.body.size());
  for (auto& frame : m.body) body.push_back(std::move(frame));
  Finish(id, std::move(body));
}

void MdpAsyncClient::OnPlain(const mdp::ClientMessage& m) {
  auto line = lines_.find(AV(m.service));
  if (line == lines_.end() || line->second.on_wire == kNone) {
    ++stale_;  // nothing of this service on the wire
    return;
  }
  if (line->second.on_wire == kOrphan) {
    // The late reply of a request that timed out on this socket.
    ++stale_;
    line->second.on_wire = kNone;
    Pump(m.service, line->second);
    return;
  }
  if (line->second.on_wire == kProbe) {
    // The answer to mmi.zb.tag on this connection.
    line->second.on_wire = kNone;
    tagged_ = m.body.size() == 1 && View(m.body[0]) == mdp::kMmiFound;
    if (tagged_) {
      // Everything waiting goes out now, tagged.  (Requests already out
      // plain are answered plain.)
      std::vector<std::string> services;
      services.reserve(lines_.size());
      for (auto& [name, l] : lines_) services.push_back(name);
      for (const std::string& name : services) {
        auto l = lines_.find(name);
        if (l != lines_.end()) Pump(name, l->second);
      }
    } else {
      Pump(mdp::kMmiTagService, line->second);
    }
    return;
  }
  const std::uint64_t id = line->second.on_wire;
  Frames body;
  body.reserve(m.body.size());
  for (auto& frame : m.body) body.push_back(std::move(frame));
  Finish(id, std::move(body));
}

void MdpAsyncClient::OnTimeout(std::uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  p.timer.Release();  // fired: nothing left to cancel
  // Sent, and nothing at all heard on the connection since: the broker
  // looks dead (kSpread then sends new requests to the others).
  if ((p.state == State::kPlain || p.state == State::kTagged) &&
      replies_ == p.replies_at_send && !looks_dead_) {
    looks_dead_ = true;
    ++went_dead_;
  }
  // A plain request on the wire must not leave a late reply behind on this
  // socket (it would complete the next request of its service), and a
  // tagged one that heard nothing since it was sent suggests the broker is
  // gone: both start a new connection.
  //
  // One reopen per timeout period is enough, though: a request that a
  // reopen has sent again since its timer was armed is neither reopened for
  // nor resent, it just gets its next timeout.  Otherwise, with W requests
  // outstanding and no reply coming (a stalled broker or service), each of
  // the W timeouts would reopen and resend all W: ~W^2 requests per period,
  // whose replies go to sockets already closed.
  //
  // A request waiting behind an orphan (below) cannot go out on this socket
  // until the orphan's late reply comes; when its own timeout comes first,
  // it too starts a new connection.
  const bool resent_by_reopen = p.reconnects_at_arm != reconnects_;
  const bool behind_orphan = p.state == State::kWaiting && [&] {
    auto line = lines_.find(AV(p.service));
    return line != lines_.end() && line->second.on_wire == kOrphan;
  }();
  const bool reset =
      !resent_by_reopen &&
      (p.state == State::kPlain || behind_orphan ||
       (p.state == State::kTagged && replies_ == p.replies_at_send));
  if (p.retries_left > 0) {
    --p.retries_left;
    p.timer = *reactor_.After(p.timeout, [this, id] { OnTimeout(id); });
    if (resent_by_reopen) {
      // Already sent again on the current connection: wait for it.
    } else if (reset) {
      Reset();  // resends p with the others
    } else if (p.state == State::kTagged) {
      SendTagged(id, p);
    }
    // A request still waiting in the client just gets its fresh timeout.
    // Its timer is armed as of the connection it is on now.
    auto again = pending_.find(id);
    if (again != pending_.end()) again->second.reconnects_at_arm = reconnects_;
    return;
  }
  const std::string service = p.service;
  const auto timeout = p.timeout;
  if (!reset) {
    if (p.state == State::kPlain) {
      // A reopen already sent it again on this socket, so its copy is on
      // the wire and reopening once more for it would repeat that reopen
      // (once per request, each resending the rest).  It ends here, and its
      // line waits for the copy's reply as an orphan: dropped when it
      // comes, instead of completing the next request of the service.
      Pending done = Remove(id, /*pump=*/false);
      lines_[service].on_wire = kOrphan;
      if (done.done) {
        done.done(absl::DeadlineExceededError(absl::StrFormat(
            "MdpAsyncClient: no reply from service \"%s\" within %d ms",
            service, timeout.count())));
      }
      return;
    }
    Finish(id, absl::DeadlineExceededError(absl::StrFormat(
                   "MdpAsyncClient: no reply from service \"%s\" within %d ms",
                   service, timeout.count())));
    return;
  }
  // Out of the books first, so that nothing is sent on the old socket and
  // the new one does not resend it; the callback runs last, when the client
  // is on its new connection.
  Pending done = Remove(id, /*pump=*/false);
  Reset();
  if (done.done) {
    done.done(absl::DeadlineExceededError(absl::StrFormat(
        "MdpAsyncClient: no reply from service \"%s\" within %d ms", service,
        timeout.count())));
  }
}

void MdpAsyncClient::Reset() {
  ++reconnects_;
  socket_watch_.Reset();
  socket_.close();
  lines_.clear();
  if (endpoints_.size() > 1) {  // the next broker of the list
    current_ = (current_ + 1) % endpoints_.size();
    ++failovers_;
  }
  absl::Status opened = Open();
  // Everything outstanding goes out again in the original order (through
  // the plain-RFC 7 path until the new connection says it speaks tags).
  std::vector<std::uint64_t> ids;
  ids.reserve(pending_.size());
  for (auto& [id, p] : pending_) {
    p.state = State::kWaiting;
    ids.push_back(id);
  }
  if (!opened.ok()) return;  // the requests then time out
  std::sort(ids.begin(), ids.end());
  for (std::uint64_t id : ids) {
    auto it = pending_.find(id);
    if (it != pending_.end()) Dispatch(id, it->second);
  }
}

MdpAsyncClient::Pending MdpAsyncClient::Remove(std::uint64_t id, bool pump) {
  auto it = pending_.find(id);
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.state != State::kTagged) {
    auto line = lines_.find(AV(p.service));
    if (line != lines_.end()) {
      if (line->second.on_wire == id) {
        line->second.on_wire = kNone;
      } else {
        auto& w = line->second.waiting;
        auto pos = std::find(w.begin(), w.end(), id);
        if (pos != w.end()) w.erase(pos);
      }
      if (pump) Pump(p.service, line->second);
    }
  }
  p.timer.Reset();
  return p;
}

void MdpAsyncClient::Finish(std::uint64_t id, absl::StatusOr<Frames> result) {
  if (!pending_.contains(id)) return;
  Pending p = Remove(id, /*pump=*/true);
  if (p.done) p.done(std::move(result));
}

}  // namespace zb
