// Copyright 2026 The zbrokers Authors.
//
// CURVE client authentication for zbrokers' listeners: an allowlist of
// client public keys and a ZAP handler (ZeroMQ RFC 27) that answers
// libzmq's authentication requests from it.  docs/security.md is the user's
// guide.
//
//   absl::StatusOr<zb::CurveAllowlist> allow =
//       zb::CurveAllowlist::Load("/etc/zb/clients");   // file or directory
//   absl::StatusOr<std::unique_ptr<zb::ZapHandler>> zap =
//       zb::ZapHandler::Create(reactor, context);  // before binding
//   if (!zap.ok()) { ... }
//   (*zap)->set_allowlist(std::make_shared<const zb::CurveAllowlist>(*allow));
//   // ... CURVE listeners (curve.h) on sockets of `context` now ask it.
//
// How libzmq uses it.  A CURVE listener with a ZAP domain (curve.h,
// ListenerSecurity) sends, for every client whose handshake decrypts (so
// the client knows the server's secret-key-holder's public key and holds
// the secret key of the public key it presents), a ZAP request to
// inproc://zeromq.zap.01 of its context, and completes the handshake only
// when the answer is "200".  A client the handler refuses gets an ERROR
// command and is disconnected before it can send a single message.  The
// handler answers:
//   200  mechanism CURVE and the client's public key is in the allowlist
//        (the user id is the key's label, or its Z85 text); or mechanism
//        NULL: only a plaintext listener asks with NULL (one bound after a
//        CURVE listener on the same socket keeps its ZAP domain, see
//        curve.h), and a plaintext listener lets everyone in by design;
//   400  anything else: a key not in the list, any other mechanism (PLAIN),
//        a domain the handler does not serve (when domains are given);
//   500  a request that does not follow RFC 27 (only the request id, when
//        readable, is echoed).
// Handshakes that fail before ZAP (a wrong server key, a plaintext peer on
// a CURVE listener) never reach the handler: watch them with
// HandshakeMonitor (handshake_monitor.h).
//
// Allowlist files.  A file holds any number of public keys in the key-file
// format of curve.h (one Z85 key per line, optionally followed by a label,
// '#' comment lines, blank lines).  A directory stands for every regular
// file in it whose name ends in ".pub" (other files and sub-directories are
// ignored, and counted); a key without a label gets the file's name without
// ".pub".  An empty allowlist is valid and lets no one in.
//
// Reloading.  set_allowlist() swaps the list between two requests; requests
// already answered are not revisited (connections already authenticated
// stay up: CURVE authenticates a connection once, at its handshake).
//
// Threads.  The handler belongs to its reactor's thread: construct, call
// and destroy it there.  It must stay bound for as long as any CURVE
// listener of the context exists, so destroy it after them.

#ifndef ZBROKERS_SECURITY_ZAP_HANDLER_H_
#define ZBROKERS_SECURITY_ZAP_HANDLER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb {

// The client public keys a CURVE listener lets in.  An immutable value.
class CurveAllowlist {
 public:
  CurveAllowlist() = default;

  // Reads a file, or every "*.pub" file of a directory (see the file
  // comment).  Errors name the file and line.
  static absl::StatusOr<CurveAllowlist> Load(const std::string& path);
  // Parses allowlist text; `source` names it in errors.
  static absl::StatusOr<CurveAllowlist> Parse(std::string_view text,
                                              std::string_view source);

  // The key's label when it is allowed (the empty string for an unlabelled
  // key in a file), else nullopt.
  std::optional<std::string_view> Find(const CurveKey& key) const;
  bool Contains(const CurveKey& key) const { return Find(key).has_value(); }
  std::size_t size() const { return keys_.size(); }
  // Files of a directory that were not read (not "*.pub", not regular).
  std::size_t ignored_files() const { return ignored_files_; }
  // Every key, in no particular order (for diffs in reload logs).
  std::vector<CurveKey> keys() const;

 private:
  void Add(const CurveKeyEntry& entry, std::string_view default_label);

  struct KeyHash {
    std::size_t operator()(const CurveKey& k) const;
  };
  absl::flat_hash_map<CurveKey, std::string, KeyHash> keys_;
  std::size_t ignored_files_ = 0;
};

class ZapHandler {
 public:
  // The endpoint libzmq sends ZAP requests to (RFC 27).
  static constexpr std::string_view kEndpoint = "inproc://zeromq.zap.01";

  // One answered request, for logs and metrics.
  struct Decision {
    std::string_view domain;     // the listener's ZAP domain
    std::string_view address;    // the peer's IP address, as libzmq says
    std::string_view mechanism;  // "CURVE", "NULL", "PLAIN", ...
    // The client's public key in Z85 ("" when the mechanism has none).
    std::string key;
    std::string_view label;  // the allowlist label (allowed only)
    bool allowed = false;
    std::string_view status_code;  // "200", "400", "500"
    std::string_view status_text;
  };
  using DecisionHook = absl::AnyInvocable<void(const Decision&)>;

  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;     // answered 400
    std::uint64_t malformed = 0;  // answered 500, or dropped
  };

  // Binds kEndpoint in `context` and answers on `reactor` (call it on the
  // reactor's thread).  Fails with AlreadyExists when another handler is
  // bound in this context.  `reactor` and `context` must outlive the
  // handler.  Nobody is let in until set_allowlist().
  static absl::StatusOr<std::unique_ptr<ZapHandler>> Create(
      Reactor& reactor, zmq::context_t& context);
  // Unbinds and closes the socket.
  ~ZapHandler();

  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // The keys let in from now on.  Until the first call, nobody is.
  void set_allowlist(std::shared_ptr<const CurveAllowlist> allowlist);
  const std::shared_ptr<const CurveAllowlist>& allowlist() const {
    return allowlist_;
  }
  // When non-empty, requests for any other domain are refused.
  void set_domains(std::vector<std::string> domains);
  // Called for every answered request (on the reactor thread).
  void set_decision_hook(DecisionHook hook) { hook_ = std::move(hook); }

  const Stats& stats() const { return stats_; }

 private:
  explicit ZapHandler(zmq::context_t& context);  // no I/O: Create() binds

  void OnRequest(std::span<zmq::message_t> frames);
  void Reply(zmq::message_t& routing_id, std::string_view request_id,
             std::string_view code, std::string_view text,
             std::string_view user_id);

  zmq::socket_t socket_;
  // Set by Create(); declared after socket_ so that the watch goes first.
  Reactor::SocketWatch watch_;
  std::shared_ptr<const CurveAllowlist> allowlist_;
  std::vector<std::string> domains_;
  DecisionHook hook_;
  Frames out_;
  Stats stats_;
};

}  // namespace zb

#endif  // ZBROKERS_SECURITY_ZAP_HANDLER_H_
