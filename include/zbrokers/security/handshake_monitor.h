// Copyright 2026 The zbrokers Authors.
//
// zb::HandshakeMonitor reports the ZMTP handshakes a socket refused, from
// libzmq's socket monitor (zmq_socket_monitor), so that refused peers can
// be counted and logged: a plaintext peer on a CURVE listener, a client
// that uses the wrong server key, a key the ZAP handler refused, garbage.
//
//   // On the socket's thread: the socket publishes its events ...
//   zmq_socket_monitor(router.handle(), "inproc://zb-monitor-majordomo",
//                      zb::HandshakeMonitor::kEvents);
//   // ... and the monitor, on a reactor, reads them.
//   absl::StatusOr<std::unique_ptr<zb::HandshakeMonitor>> monitor =
//       zb::HandshakeMonitor::Create(reactor, context,
//           "inproc://zb-monitor-majordomo",
//           [](const zb::HandshakeMonitor::Failure& f) { ... f.reason ... });
//   if (!monitor.ok()) { ... }
//
// Reasons (Failure::reason; the label values of zb_auth_failures_total):
//   key_not_allowed     the ZAP handler answered 400 (a CURVE client whose key
//                       is not in the allowlist)
//   decrypt_failed      the CURVE handshake did not decrypt: the client uses
//                       the wrong server public key (or the bytes were
//                       tampered with)
//   mechanism_mismatch  the peer speaks another security mechanism: a
//                       plaintext peer on a CURVE listener, or a CURVE peer
//                       on a plaintext one
//   protocol_error      any other ZMTP or ZAP protocol error
//   other               a handshake failure libzmq gives no detail for;
//                       the value is an errno: typically EPIPE/ECONNRESET,
//                       the peer hung up mid-handshake (a plaintext peer
//                       that noticed the mismatch first, a client closing
//                       after a ZAP refusal), or EFAULT, no ZAP handler
//                       with ZMQ_ZAP_ENFORCE_DOMAIN
// libzmq drops monitor events when the monitor socket's queue is full (its
// receive high-water mark, 1000 by default), so under a flood of bad
// handshakes the counts are a lower bound.
//
// Threads: the monitor belongs to its reactor's thread.  Its socket is
// closed on destruction; destroy it before the context is terminated.

#ifndef ZBROKERS_SECURITY_HANDSHAKE_MONITOR_H_
#define ZBROKERS_SECURITY_HANDSHAKE_MONITOR_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/reactor/reactor.h"

namespace zb {

class HandshakeMonitor {
 public:
  // The events to pass to zmq_socket_monitor.
  static constexpr int kEvents = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  // Every reason Failure::reason can hold.
  static constexpr std::array<std::string_view, 5> kReasons = {
      "key_not_allowed", "decrypt_failed", "mechanism_mismatch",
      "protocol_error", "other"};

  struct Failure {
    std::string_view reason;    // one of kReasons
    std::string_view endpoint;  // the listener's endpoint, as libzmq says
    int event = 0;              // ZMQ_EVENT_HANDSHAKE_FAILED_*
    std::uint32_t value = 0;    // ZAP status code / ZMQ_PROTOCOL_ERROR_*
  };
  using Callback = absl::AnyInvocable<void(const Failure&)>;

  // The reason for one monitor event (see the file comment).
  static std::string_view Reason(int event, std::uint32_t value);
  // A plain-words description of a reason, for logs.
  static std::string_view Describe(std::string_view reason);

  // Connects to the monitor `endpoint` (in `context`) and reads its events
  // on `reactor` (call it on the reactor's thread), calling `on_failure` for
  // every refused handshake.  Fails with InvalidArgument when the endpoint
  // cannot be connected.  `reactor` and `context` must outlive the monitor.
  static absl::StatusOr<std::unique_ptr<HandshakeMonitor>> Create(
      Reactor& reactor, zmq::context_t& context, const std::string& endpoint,
      Callback on_failure);
  ~HandshakeMonitor();

  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

 private:
  // No I/O: Create() connects.
  HandshakeMonitor(zmq::context_t& context, Callback on_failure);

  void OnEvent(std::span<zmq::message_t> frames);

  zmq::socket_t socket_;
  Callback on_failure_;
  // Set by Create(); declared after socket_ so that the watch goes first.
  Reactor::SocketWatch watch_;
};

}  // namespace zb

#endif  // ZBROKERS_SECURITY_HANDSHAKE_MONITOR_H_
