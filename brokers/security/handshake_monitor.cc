// Copyright 2026 The zbrokers Authors.

#include "zbrokers/security/handshake_monitor.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "zbrokers/frames/frames.h"

namespace zb {

std::string_view HandshakeMonitor::Reason(int event, std::uint32_t value) {
  switch (event) {
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      // The value is the ZAP status code; only 400 means "refused".
      return value == 400 ? "key_not_allowed" : "protocol_error";
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
        return "decrypt_failed";
      }
      if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
        return "mechanism_mismatch";
      }
      return "protocol_error";
    default:
      return "other";
  }
}

std::string_view HandshakeMonitor::Describe(std::string_view reason) {
  if (reason == "key_not_allowed") {
    return "the client's CURVE key is not in the allowlist";
  }
  if (reason == "decrypt_failed") {
    return "the CURVE handshake did not decrypt (the client uses another "
           "server public key)";
  }
  if (reason == "mechanism_mismatch") {
    return "the peer speaks another security mechanism (a plaintext peer on "
           "a CURVE endpoint, or a CURVE peer on a plaintext one)";
  }
  if (reason == "protocol_error") return "a ZMTP or ZAP protocol error";
  return "the handshake failed without detail from libzmq (typically the "
         "peer hung up mid-handshake: a plaintext peer that saw the mismatch "
         "first, a refused client closing)";
}

HandshakeMonitor::HandshakeMonitor(zmq::context_t& context, Callback on_failure)
    : socket_(context, zmq::socket_type::pair),
      on_failure_(std::move(on_failure)) {
  socket_.set(zmq::sockopt::linger, 0);
}

HandshakeMonitor::~HandshakeMonitor() = default;

absl::StatusOr<std::unique_ptr<HandshakeMonitor>> HandshakeMonitor::Create(
    Reactor& reactor, zmq::context_t& context, const std::string& endpoint,
    Callback on_failure) {
  std::unique_ptr<HandshakeMonitor> monitor(
      new HandshakeMonitor(context, std::move(on_failure)));
  try {
    monitor->socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("connect %s: %s", endpoint, e.what()));
  }
  HandshakeMonitor* m = monitor.get();
  absl::StatusOr<Reactor::SocketWatch> watch = reactor.Add(
      m->socket_, [m](std::span<zmq::message_t> f) { m->OnEvent(f); });
  if (!watch.ok()) return watch.status();
  m->watch_ = *std::move(watch);
  return monitor;
}

void HandshakeMonitor::OnEvent(std::span<zmq::message_t> frames) {
  // libzmq 4.x: [uint16 event, uint32 value] (host byte order), [endpoint].
  if (frames.size() != 2 || frames[0].size() != 6) return;
  std::uint16_t event = 0;
  std::uint32_t value = 0;
  std::memcpy(&event, frames[0].data(), sizeof(event));
  std::memcpy(&value, static_cast<const char*>(frames[0].data()) + 2,
              sizeof(value));
  if ((event & kEvents) == 0) return;
  Failure f;
  f.event = event;
  f.value = value;
  f.reason = Reason(event, value);
  f.endpoint = View(frames[1]);
  if (on_failure_) on_failure_(f);
}

}  // namespace zb
