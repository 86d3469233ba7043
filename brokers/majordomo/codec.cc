// Copyright 2026 The zbrokers Authors.

#include "zbrokers/majordomo/codec.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace zb::mdp {
namespace {

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("malformed MDP message: %s", what));
}

bool Is(const zmq::message_t& frame, std::string_view bytes) {
  return View(frame) == bytes;
}

// The one-byte command frames, built without touching the heap (a one-byte
// zmq_msg_t is stored inline).
zmq::message_t CommandFrame(Command c) {
  const auto byte = static_cast<char>(c);
  return zmq::message_t(&byte, 1);
}

// The frames after the empty delimiter (when `delimiter` says there is one)
// and the protocol tag `tag`; `wrong_tag` is the error for another tag.
// Every parser starts here, so every kind of message is refused the same way
// for the same fault.
absl::StatusOr<std::span<zmq::message_t>> AfterTag(
    std::span<zmq::message_t> frames, Delimiter delimiter, std::string_view tag,
    std::string_view wrong_tag) {
  if (delimiter == Delimiter::kWithDelimiter) {
    if (frames.empty()) return Malformed("no frames");
    if (frames[0].size() != 0) {
      return Malformed("first frame is not empty (missing empty delimiter)");
    }
    frames = frames.subspan(1);
  }
  if (frames.empty()) return Malformed("missing protocol tag");
  if (!Is(frames[0], tag)) return Malformed(wrong_tag);
  return frames.subspan(1);
}

// The service name that starts what follows a client message's tag.
absl::Status CheckClientService(std::span<zmq::message_t> after_tag) {
  if (after_tag.empty()) return Malformed("client message has no service");
  if (after_tag[0].size() == 0) {
    return Malformed("client message has an empty service name");
  }
  return absl::OkStatus();
}

void AppendBody(std::span<zmq::message_t> body, Frames* out) {
  for (auto& f : body) out->push_back(std::move(f));
}

void AppendClient(std::string_view service, std::span<zmq::message_t> body,
                  Frames* out, Delimiter delimiter) {
  if (delimiter == Delimiter::kWithDelimiter) out->emplace_back();
  out->push_back(Frame(kClientTag));
  out->push_back(Frame(service));
  AppendBody(body, out);
}

void AppendWorkerHeader(Command c, Frames* out) {
  out->emplace_back();
  out->push_back(Frame(kWorkerTag));
  out->push_back(CommandFrame(c));
}

}  // namespace

std::string_view CommandName(Command command) {
  switch (command) {
    case Command::kReady:
      return "READY";
    case Command::kRequest:
      return "REQUEST";
    case Command::kReply:
      return "REPLY";
    case Command::kHeartbeat:
      return "HEARTBEAT";
    case Command::kDisconnect:
      return "DISCONNECT";
  }
  return "UNKNOWN";
}

absl::StatusOr<Protocol> ClassifyMessage(std::span<zmq::message_t> frames) {
  if (frames.size() < 2) {
    return Malformed(absl::StrFormat(
        "%d frame(s); every MDP message has an empty frame and a tag",
        frames.size()));
  }
  if (frames[0].size() != 0) {
    return Malformed("first frame is not empty (missing empty delimiter)");
  }
  if (Is(frames[1], kClientTag)) return Protocol::kClient;
  if (Is(frames[1], kWorkerTag)) return Protocol::kWorker;
  if (Is(frames[1], kTaggedClientTag)) return Protocol::kTaggedClient;
  return Malformed("unknown protocol tag (expected MDPC01 or MDPW01)");
}

absl::StatusOr<ClientMessage> ParseClient(std::span<zmq::message_t> frames,
                                          Delimiter delimiter) {
  // [service][body...]
  absl::StatusOr<std::span<zmq::message_t>> rest = AfterTag(
      frames, delimiter, kClientTag, "client message tag is not MDPC01");
  if (!rest.ok()) return rest.status();
  if (absl::Status s = CheckClientService(*rest); !s.ok()) return s;
  if (rest->size() < 2) {
    return Malformed("client message has no body (needs at least one frame)");
  }
  return ClientMessage{View((*rest)[0]), rest->subspan(1)};
}

absl::StatusOr<ClientMessage> ParseTaggedClient(
    std::span<zmq::message_t> frames, Delimiter delimiter) {
  // [service][tag][body...]
  absl::StatusOr<std::span<zmq::message_t>> rest =
      AfterTag(frames, delimiter, kTaggedClientTag,
               "tagged client message tag is not zb.tag.MDPC01");
  if (!rest.ok()) return rest.status();
  if (absl::Status s = CheckClientService(*rest); !s.ok()) return s;
  const std::span<zmq::message_t> f = *rest;
  if (f.size() < 2) return Malformed("tagged client message has no tag");
  if (f[1].size() == 0 || f[1].size() > kMaxTagSize) {
    return Malformed(
        absl::StrFormat("request tag has %d bytes, expected 1 to %d",
                        f[1].size(), kMaxTagSize));
  }
  if (f.size() < 3) {
    return Malformed("client message has no body (needs at least one frame)");
  }
  return ClientMessage{View(f[0]), f.subspan(2), &f[1]};
}

