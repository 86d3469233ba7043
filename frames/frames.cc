// Copyright 2026 The zbrokers Authors.

#include "zbrokers/frames/frames.h"

#include <cerrno>

#include "absl/strings/str_format.h"

namespace zb {
namespace {

absl::Status SendError(int err, std::size_t index) {
  if (err == EHOSTUNREACH) {
    return absl::UnavailableError("peer is not connected (EHOSTUNREACH)");
  }
  if (err == EAGAIN) {
    return absl::ResourceExhaustedError(
        "socket high-water mark reached (EAGAIN)");
  }
  return absl::InternalError(absl::StrFormat(
      "zmq_msg_send failed on frame %d: %s", index, zmq_strerror(err)));
}

}  // namespace

Frames MakeFrames(std::initializer_list<std::string_view> parts) {
  Frames frames;
  frames.reserve(parts.size());
  for (std::string_view p : parts) frames.push_back(Frame(p));
  return frames;
}

std::vector<std::string> FramesToStrings(
    std::span<const zmq::message_t> frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  for (const auto& f : frames) out.emplace_back(View(f));
  return out;
}

absl::Status SendFrames(zmq::socket_ref socket,
                        std::span<zmq::message_t> frames) {
  // The common case (every echo and forward) gets its own tight loop.
  const std::size_t n = frames.size();
  if (n == 0) return absl::InvalidArgumentError("SendFrames: no frames");
  void* s = socket.handle();
  for (std::size_t i = 0; i + 1 < n; ++i) {
    if (zmq_msg_send(frames[i].handle(), s, ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0) {
      return SendError(errno, i);
    }
  }
  if (zmq_msg_send(frames[n - 1].handle(), s, ZMQ_DONTWAIT) < 0) {
    return SendError(errno, n - 1);
  }
  return absl::OkStatus();
}

absl::Status SendFrames(zmq::socket_ref socket, std::span<zmq::message_t> head,
                        std::span<zmq::message_t> body) {
  const std::size_t total = head.size() + body.size();
  if (total == 0) return absl::InvalidArgumentError("SendFrames: no frames");
  void* s = socket.handle();
  std::size_t i = 0;
  auto send_part = [&](zmq::message_t& m) -> int {
    const int flags = ZMQ_DONTWAIT | (i + 1 < total ? ZMQ_SNDMORE : 0);
    return zmq_msg_send(m.handle(), s, flags);
  };
  for (auto& m : head) {
    if (send_part(m) < 0) return SendError(errno, i);
    ++i;
  }
  for (auto& m : body) {
    if (send_part(m) < 0) return SendError(errno, i);
    ++i;
  }
  return absl::OkStatus();
}

absl::Status SendRouted(zmq::socket_ref socket, zmq::message_t& identity,
                        std::span<zmq::message_t> body, bool move_body) {
  void* s = socket.handle();
  zmq_msg_t m;
  // A copy of `src`, sent; closed again when the send fails (a successful
  // send leaves it empty).
  auto send_copy = [&](zmq::message_t& src, int flags) -> int {
    zmq_msg_init(&m);
    zmq_msg_copy(&m, src.handle());
    const int rc = zmq_msg_send(&m, s, flags);
    if (rc < 0) {
      const int err = errno;
      zmq_msg_close(&m);
      errno = err;
    }
    return rc;
  };
  // The identity decides whether the ROUTER takes the message at all
  // (EHOSTUNREACH with ZMQ_ROUTER_MANDATORY, EAGAIN at the high-water mark);
  // after it, the frames of the message are always accepted.
  if (send_copy(identity, ZMQ_DONTWAIT | ZMQ_SNDMORE) < 0) {
    return SendError(errno, 0);
  }
  zmq_msg_init(&m);
  const int more = body.empty() ? 0 : ZMQ_SNDMORE;
  if (zmq_msg_send(&m, s, ZMQ_DONTWAIT | more) < 0) {
    const int err = errno;
    zmq_msg_close(&m);
    return SendError(err, 1);
  }
  const std::size_t n = body.size();
  for (std::size_t i = 0; i < n; ++i) {
    const int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
    const int rc = move_body ? zmq_msg_send(body[i].handle(), s, flags)
                             : send_copy(body[i], flags);
    if (rc < 0) return SendError(errno, i + 2);
  }
  return absl::OkStatus();
}

}  // namespace zb
