// Copyright 2026 The zbrokers Authors.
//
// Codec for the Majordomo Protocol MDP/0.1 (ZeroMQ RFC 7).  See
// docs/protocols/mdp.md for the frame tables and the choices made here.
//
// Parsing takes the frames of one message *without* the ROUTER identity frame
// (the broker strips it) and *with* the leading empty frame that every MDP
// message carries on the wire (a REQ client's socket adds and removes it; a
// REQ client that parses a reply itself passes kNoDelimiter).  A parsed
// message holds views into the frames it was parsed from: it is valid while
// those frames live and are not moved.  The body is a subspan of the input,
// so a broker can move the body frames on without copying them.
//
// Encoding appends frames to a caller-owned Frames vector, moving body frames
// in (zmq::message_t moves never copy the payload).  Small frames (tags,
// command bytes, identities up to 33 bytes) fit inside zmq_msg_t and need no
// heap allocation, so a broker that reuses its output vector encodes without
// allocating.
//
//   zb::Frames out;
//   zb::mdp::AppendClientRequest("echo", body, &out);  // "", MDPC01, ...
//   auto msg = zb::mdp::ParseClient(out);
//   if (!msg.ok()) { /* msg.status() says exactly what is wrong */ }
//
// Request tags (a zbrokers extension, docs/protocols/mdp.md).  RFC 7 replies
// carry no request id, so a client with several requests outstanding for one
// service cannot tell which reply answers which.  A client that asked the
// broker "mmi.zb.tag" and got "200" may send
//   "", "zb.tag.MDPC01", service, tag, body...
// instead of a plain request; the broker strips the tag before any worker
// sees the request (the worker gets exactly the RFC 7 REQUEST a plain client
// would have caused) and puts it back on the reply:
//   "", "zb.tag.MDPC01", service, tag, body...
// ParseTaggedClient / AppendTaggedClient* are that layout; the plain RFC 7
// functions never accept or produce it.
//
// Thread-safety: all functions are pure; they touch only their arguments.

#ifndef ZBROKERS_MAJORDOMO_CODEC_H_
#define ZBROKERS_MAJORDOMO_CODEC_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/frames/frames.h"

