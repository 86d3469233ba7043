// Copyright 2026 The zbrokers Authors.
//
// CURVE keys (ZeroMQ RFC 26, libzmq's own implementation over libsodium) for
// zbrokers' sockets: the key types, Z85 text, key files, and the few
// socket options that turn CURVE on for a client or a listener.
// docs/security.md is the user's guide.
//
//   // A client or worker: the broker's public key and our own key pair.
//   absl::StatusOr<zb::CurveClientKeys> keys = zb::LoadCurveClientKeys(
//       "broker.pub", "alice.secret");
//   zb::ConsensusClient::Options options;
//   options.curve = *keys;                 // every library takes this member
//
//   // A listener (what the brokers' Bind(endpoint, security) does):
//   zb::ListenerSecurity security{.curve_secret_key = server_secret,
//                                 .zap_domain = "majordomo"};
//   zb::ListenerSecurityScope scope(router, security);
//   if (!scope.status().ok()) return scope.status();
//   router.bind(endpoint);                  // this listener only is CURVE
//
// Key files.  A key file is text: lines whose first word is exactly 40 Z85
// characters hold a key (anything after the key and a blank is a label);
// other lines starting with '#' are comments; blank lines are ignored;
// anything else is an error naming the file and the line.  (Z85's alphabet
// contains '#', but never as the first character of a 32-byte key, so a
// comment line cannot be taken for a key.)  A public key file ("NAME.pub")
// holds one key; a secret key file ("NAME.secret", mode 0600) holds one
// secret key.  An allowlist file holds any number of public keys
// (zap_handler.h).
//
// Secrets.  Nothing here prints a secret key: CurveKey has no formatting
// operator, and error messages name files and line numbers, never the key
// text.  Keep it that way in callers (log Z85(public) only).
//
// Thread-safety: plain values and pure functions, except the socket
// functions, which follow the socket's own threading rules.

#ifndef ZBROKERS_SECURITY_CURVE_H_
#define ZBROKERS_SECURITY_CURVE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zb {

// A 32-byte CURVE key (public or secret), in binary.
using CurveKey = std::array<std::uint8_t, 32>;

// Length of a key in Z85 text.
inline constexpr std::size_t kZ85KeySize = 40;

// True when this libzmq was built with CURVE (zmq_has("curve")).
bool CurveAvailable();

// Z85 text of a key (40 characters).
std::string Z85(const CurveKey& key);
// Parses 40 Z85 characters; InvalidArgument otherwise (the message does not
// repeat the text, which may be a secret).
absl::StatusOr<CurveKey> ParseZ85Key(std::string_view text);
// True when `text` is exactly 40 Z85 characters.
bool IsZ85Key(std::string_view text);

struct CurveKeyPair {
  CurveKey public_key;
  CurveKey secret_key;
};

// A new random key pair (zmq_curve_keypair).  FailedPrecondition when CURVE
// is not available.
absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair();
// The public key that belongs to `secret` (zmq_curve_public).
absl::StatusOr<CurveKey> CurvePublicKey(const CurveKey& secret);

// What a client or worker socket needs for CURVE: the server's public key
// and its own key pair.  Every client and worker library takes one as
// `Options::curve` (std::nullopt = plaintext); the C ABI and the Python
// package take the same three keys.
struct CurveClientKeys {
  CurveKey server_public_key;
  CurveKey public_key;
  CurveKey secret_key;
};

// Builds client keys from the server's public key and our secret key (our
// public key is derived from it).
absl::StatusOr<CurveClientKeys> MakeCurveClientKeys(
    const CurveKey& server_public_key, const CurveKey& secret_key);
// The same from Z85 text (each exactly 40 characters).
absl::StatusOr<CurveClientKeys> MakeCurveClientKeys(
    std::string_view server_public_key_z85, std::string_view secret_key_z85);

// Makes `socket` (not yet connected) a CURVE client with `keys`.  Call it
// before connect(); connections made later use the keys.  Fails when CURVE
// is not available.
absl::Status ApplyCurveClient(zmq::socket_t& socket,
                              const CurveClientKeys& keys);

// --- Key files ---------------------------------------------------------------

