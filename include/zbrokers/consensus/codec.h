// Copyright 2026 The zbrokers Authors.
//
// Codec for CCp100, the consensus protocol (docs/protocols/ccp.md has the
// full description; this header is the reference for the C++ API).
//
// Frames.  Every function here works on the message *body*: the frames that
// follow the empty delimiter frame.  A DEALER (client, worker) receives
// [""][body...] and a ROUTER (the broker) receives [identity][""][body...];
// DealerBody() and RouterBody() check that envelope and return the body.
// Encoders produce body frames only: a DEALER sends an empty frame first, a
// ROUTER sends [identity][""] first.
//
//   body[0]  "CCp100"                          tag
//   body[1]  one byte: 0x01..0x07              MessageType
//   body[2]  service name                      READY, REQUEST, REPLY_*,
//   DISCONNECT body[3]  12-byte sequence id               REQUEST, REPLY_*
//   body[3]  uint32 BE heartbeat interval (ms) READY
//   body[4]  uint8 heartbeat retries           READY
//   body[4.] payload frames                    REQUEST, REPLY_* (>= 0)
//
// Two ways to parse.
//
//   * ParseHeader() is the hot-path parser used by the broker: it validates
//     the whole message but copies nothing and allocates nothing on success.
//     The returned Header holds string_views into the caller's frames and the
//     index of the first payload frame, so the caller can forward payload
//     frames by moving them (or zmq_msg_copy for fan-out).
//   * Parse() returns an owning typed Message (std::variant); it moves the
//     payload frames out of the caller's span (no byte copies) and copies the
//     service name into a std::string.  Convenient for clients and workers.
//
// Two ways to encode.
//
//   * Append*() append the frames of a message to a caller-owned Frames
//     vector (reuse it with clear() to avoid allocation).  The header frames
//     are at most 33 bytes for service names up to 33 bytes, which libzmq
//     stores inside the zmq_msg_t without a heap allocation.
//   * Encode(Message) builds a fresh Frames vector, moving the payload in.
//
// Errors.  Parse errors are absl::InvalidArgumentError whose message says
// exactly what is wrong, e.g. "CCp100: REQUEST: sequence id is 7 bytes,
// expected 12".  Building the error message allocates; that only happens
// for malformed input.
//
// Thread-safety: all functions are pure and may be called from any thread.
//
// Example (a worker answering a request it received on a DEALER):
//
//   absl::StatusOr<std::span<zmq::message_t>> body = zb::ccp::DealerBody(msg);
//   absl::StatusOr<zb::ccp::Header> h = zb::ccp::ParseHeader(*body);
//   if (h.ok() && h->type == zb::ccp::MessageType::kRequest) {
//     zb::Frames out;
//     out.emplace_back();  // DEALER delimiter
//     zb::ccp::AppendHeader(out, zb::ccp::MessageType::kReplySuccess,
//                           h->service, h->sequence);
//     out.push_back(zb::Frame("answer"));
//     zb::SendFrames(socket, out).IgnoreError();
//   }

#ifndef ZBROKERS_CONSENSUS_CODEC_H_
#define ZBROKERS_CONSENSUS_CODEC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/frames/frames.h"

namespace zb::ccp {

// The protocol tag, body[0] of every message.
inline constexpr std::string_view kTag = "CCp100";

// body[1], one byte.
enum class MessageType : std::uint8_t {
  kReady = 0x01,         // worker -> broker
  kHeartbeat = 0x02,     // worker <-> broker
  kRequest = 0x03,       // client -> broker -> every worker
  kReplySuccess = 0x04,  // worker -> broker -> client
  kReplyFailure = 0x05,  // worker -> broker -> client
  kDisconnect = 0x06,    // worker <-> broker
  kPing = 0x07,          // client -> broker -> client (echoed)
};

// "READY", "HEARTBEAT", ...; "UNKNOWN" for values outside the enum.
std::string_view TypeName(MessageType type);

// Frame positions inside the body.
inline constexpr std::size_t kTagIndex = 0;
inline constexpr std::size_t kTypeIndex = 1;
inline constexpr std::size_t kServiceIndex = 2;
inline constexpr std::size_t kSequenceIndex = 3;  // REQUEST, REPLY_*
inline constexpr std::size_t kIntervalIndex = 3;  // READY
inline constexpr std::size_t kRetriesIndex = 4;   // READY
inline constexpr std::size_t kPayloadIndex = 4;   // REQUEST, REPLY_*

// Identifies one request: a 64-bit sequence number chosen by the client
// (the first is 1, each next exactly one more) and the client's random
// 32-bit id.  On the wire: 12 bytes, three big-endian uint32: high half of
// `sequence`, low half, `client_id`.
struct SequenceId {
  std::uint64_t sequence = 0;
  std::uint32_t client_id = 0;

