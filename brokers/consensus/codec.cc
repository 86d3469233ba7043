// Copyright 2026 The zbrokers Authors.

#include "zbrokers/consensus/codec.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_format.h"

namespace zb::ccp {
namespace {

std::uint32_t LoadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) |
         (std::uint32_t{u[2]} << 8) | std::uint32_t{u[3]};
}

void StoreBigEndian32(std::uint32_t v, char* p) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

// Errors are built only on the malformed path, so formatting cost does not
// matter there.
template <typename... Args>
absl::Status Malformed(const absl::FormatSpec<Args...>& format,
                       const Args&... args) {
  std::string message = "CCp100: ";
  absl::StrAppendFormat(&message, format, args...);
  return absl::InvalidArgumentError(message);
}

// Shows a short, printable excerpt of unexpected bytes in an error message.
std::string Excerpt(std::string_view bytes) {
  constexpr std::size_t kMax = 16;
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  if (bytes.size() > kMax) out += "...";
  return out;
}

zmq::message_t TypeFrame(MessageType type) {
  const char byte = static_cast<char>(type);
  return zmq::message_t(&byte, 1);
}

absl::Status CheckService(std::string_view what, std::string_view service,
                          const ParseLimits& limits) {
  if (service.empty()) return Malformed("%s: empty service name", what);
  if (service.size() > limits.max_service_size) {
    return Malformed("%s: service name is %d bytes, limit is %d", what,
                     service.size(), limits.max_service_size);
  }
  return absl::OkStatus();
}

template <typename T>
T MakeSequenced(const Header& h, std::span<zmq::message_t> body) {
  T m;
  m.service.assign(h.service);
  m.sequence = h.sequence;
  m.payload.reserve(body.size() - h.payload_index);
  for (std::size_t i = h.payload_index; i < body.size(); ++i) {
    m.payload.push_back(std::move(body[i]));
  }
  return m;
}

}  // namespace

std::string_view TypeName(MessageType type) {
  switch (type) {
    case MessageType::kReady:
      return "READY";
    case MessageType::kHeartbeat:
      return "HEARTBEAT";
    case MessageType::kRequest:
      return "REQUEST";
    case MessageType::kReplySuccess:
      return "REPLY_SUCCESS";
    case MessageType::kReplyFailure:
      return "REPLY_FAILURE";
    case MessageType::kDisconnect:
      return "DISCONNECT";
    case MessageType::kPing:
      return "PING";
  }
  return "UNKNOWN";
}

std::array<char, kSequenceIdSize> EncodeSequenceId(SequenceId id) {
  std::array<char, kSequenceIdSize> out;
  StoreBigEndian32(static_cast<std::uint32_t>(id.sequence >> 32), &out[0]);
  StoreBigEndian32(static_cast<std::uint32_t>(id.sequence), &out[4]);
  StoreBigEndian32(id.client_id, &out[8]);
  return out;
}

absl::StatusOr<SequenceId> DecodeSequenceId(std::string_view bytes) {
  if (bytes.size() != kSequenceIdSize) {
    return Malformed("sequence id is %d bytes, expected %d", bytes.size(),
                     kSequenceIdSize);
  }
  SequenceId id;
  id.sequence = (std::uint64_t{LoadBigEndian32(bytes.data())} << 32) |
                LoadBigEndian32(bytes.data() + 4);
  id.client_id = LoadBigEndian32(bytes.data() + 8);
  return id;
}

bool IsBrokerFailure(std::span<const zmq::message_t> payload) {
  return !payload.empty() && View(payload[0]).starts_with(kReasonPrefix);
}

absl::StatusOr<std::span<zmq::message_t>> DealerBody(
    std::span<zmq::message_t> frames) {
  if (frames.empty()) return Malformed("no frames");
  if (frames[0].size() != 0) {
    return Malformed("expected an empty delimiter frame, got %d bytes \"%s\"",
                     frames[0].size(), Excerpt(View(frames[0])));
  }
  if (frames.size() < 2) return Malformed("nothing after the delimiter");
  return frames.subspan(1);
}

absl::StatusOr<std::span<zmq::message_t>> RouterBody(
    std::span<zmq::message_t> frames) {
  if (frames.size() < 2) return Malformed("no delimiter after the identity");
  if (frames[1].size() != 0) {
    return Malformed("expected an empty delimiter frame, got %d bytes \"%s\"",
                     frames[1].size(), Excerpt(View(frames[1])));
  }
  if (frames.size() < 3) return Malformed("nothing after the delimiter");
  return frames.subspan(2);
}