namespace zb::mdp {

inline constexpr std::string_view kClientTag = "MDPC01";  // MDP/Client v0.1
inline constexpr std::string_view kWorkerTag = "MDPW01";  // MDP/Worker v0.1
// A client request or reply with a request tag (the zbrokers extension
// above).  Deliberately not prefixed "MDPC01", so that no broker that
// compares a prefix can take it for a plain request.
inline constexpr std::string_view kTaggedClientTag = "zb.tag.MDPC01";
// Tags are opaque to the broker; 1 to kMaxTagSize bytes (small enough to
// live inside a zmq_msg_t, so carrying one allocates nothing).
inline constexpr std::size_t kMaxTagSize = 32;

// The MMI namespace (RFC 8): services the broker answers itself.
inline constexpr std::string_view kMmiPrefix = "mmi.";
inline constexpr std::string_view kMmiService = "mmi.service";
inline constexpr std::string_view kMmiFound = "200";
inline constexpr std::string_view kMmiNotFound = "404";
inline constexpr std::string_view kMmiNotImplemented = "501";
// Asks whether the broker speaks request tags: zb-broker answers "200";
// an RFC 8 broker that does not answers "501", one without MMI nothing.
inline constexpr std::string_view kMmiTagService = "mmi.zb.tag";

inline bool IsMmiService(std::string_view service) {
  return service.substr(0, kMmiPrefix.size()) == kMmiPrefix;
}

// MDP/Worker commands (frame 2, one byte).
enum class Command : std::uint8_t {
  kReady = 0x01,
  kRequest = 0x02,
  kReply = 0x03,
  kHeartbeat = 0x04,
  kDisconnect = 0x05,
};

// "READY", "REQUEST", ... for logs; "UNKNOWN" for anything else.
std::string_view CommandName(Command command);

// Which sub-protocol a message belongs to, from its tag frame.
// kTaggedClient is the zbrokers request-tag extension.
enum class Protocol { kClient, kWorker, kTaggedClient };

// A client REQUEST (client -> broker) or REPLY (broker -> client); both have
// the same layout: "", "MDPC01", service, body (>= 1 frame); with a request
// tag: "", "zb.tag.MDPC01", service, tag, body (>= 1 frame).
struct ClientMessage {
  std::string_view service;        // never empty
  std::span<zmq::message_t> body;  // at least one frame
  zmq::message_t* tag = nullptr;   // ParseTaggedClient only: 1..kMaxTagSize
};

// A worker command.  Fields not used by `command` are empty.
struct WorkerMessage {
  Command command;
  std::string_view service;           // kReady: never empty
  zmq::message_t* address = nullptr;  // kRequest/kReply: the client address
  std::span<zmq::message_t> body;     // kRequest/kReply: at least one frame
};

// Whether the leading empty frame is present in what is parsed or produced.
enum class Delimiter { kWithDelimiter, kNoDelimiter };

// Classifies a message by its tag (after checking the empty frame).  Errors:
// missing frames, a non-empty first frame, an unknown tag.
absl::StatusOr<Protocol> ClassifyMessage(std::span<zmq::message_t> frames);

// Parses "", "MDPC01", service, body...  (kNoDelimiter: without the "").
absl::StatusOr<ClientMessage> ParseClient(
    std::span<zmq::message_t> frames,
    Delimiter delimiter = Delimiter::kWithDelimiter);

// Parses "", "zb.tag.MDPC01", service, tag, body...  (kNoDelimiter: without
// the "").  The tag must have 1 to kMaxTagSize bytes.
absl::StatusOr<ClientMessage> ParseTaggedClient(
    std::span<zmq::message_t> frames,
    Delimiter delimiter = Delimiter::kWithDelimiter);

// Parses "", "MDPW01", command, ... with the exact layout of each command:
//   READY       service                      (exactly 4 frames)
//   REQUEST     client-address, "", body...  (6 or more frames)
//   REPLY       client-address, "", body...  (6 or more frames)
//   HEARTBEAT                                (exactly 3 frames)
//   DISCONNECT                               (exactly 3 frames)
absl::StatusOr<WorkerMessage> ParseWorker(std::span<zmq::message_t> frames);

// --- Encoding: each appends one whole message to *out ----------------------

// "", "MDPC01", service, body...   (client -> broker)
void AppendClientRequest(std::string_view service,
                         std::span<zmq::message_t> body, Frames* out,
                         Delimiter delimiter = Delimiter::kWithDelimiter);
// "", "MDPC01", service, body...   (broker -> client)
void AppendClientReply(std::string_view service, std::span<zmq::message_t> body,
                       Frames* out,
                       Delimiter delimiter = Delimiter::kWithDelimiter);
// "", "zb.tag.MDPC01", service, tag, body...  (client -> broker; moves the
// tag and the body)
void AppendTaggedClientRequest(std::string_view service, zmq::message_t tag,
                               std::span<zmq::message_t> body, Frames* out);
// "", "zb.tag.MDPC01", service, tag, body...  (broker -> client)
void AppendTaggedClientReply(std::string_view service, zmq::message_t tag,
                             std::span<zmq::message_t> body, Frames* out);
// "", "MDPW01", 0x01, service
void AppendReady(std::string_view service, Frames* out);
// "", "MDPW01", 0x02, address, "", body...  (moves `address` and the body)
void AppendRequest(zmq::message_t address, std::span<zmq::message_t> body,
                   Frames* out);
// "", "MDPW01", 0x03, address, "", body...
void AppendReply(zmq::message_t address, std::span<zmq::message_t> body,
                 Frames* out);
// "", "MDPW01", 0x04
void AppendHeartbeat(Frames* out);
// "", "MDPW01", 0x05
void AppendDisconnect(Frames* out);

// Re-encodes a parsed worker message (moves its address and body frames).
void AppendWorker(WorkerMessage& message, Frames* out);

}  // namespace zb::mdp

#endif  // ZBROKERS_MAJORDOMO_CODEC_H_