  friend bool operator==(const SequenceId&, const SequenceId&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const SequenceId& s) {
    return H::combine(std::move(h), s.sequence, s.client_id);
  }
};

inline constexpr std::size_t kSequenceIdSize = 12;

// The largest frame, in bytes, the broker, the client and the worker accept
// by default (ZMQ_MAXMSGSIZE; their Options::max_message_size, 0 = no
// limit): far above what a request carries, far below what lets one peer
// balloon another's memory.  The same default as Majordomo's.
inline constexpr std::int64_t kDefaultMaxMessageSize = std::int64_t{16} << 20;

std::array<char, kSequenceIdSize> EncodeSequenceId(SequenceId id);
// InvalidArgument unless `bytes` is exactly 12 bytes long.
absl::StatusOr<SequenceId> DecodeSequenceId(std::string_view bytes);

// Failure reasons generated by the broker.  A REPLY_FAILURE made by the
// broker carries exactly two payload frames: one of these codes, then a
// human-readable explanation.  All codes start with "zb:" (kReasonPrefix).
// A REPLY_FAILURE from a worker is forwarded to the client unchanged, so
// workers must not start their first failure payload frame with "zb:";
// IsBrokerFailure() tells the two apart.
inline constexpr std::string_view kReasonPrefix = "zb:";
// The service has no workers.
inline constexpr std::string_view kReasonNoWorkers = "zb:no-workers";
// The request's deadline passed before every worker answered.
inline constexpr std::string_view kReasonTimeout = "zb:timeout";
// A worker answered REPLY_FAILURE without any payload of its own.
inline constexpr std::string_view kReasonWorkerFailed = "zb:worker-failed";
// Every worker of the request's quorum left (DISCONNECT, heartbeat expiry,
// unroutable) before the request was answered.
inline constexpr std::string_view kReasonWorkerLeft = "zb:worker-left";
// A worker's queue was full (high-water mark), so the request could not be
// delivered to every worker.
inline constexpr std::string_view kReasonWorkerBusy = "zb:worker-busy";
// The request broke the client's sequence rules: a gap or a repeat in a
// known client id's numbers, or a known client id used from another socket
// (an unknown client id is adopted at the number it presents).  The client
// should take a new client id and start again at sequence number 1.
inline constexpr std::string_view kReasonBadSequence = "zb:bad-sequence";
// The broker shut down while the request was open.
inline constexpr std::string_view kReasonShutdown = "zb:shutdown";
// The REQUEST could not be parsed (an empty or too long service name, too
// many frames); the explanation says what was wrong.  Its sequence number
// is used up like that of any answered request.
inline constexpr std::string_view kReasonMalformed = "zb:malformed";
// The client already has the most requests open the broker allows one
// client (ConsensusBroker::Options::max_requests_per_client), or the broker
// tracks its most clients and none of them is idle (max_clients).  Nothing
// was sent to a worker; the client may try again once some of its requests
// have ended.
inline constexpr std::string_view kReasonBusy = "zb:busy";

// True when a REPLY_FAILURE payload was generated by the broker (its first
// frame starts with kReasonPrefix).
bool IsBrokerFailure(std::span<const zmq::message_t> payload);

// --- Envelopes --------------------------------------------------------------

// [""][body...] as received by a DEALER -> the body.  InvalidArgument when
// the first frame is missing or not empty, or the body is empty.
absl::StatusOr<std::span<zmq::message_t>> DealerBody(
    std::span<zmq::message_t> frames);
// [identity][""][body...] as received by a ROUTER -> the body (frames[0] is
// the identity).  InvalidArgument when the delimiter is missing or not empty,
// or the body is empty.
absl::StatusOr<std::span<zmq::message_t>> RouterBody(
    std::span<zmq::message_t> frames);

// --- Hot-path parsing -------------------------------------------------------

struct ParseLimits {
  // Most frames a body may have (header and payload); 0 = no limit.
  std::size_t max_frames = 0;
  // Longest accepted service name in bytes.
  std::size_t max_service_size = 255;
};

// What ParseHeader() found.  Views point into the parsed frames and are valid
// while those frames live and are not moved or modified.
struct Header {
  MessageType type = MessageType::kHeartbeat;
  // READY, REQUEST, REPLY_*, DISCONNECT; empty for HEARTBEAT and PING.
  std::string_view service;
  // REQUEST, REPLY_*.
  SequenceId sequence;
  // READY.
  std::uint32_t heartbeat_interval_ms = 0;
  std::uint8_t heartbeat_retries = 0;
  // REQUEST, REPLY_*: body[payload_index, body.size()) are the payload
  // frames (payload_index == kPayloadIndex).  Other types: body.size().
  std::size_t payload_index = 0;
};

// Validates a complete message body and describes it; see the file comment
// for the frame layout.  Rules (each breach is InvalidArgument saying which):
//   - body[0] is exactly "CCp100"; body[1] is one byte, 0x01..0x07;
//   - HEARTBEAT and PING have exactly 2 frames, DISCONNECT exactly 3,
//     READY exactly 5 (no trailing frames);
//   - the service name is 1..limits.max_service_size bytes;
//   - the sequence id is exactly 12 bytes;
//   - READY: interval is exactly 4 bytes and not 0, retries exactly 1 byte
//     and not 0;
//   - REQUEST, REPLY_SUCCESS and REPLY_FAILURE may have any number of
//     payload frames, none included (a 2011 client whose message encodes
//     to nothing sends a REQUEST without payload frames, and the 2011 broker
//     sent failures without payload); zbrokers' own encoders always send at
//     least one (an empty frame for an empty payload);
//   - at most limits.max_frames frames in total when that is not 0.
// Never allocates on success.
absl::StatusOr<Header> ParseHeader(std::span<const zmq::message_t> body,
                                   const ParseLimits& limits = {});

// For a body that ParseHeader() rejected: the sequence id of a REQUEST whose
// tag, type and 12-byte sequence id frame can still be read (its service
// name is empty or too long, or it has too many frames), so that the broker
// can answer it (REPLY_FAILURE kReasonMalformed) instead of dropping it and
// leaving its client waiting.  nullopt for anything else.
std::optional<SequenceId> ReadableRequestSequence(
    std::span<const zmq::message_t> body);

// --- Owning messages --------------------------------------------------------

struct Ready {
  std::string service;
  std::uint32_t heartbeat_interval_ms = 0;
  std::uint8_t heartbeat_retries = 0;
};
struct Heartbeat {};
struct Request {
  std::string service;
  SequenceId sequence;
  Frames payload;
};
struct ReplySuccess {
  std::string service;
  SequenceId sequence;
  Frames payload;
};
struct ReplyFailure {
  std::string service;
  SequenceId sequence;
  Frames payload;
};
struct Disconnect {
  std::string service;
};
struct Ping {};

using Message = std::variant<Ready, Heartbeat, Request, ReplySuccess,
                             ReplyFailure, Disconnect, Ping>;

MessageType TypeOf(const Message& message);

// ParseHeader() followed by moving the payload frames out of `body` into
// the message (on success only; on error `body` is untouched).
absl::StatusOr<Message> Parse(std::span<zmq::message_t> body,
                              const ParseLimits& limits = {});

// --- Encoding ---------------------------------------------------------------
//
// Append*() append body frames to `out` and keep what is already there (for
// instance an identity and a delimiter).  They do not validate their input:
// callers pass names and values they made themselves.

// [tag][type] -- HEARTBEAT and PING (other types need their own frames).
void AppendHeader(Frames& out, MessageType type);
// [tag][type][service][sequence id] -- REQUEST, REPLY_SUCCESS, REPLY_FAILURE.
// The caller appends the payload frames (a REQUEST needs at least one).
void AppendHeader(Frames& out, MessageType type, std::string_view service,
                  SequenceId sequence);
void AppendReady(Frames& out, std::string_view service,
                 std::uint32_t heartbeat_interval_ms,
                 std::uint8_t heartbeat_retries);
void AppendDisconnect(Frames& out, std::string_view service);
// A REQUEST/REPLY_* with its payload moved in; an empty payload becomes one
// empty frame.
void AppendWithPayload(Frames& out, MessageType type, std::string_view service,
                       SequenceId sequence, std::span<zmq::message_t> payload);

// The body frames of `message`; its payload frames are moved in.  REQUEST,
// REPLY_SUCCESS and REPLY_FAILURE with an empty payload get one empty frame.
Frames Encode(Message message);

}  // namespace zb::ccp

#endif  // ZBROKERS_CONSENSUS_CODEC_H_
