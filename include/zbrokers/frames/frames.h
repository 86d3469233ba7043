// Copyright 2026 The zbrokers Authors.
//
// Small helpers for multipart ZeroMQ messages ("frames"), shared by the
// reactor, the protocol codecs and the brokers.
//
// Ownership: zmq::message_t is move-only.  SendFrames() moves every frame into
// the socket (libzmq takes the buffer without copying); afterwards the frames
// are empty.  Nothing here allocates except building a frame from bytes.
//
// Thread-safety: the functions are stateless; a socket must only be used by
// one thread at a time, as always with ZeroMQ.

#ifndef ZBROKERS_FRAMES_FRAMES_H_
#define ZBROKERS_FRAMES_FRAMES_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"

namespace zb {

// An owned multipart message.
using Frames = std::vector<zmq::message_t>;

// A frame holding a copy of `bytes`.
inline zmq::message_t Frame(std::string_view bytes) {
  return zmq::message_t(bytes.data(), bytes.size());
}

// The bytes of a frame, valid while the frame lives and is not modified.
inline std::string_view View(const zmq::message_t& frame) {
  return std::string_view(static_cast<const char*>(frame.data()), frame.size());
}

// Builds owned frames from byte strings (copies them).
Frames MakeFrames(std::initializer_list<std::string_view> parts);

// Copies the bytes of every frame (for tests, logs and bindings).
std::vector<std::string> FramesToStrings(
    std::span<const zmq::message_t> frames);

// Sends `frames` as one multipart message without blocking, moving each frame
// into the socket.  Returns:
//   - OK when the whole message was queued;
//   - Unavailable when a ROUTER with ZMQ_ROUTER_MANDATORY has no such peer
//     (EHOSTUNREACH) -- nothing was sent;
//   - ResourceExhausted when the socket's high-water mark is reached (EAGAIN)
//     -- nothing was sent;
//   - Internal for any other ZeroMQ error (the message names it).
// An empty span is InvalidArgument.
absl::Status SendFrames(zmq::socket_ref socket,
                        std::span<zmq::message_t> frames);

// The same, for a message made of a prefix (e.g. identity and envelope) and a
// body, sent back to back as one multipart message.
absl::Status SendFrames(zmq::socket_ref socket, std::span<zmq::message_t> head,
                        std::span<zmq::message_t> body);

// Receives one whole multipart message into `buffer`, reusing its elements
// (the vector only grows, so a loop that receives into the same buffer
// allocates nothing in steady state).  Returns the number of frames, or -1
// with errno set: EAGAIN when there is nothing to receive (ZMQ_DONTWAIT, or
// ZMQ_RCVTIMEO passed), anything else for a failed socket (e.g. ETERM).
// `flags` apply to the first frame only: the rest of a multipart message is
// already there, since ZeroMQ delivers messages whole.  Elements past the
// returned count keep whatever they held.  Inline: the reactor calls it for
// every message it delivers.
inline int ReceiveMessage(zmq::socket_ref socket, Frames& buffer, int flags) {
  void* s = socket.handle();
  std::size_t n = 0;
  for (;;) {
    if (n == buffer.size()) buffer.emplace_back();
    zmq_msg_t* msg = buffer[n].handle();
    if (zmq_msg_recv(msg, s, n == 0 ? flags : ZMQ_DONTWAIT) < 0) return -1;
    ++n;
    if (!zmq_msg_more(msg)) return static_cast<int>(n);
  }
}

// Sends [identity][""][body...] through a ROUTER as one multipart message
// without blocking and without building a Frames vector: each frame goes
// straight from a zmq_msg_t on the stack into the socket.  The identity is
// sent as a zmq_msg_copy() (the caller keeps it); so are the body frames,
// unless `move_body`, which moves them into the socket (they are empty
// afterwards).  zmq_msg_copy() copies a small frame (up to 33 bytes) in
// place and shares a larger one's buffer, so sending one body to many peers
// -- a fan-out -- copies no payload bytes.  Returns what SendFrames returns.
// A ROUTER refuses a message only at its identity frame (unknown peer, or
// high-water mark), and then nothing was sent and the body is as it was.
absl::Status SendRouted(zmq::socket_ref socket, zmq::message_t& identity,
                        std::span<zmq::message_t> body, bool move_body);

}  // namespace zb

#endif  // ZBROKERS_FRAMES_FRAMES_H_