absl::StatusOr<Header> ParseHeader(std::span<const zmq::message_t> body,
                                   const ParseLimits& limits) {
  const std::size_t n = body.size();
  if (n == 0) return Malformed("empty message");
  if (limits.max_frames != 0 && n > limits.max_frames) {
    return Malformed("%d frames, limit is %d", n, limits.max_frames);
  }
  const std::string_view tag = View(body[kTagIndex]);
  if (tag != kTag) {
    return Malformed("wrong protocol tag \"%s\", expected \"%s\"", Excerpt(tag),
                     kTag);
  }
  if (n < 2) return Malformed("missing message type frame");
  const std::string_view type_bytes = View(body[kTypeIndex]);
  if (type_bytes.size() != 1) {
    return Malformed("message type frame is %d bytes, expected 1",
                     type_bytes.size());
  }
  const auto raw_type = static_cast<unsigned char>(type_bytes[0]);
  if (raw_type < 0x01 || raw_type > 0x07) {
    return Malformed("unknown message type 0x%02x", raw_type);
  }

  Header h;
  h.type = static_cast<MessageType>(raw_type);
  h.payload_index = n;
  const std::string_view name = TypeName(h.type);
  switch (h.type) {
    case MessageType::kHeartbeat:
    case MessageType::kPing:
      if (n != 2) {
        return Malformed("%s: %d frames, expected 2 (trailing frames)", name,
                         n);
      }
      return h;

    case MessageType::kDisconnect:
      if (n < 3) return Malformed("%s: missing service frame", name);
      if (n > 3) {
        return Malformed("%s: %d frames, expected 3 (trailing frames)", name,
                         n);
      }
      h.service = View(body[kServiceIndex]);
      if (auto s = CheckService(name, h.service, limits); !s.ok()) return s;
      return h;

    case MessageType::kReady: {
      if (n < 3) return Malformed("%s: missing service frame", name);
      if (n < 4) return Malformed("%s: missing heartbeat interval frame", name);
      if (n < 5) return Malformed("%s: missing heartbeat retries frame", name);
      if (n > 5) {
        return Malformed("%s: %d frames, expected 5 (trailing frames)", name,
                         n);
      }
      h.service = View(body[kServiceIndex]);
      if (auto s = CheckService(name, h.service, limits); !s.ok()) return s;
      const std::string_view interval = View(body[kIntervalIndex]);
      if (interval.size() != 4) {
        return Malformed("%s: heartbeat interval is %d bytes, expected 4", name,
                         interval.size());
      }
      h.heartbeat_interval_ms = LoadBigEndian32(interval.data());
      if (h.heartbeat_interval_ms == 0) {
        return Malformed("%s: heartbeat interval is 0 ms", name);
      }
      const std::string_view retries = View(body[kRetriesIndex]);
      if (retries.size() != 1) {
        return Malformed("%s: heartbeat retries is %d bytes, expected 1", name,
                         retries.size());
      }
      h.heartbeat_retries = static_cast<std::uint8_t>(retries[0]);
      if (h.heartbeat_retries == 0) {
        return Malformed("%s: heartbeat retries is 0", name);
      }
      return h;
    }

    case MessageType::kRequest:
    case MessageType::kReplySuccess:
    case MessageType::kReplyFailure: {
      if (n < 3) return Malformed("%s: missing service frame", name);
      if (n < 4) return Malformed("%s: missing sequence id frame", name);
      h.service = View(body[kServiceIndex]);
      if (auto s = CheckService(name, h.service, limits); !s.ok()) return s;
      const std::string_view seq = View(body[kSequenceIndex]);
      if (seq.size() != kSequenceIdSize) {
        return Malformed("%s: sequence id is %d bytes, expected %d", name,
                         seq.size(), kSequenceIdSize);
      }
      h.sequence.sequence = (std::uint64_t{LoadBigEndian32(seq.data())} << 32) |
                            LoadBigEndian32(seq.data() + 4);
      h.sequence.client_id = LoadBigEndian32(seq.data() + 8);
      // Any number of payload frames, none included: zbrokers' encoders
      // send one empty frame for an empty payload, but a 2011 client whose
      // message encodes to nothing sends none (and the 2011 broker served
      // it), and so do its broker's failure replies.
      h.payload_index = kPayloadIndex;
      return h;
    }
  }
  return Malformed("unknown message type 0x%02x", raw_type);  // unreachable
}

std::optional<SequenceId> ReadableRequestSequence(
    std::span<const zmq::message_t> body) {
  if (body.size() <= kSequenceIndex || View(body[kTagIndex]) != kTag) {
    return std::nullopt;
  }
  const std::string_view type = View(body[kTypeIndex]);
  if (type.size() != 1 ||
      static_cast<unsigned char>(type[0]) !=
          static_cast<unsigned char>(MessageType::kRequest)) {
    return std::nullopt;
  }
  absl::StatusOr<SequenceId> id = DecodeSequenceId(View(body[kSequenceIndex]));
  if (!id.ok()) return std::nullopt;
  return *id;
}