absl::StatusOr<WorkerMessage> ParseWorker(std::span<zmq::message_t> frames) {
  // Indexes below count from the delimiter, as the error texts do.
  if (absl::StatusOr<std::span<zmq::message_t>> rest =
          AfterTag(frames, Delimiter::kWithDelimiter, kWorkerTag,
                   "worker message tag is not MDPW01");
      !rest.ok()) {
    return rest.status();
  }
  if (frames.size() < 3) return Malformed("worker message has no command");
  if (frames[2].size() != 1) {
    return Malformed(absl::StrFormat(
        "command frame has %d bytes, expected exactly one", frames[2].size()));
  }
  const auto byte = *static_cast<const std::uint8_t*>(frames[2].data());
  WorkerMessage m{static_cast<Command>(byte), {}, nullptr, {}};
  switch (m.command) {
    case Command::kReady:
      if (frames.size() != 4) {
        return Malformed(absl::StrFormat(
            "READY has %d frames, expected exactly 4", frames.size()));
      }
      if (frames[3].size() == 0)
        return Malformed("READY has an empty service name");
      m.service = View(frames[3]);
      return m;
    case Command::kRequest:
    case Command::kReply: {
      const std::string_view name = CommandName(m.command);
      if (frames.size() < 4) {
        return Malformed(absl::StrFormat("%s has no client address", name));
      }
      if (frames[3].size() == 0) {
        return Malformed(
            absl::StrFormat("%s has an empty client address", name));
      }
      if (frames.size() < 5) {
        return Malformed(absl::StrFormat(
            "%s has no empty delimiter after the client address", name));
      }
      if (frames[4].size() != 0) {
        return Malformed(absl::StrFormat(
            "%s: frame after the client address is not empty (exactly one "
            "address frame, then an empty delimiter)",
            name));
      }
      if (frames.size() < 6) {
        return Malformed(
            absl::StrFormat("%s has no body (needs at least one frame)", name));
      }
      m.address = &frames[3];
      m.body = frames.subspan(5);
      return m;
    }
    case Command::kHeartbeat:
    case Command::kDisconnect:
      if (frames.size() != 3) {
        return Malformed(absl::StrFormat("%s has %d frames, expected exactly 3",
                                         CommandName(m.command),
                                         frames.size()));
      }
      return m;
  }
  return Malformed(absl::StrFormat("unknown command 0x%02x", byte));
}

void AppendClientRequest(std::string_view service,
                         std::span<zmq::message_t> body, Frames* out,
                         Delimiter delimiter) {
  AppendClient(service, body, out, delimiter);
}

void AppendClientReply(std::string_view service, std::span<zmq::message_t> body,
                       Frames* out, Delimiter delimiter) {
  AppendClient(service, body, out, delimiter);
}

void AppendTaggedClientRequest(std::string_view service, zmq::message_t tag,
                               std::span<zmq::message_t> body, Frames* out) {
  out->emplace_back();
  out->push_back(Frame(kTaggedClientTag));
  out->push_back(Frame(service));
  out->push_back(std::move(tag));
  AppendBody(body, out);
}

void AppendTaggedClientReply(std::string_view service, zmq::message_t tag,
                             std::span<zmq::message_t> body, Frames* out) {
  AppendTaggedClientRequest(service, std::move(tag), body, out);
}

void AppendReady(std::string_view service, Frames* out) {
  AppendWorkerHeader(Command::kReady, out);
  out->push_back(Frame(service));
}

void AppendRequest(zmq::message_t address, std::span<zmq::message_t> body,
                   Frames* out) {
  AppendWorkerHeader(Command::kRequest, out);
  out->push_back(std::move(address));
  out->emplace_back();
  AppendBody(body, out);
}

void AppendReply(zmq::message_t address, std::span<zmq::message_t> body,
                 Frames* out) {
  AppendWorkerHeader(Command::kReply, out);
  out->push_back(std::move(address));
  out->emplace_back();
  AppendBody(body, out);
}

void AppendHeartbeat(Frames* out) {
  AppendWorkerHeader(Command::kHeartbeat, out);
}

void AppendDisconnect(Frames* out) {
  AppendWorkerHeader(Command::kDisconnect, out);
}

void AppendWorker(WorkerMessage& message, Frames* out) {
  switch (message.command) {
    case Command::kReady:
      AppendReady(message.service, out);
      return;
    case Command::kRequest:
      AppendRequest(std::move(*message.address), message.body, out);
      return;
    case Command::kReply:
      AppendReply(std::move(*message.address), message.body, out);
      return;
    case Command::kHeartbeat:
      AppendHeartbeat(out);
      return;
    case Command::kDisconnect:
      AppendDisconnect(out);
      return;
  }
}

}  // namespace zb::mdp
