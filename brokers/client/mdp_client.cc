// Copyright 2026 The zbrokers Authors.

#include "brokers/client/mdp_client.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>
#include <zmq_addon.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "brokers/common/endpoint.h"
#include "brokers/protocol/mdp.h"

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

}  // namespace

// --- MdpClient
// ----------------------------------------------------------------

MdpClient::MdpClient(std::string endpoint, Options options,
                     zmq::context_t* context)
    : endpoint_(std::move(endpoint)), options_(options) {
  if (context == nullptr) {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context = own_context_.get();
  }
  context_ = context;
}

MdpClient::~MdpClient() { socket_.reset(); }

absl::Status MdpClient::Open() {
  socket_.emplace(*context_, zmq::socket_type::dealer);
  socket_->set(zmq::sockopt::linger, 0);
  try {
    SetIpv6For(*socket_, endpoint_);
    socket_->connect(endpoint_);
  } catch (const zmq::error_t& e) {
    socket_.reset();
    return absl::InvalidArgumentError(
        absl::StrFormat("MdpClient: connect %s: %s", endpoint_, e.what()));
  }
  return absl::OkStatus();
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
    // the answer to the next request.
    socket_.reset();
  }
  return absl::DeadlineExceededError(absl::StrFormat(
      "MdpClient: no reply from service \"%s\" after %d attempt(s) of %d ms",
      service, attempts, options_.timeout.count()));
}

// --- MdpAsyncClient
// -------------------------------------------------------------

MdpAsyncClient::MdpAsyncClient(Reactor& reactor, zmq::context_t& context,
                               std::string endpoint, Options options)
    : reactor_(reactor),
      context_(context),
      endpoint_(std::move(endpoint)),
      options_(options) {}

MdpAsyncClient::~MdpAsyncClient() {
  if (socket_) {
    reactor_.remove(socket_).IgnoreError();
    socket_.close();
  }
  // Complete everything still open, oldest first.
  std::vector<std::uint64_t> ids;
  ids.reserve(pending_.size());
  for (const auto& [id, p] : pending_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (std::uint64_t id : ids) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    reactor_.cancel(p.timer);
    if (p.done) {
      p.done(absl::CancelledError("MdpAsyncClient destroyed"));
    }
  }
}

absl::Status MdpAsyncClient::Start() {
  if (started_) return absl::FailedPreconditionError("already started");
  absl::Status s = Open();
  if (s.ok()) started_ = true;
  return s;
}

absl::Status MdpAsyncClient::Open() {
  socket_ = zmq::socket_t(context_, zmq::socket_type::dealer);
  socket_.set(zmq::sockopt::linger, 0);
  // Outstanding requests are bounded by the caller, not by the socket.
  socket_.set(zmq::sockopt::sndhwm, 0);
  socket_.set(zmq::sockopt::rcvhwm, 0);
  try {
    SetIpv6For(socket_, endpoint_);
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& e) {
    socket_.close();
    return absl::InvalidArgumentError(
        absl::StrFormat("MdpAsyncClient: connect %s: %s", endpoint_, e.what()));
  }
  return reactor_.add(socket_,
                      [this](std::span<zmq::message_t> f) { OnMessage(f); });
}

absl::Status MdpAsyncClient::Request(
    std::string_view service, Frames body, Callback done,
    std::optional<std::chrono::milliseconds> timeout) {
  if (!started_) {
    return absl::FailedPreconditionError("MdpAsyncClient: not started");
  }
  if (service.empty()) {
    return absl::InvalidArgumentError("MdpAsyncClient: empty service name");
  }
  if (body.empty()) body.emplace_back();
  const std::uint64_t id = next_id_++;
  Pending& p = pending_[id];
  p.service = std::string(service);
  p.body = std::move(body);
  p.done = std::move(done);
  p.timeout = timeout.value_or(options_.timeout);
  p.retries_left = std::max(0, options_.retries);
  p.timer = reactor_.after(p.timeout, [this, id] { OnTimeout(id); });
  auto f = fifo_.find(AV(service));
  if (f == fifo_.end())
    f = fifo_.emplace(p.service, std::deque<std::uint64_t>()).first;
  f->second.push_back(id);
  SendPending(p);
  return absl::OkStatus();
}

bool MdpAsyncClient::SendPending(const Pending& p) {
  out_.clear();
  AppendRequestCopy(p.service, p.body, &out_);
  // With no high-water mark a DEALER only fails on a closed context; the
  // request then ends by its timeout like any lost request.
  return SendFrames(socket_, out_).ok();
}

void MdpAsyncClient::OnMessage(std::span<zmq::message_t> frames) {
  absl::StatusOr<mdp::ClientMessage> m = mdp::ParseClient(frames);
  if (!m.ok()) {
    ++stale_;
    return;
  }
  auto f = fifo_.find(AV(m->service));
  if (f == fifo_.end() || f->second.empty()) {
    ++stale_;  // nothing outstanding for this service
    return;
  }
  const std::uint64_t id = f->second.front();
  Frames body;
  body.reserve(m->body.size());
  for (auto& frame : m->body) body.push_back(std::move(frame));
  Finish(id, std::move(body));
}

void MdpAsyncClient::OnTimeout(std::uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  if (p.retries_left > 0) {
    --p.retries_left;
    p.timer = reactor_.after(p.timeout, [this, id] { OnTimeout(id); });
    Reset();  // resends p with the others
    return;
  }
  p.timer = 0;
  Finish(id, absl::DeadlineExceededError(absl::StrFormat(
                 "MdpAsyncClient: no reply from service \"%s\" within %d ms",
                 p.service, p.timeout.count())));
  Reset();
}

void MdpAsyncClient::Reset() {
  ++reconnects_;
  reactor_.remove(socket_).IgnoreError();
  socket_.close();
  if (!Open().ok()) return;  // the requests then time out
  // Resend in the original order within each service.
  for (auto& [service, ids] : fifo_) {
    for (std::uint64_t id : ids) {
      auto it = pending_.find(id);
      if (it != pending_.end()) SendPending(it->second);
    }
  }
}

void MdpAsyncClient::Finish(std::uint64_t id, absl::StatusOr<Frames> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  auto f = fifo_.find(AV(p.service));
  if (f != fifo_.end()) {
    auto& ids = f->second;
    if (!ids.empty() && ids.front() == id) {
      ids.pop_front();
    } else {
      auto pos = std::find(ids.begin(), ids.end(), id);
      if (pos != ids.end()) ids.erase(pos);
    }
  }
  if (p.timer != 0) reactor_.cancel(p.timer);
  if (p.done) p.done(std::move(result));
}

}  // namespace zb