// One key read from a file, with the label written after it (may be empty)
// and where it was ("path:line").
struct CurveKeyEntry {
  CurveKey key;
  std::string label;
  std::string where;
};

// Parses key-file text (see the file comment).  `source` names the text in
// errors ("path:line: ...").
absl::StatusOr<std::vector<CurveKeyEntry>> ParseCurveKeyText(
    std::string_view text, std::string_view source);

// Reads a file holding exactly one key.  Errors name the file (and line).
absl::StatusOr<CurveKey> ReadCurveKeyFile(const std::string& path);

// Reads a secret key file.  When `warning` is given it receives a sentence
// when the file can be read by group or others (mode & 077), else "".
absl::StatusOr<CurveKey> ReadCurveSecretKeyFile(const std::string& path,
                                                std::string* warning = nullptr);

// Reads client keys: the server's public key file and our secret key file.
absl::StatusOr<CurveClientKeys> LoadCurveClientKeys(
    const std::string& server_public_key_file,
    const std::string& secret_key_file);

// Writes a new key pair as PREFIX.pub (mode 0644) and PREFIX.secret (mode
// 0600, created so; never world-readable, even for a moment).  Refuses to
// overwrite either file unless `overwrite`.  Returns the public key.
struct WrittenKeyPair {
  CurveKey public_key;
  std::string public_key_file;
  std::string secret_key_file;
};
absl::StatusOr<WrittenKeyPair> WriteCurveKeyPairFiles(const std::string& prefix,
                                                      bool overwrite = false);

// --- Listeners
// -----------------------------------------------------------------

// Security of one listener (one bind).  libzmq copies a socket's security
// options into each listener when it is bound, so a ROUTER socket can listen
// in plaintext on one endpoint and with CURVE on another.
struct ListenerSecurity {
  // Unset: plaintext (ZMTP NULL mechanism, no ZAP).  Set: a CURVE server with
  // this secret key; every handshake is authenticated by the ZAP handler of
  // the socket's context (zap_handler.h), under `zap_domain`, and fails when
  // no handler is bound (ZMQ_ZAP_ENFORCE_DOMAIN, where libzmq has it).
  std::optional<CurveKey> curve_secret_key;
  // The ZAP domain (ZeroMQ RFC 27) sent with each handshake; zbrokers uses
  // the broker's name ("majordomo", "consensus").  Must not be empty when
  // curve_secret_key is set.
  std::string zap_domain;

  bool curve() const { return curve_secret_key.has_value(); }
};

// Sets `security` on `socket` for the next bind() and restores the NULL
// mechanism when destroyed, so that later binds are plaintext.  libzmq 4.3
// cannot clear a socket's ZAP domain once set, so a plaintext listener bound
// after a CURVE listener on the same socket still asks the ZAP handler
// (with mechanism "NULL", which ZapHandler lets in); bind plaintext
// endpoints first to spare them that round trip.  Use on the socket's own
// thread.
class ListenerSecurityScope {
 public:
  ListenerSecurityScope(zmq::socket_t& socket,
                        const ListenerSecurity& security);
  ~ListenerSecurityScope();

  ListenerSecurityScope(const ListenerSecurityScope&) = delete;
  ListenerSecurityScope& operator=(const ListenerSecurityScope&) = delete;

  // OK, or why the options could not be set (then do not bind).
  const absl::Status& status() const { return status_; }

 private:
  zmq::socket_t& socket_;
  bool curve_ = false;
  absl::Status status_;
};

// OK when CURVE can protect `endpoint`: tcp:// and ipc:// run the ZMTP
// handshake; inproc:// connections skip it (libzmq 4.3 connects inproc
// pipes directly), so a CURVE listener there would let plaintext peers in.
absl::Status CheckCurveEndpoint(std::string_view endpoint);

// The libzmq option that makes a missing ZAP handler fail the handshake
// (ZMQ_ZAP_ENFORCE_DOMAIN; a draft option in libzmq 4.3 that Debian's
// libzmq accepts).  ListenerSecurityScope sets it when libzmq takes it.
inline constexpr int kZmqZapEnforceDomain = 93;

}  // namespace zb

#endif  // ZBROKERS_SECURITY_CURVE_H_