MessageType TypeOf(const Message& message) {
  return std::visit(
      [](const auto& m) -> MessageType {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Ready>) return MessageType::kReady;
        if constexpr (std::is_same_v<T, Heartbeat>) {
          return MessageType::kHeartbeat;
        }
        if constexpr (std::is_same_v<T, Request>) return MessageType::kRequest;
        if constexpr (std::is_same_v<T, ReplySuccess>) {
          return MessageType::kReplySuccess;
        }
        if constexpr (std::is_same_v<T, ReplyFailure>) {
          return MessageType::kReplyFailure;
        }
        if constexpr (std::is_same_v<T, Disconnect>) {
          return MessageType::kDisconnect;
        }
        return MessageType::kPing;
      },
      message);
}

absl::StatusOr<Message> Parse(std::span<zmq::message_t> body,
                              const ParseLimits& limits) {
  absl::StatusOr<Header> parsed = ParseHeader(body, limits);
  if (!parsed.ok()) return parsed.status();
  const Header& h = *parsed;
  switch (h.type) {
    case MessageType::kReady:
      return Ready{std::string(h.service), h.heartbeat_interval_ms,
                   h.heartbeat_retries};
    case MessageType::kHeartbeat:
      return Heartbeat{};
    case MessageType::kRequest:
      return MakeSequenced<Request>(h, body);
    case MessageType::kReplySuccess:
      return MakeSequenced<ReplySuccess>(h, body);
    case MessageType::kReplyFailure:
      return MakeSequenced<ReplyFailure>(h, body);
    case MessageType::kDisconnect:
      return Disconnect{std::string(h.service)};
    case MessageType::kPing:
      return Ping{};
  }
  return absl::InternalError("CCp100: unreachable");
}

void AppendHeader(Frames& out, MessageType type) {
  out.push_back(Frame(kTag));
  out.push_back(TypeFrame(type));
}

void AppendHeader(Frames& out, MessageType type, std::string_view service,
                  SequenceId sequence) {
  AppendHeader(out, type);
  out.push_back(Frame(service));
  const std::array<char, kSequenceIdSize> seq = EncodeSequenceId(sequence);
  out.emplace_back(seq.data(), seq.size());
}

void AppendReady(Frames& out, std::string_view service,
                 std::uint32_t heartbeat_interval_ms,
                 std::uint8_t heartbeat_retries) {
  AppendHeader(out, MessageType::kReady);
  out.push_back(Frame(service));
  char interval[4];
  StoreBigEndian32(heartbeat_interval_ms, interval);
  out.emplace_back(interval, sizeof interval);
  const char retries = static_cast<char>(heartbeat_retries);
  out.emplace_back(&retries, 1);
}

void AppendDisconnect(Frames& out, std::string_view service) {
  AppendHeader(out, MessageType::kDisconnect);
  out.push_back(Frame(service));
}

void AppendWithPayload(Frames& out, MessageType type, std::string_view service,
                       SequenceId sequence, std::span<zmq::message_t> payload) {
  AppendHeader(out, type, service, sequence);
  if (payload.empty()) {
    out.emplace_back();
    return;
  }
  for (zmq::message_t& f : payload) out.push_back(std::move(f));
}

Frames Encode(Message message) {
  Frames out;
  std::visit(
      [&out](auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Ready>) {
          out.reserve(5);
          AppendReady(out, m.service, m.heartbeat_interval_ms,
                      m.heartbeat_retries);
        } else if constexpr (std::is_same_v<T, Heartbeat>) {
          out.reserve(2);
          AppendHeader(out, MessageType::kHeartbeat);
        } else if constexpr (std::is_same_v<T, Ping>) {
          out.reserve(2);
          AppendHeader(out, MessageType::kPing);
        } else if constexpr (std::is_same_v<T, Disconnect>) {
          out.reserve(3);
          AppendDisconnect(out, m.service);
        } else {
          MessageType type = MessageType::kRequest;
          if constexpr (std::is_same_v<T, ReplySuccess>) {
            type = MessageType::kReplySuccess;
          } else if constexpr (std::is_same_v<T, ReplyFailure>) {
            type = MessageType::kReplyFailure;
          }
          out.reserve(kPayloadIndex +
                      std::max<std::size_t>(1, m.payload.size()));
          AppendWithPayload(out, type, m.service, m.sequence, m.payload);
        }
      },
      message);
  return out;
}

}  // namespace zb::ccp
