// Copyright 2026 The zbrokers Authors.

#include "zbrokers/security/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"

namespace zb {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<"
    ">()[]{}@%$#";

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

absl::Status ErrnoError(std::string_view what, const std::string& path,
                        int err) {
  return absl::InvalidArgumentError(
      absl::StrFormat("cannot %s \"%s\": %s", what, path, std::strerror(err)));
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  // Key files are tiny; an allowlist of 100,000 keys is ~5 MB.  A bound
  // keeps a wrong path (a device, a huge log) from eating memory.
  constexpr std::size_t kMaxBytes = 64u << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("read", path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoError("read", path, errno);
  std::string s = std::move(text).str();
  if (s.size() > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "\"%s\" is larger than %d bytes: not a key file", path, kMaxBytes));
  }
  return s;
}

absl::Status SetOption(zmq::socket_t& socket, int option, const void* value,
                       std::size_t size, std::string_view name) {
  if (zmq_setsockopt(socket.handle(), option, value, size) != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot set %s: %s%s", name, zmq_strerror(zmq_errno()),
                        CurveAvailable() ? "" : " (libzmq has no CURVE)"));
  }
  return absl::OkStatus();
}

absl::Status SetInt(zmq::socket_t& socket, int option, int value,
                    std::string_view name) {
  return SetOption(socket, option, &value, sizeof(value), name);
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

bool IsZ85Key(std::string_view text) {
  if (text.size() != kZ85KeySize) return false;
  for (char c : text) {
    if (kZ85Alphabet.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::string Z85(const CurveKey& key) {
  char text[kZ85KeySize + 1];
  zmq_z85_encode(text, key.data(), key.size());
  return std::string(text, kZ85KeySize);
}

absl::StatusOr<CurveKey> ParseZ85Key(std::string_view text) {
  if (!IsZ85Key(text)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "expected a CURVE key of 40 Z85 characters, got %d character(s)%s",
        text.size(),
        text.size() == kZ85KeySize ? " with some outside the Z85 alphabet"
                                   : ""));
  }
  const std::string z(text);  // zmq_z85_decode wants a NUL-terminated string
  CurveKey key;
  if (zmq_z85_decode(key.data(), z.c_str()) == nullptr) {
    return absl::InvalidArgumentError("not a valid Z85 key");
  }
  return key;
}

absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  if (!CurveAvailable()) {
    return absl::FailedPreconditionError(
        "this libzmq has no CURVE support (zmq_has(\"curve\") is false)");
  }
  char pub[kZ85KeySize + 1];
  char sec[kZ85KeySize + 1];
  if (zmq_curve_keypair(pub, sec) != 0) {
    return absl::InternalError(
        absl::StrFormat("zmq_curve_keypair: %s", zmq_strerror(zmq_errno())));
  }
  CurveKeyPair pair;
  zmq_z85_decode(pair.public_key.data(), pub);
  zmq_z85_decode(pair.secret_key.data(), sec);
  std::memset(sec, 0, sizeof(sec));
  return pair;
}

absl::StatusOr<CurveKey> CurvePublicKey(const CurveKey& secret) {
  if (!CurveAvailable()) {
    return absl::FailedPreconditionError(
        "this libzmq has no CURVE support (zmq_has(\"curve\") is false)");
  }
  char sec[kZ85KeySize + 1];
  char pub[kZ85KeySize + 1];
  zmq_z85_encode(sec, secret.data(), secret.size());
  const int rc = zmq_curve_public(pub, sec);
  std::memset(sec, 0, sizeof(sec));
  if (rc != 0) {
    return absl::InternalError(
        absl::StrFormat("zmq_curve_public: %s", zmq_strerror(zmq_errno())));
  }
  CurveKey key;
  zmq_z85_decode(key.data(), pub);
  return key;
}

absl::StatusOr<CurveClientKeys> MakeCurveClientKeys(
    const CurveKey& server_public_key, const CurveKey& secret_key) {
  absl::StatusOr<CurveKey> public_key = CurvePublicKey(secret_key);
  if (!public_key.ok()) return public_key.status();
  return CurveClientKeys{server_public_key, *public_key, secret_key};
}

absl::StatusOr<CurveClientKeys> MakeCurveClientKeys(
    std::string_view server_public_key_z85, std::string_view secret_key_z85) {
  absl::StatusOr<CurveKey> server = ParseZ85Key(server_public_key_z85);
  if (!server.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("server public key: %s", server.status().message()));
  }
  absl::StatusOr<CurveKey> secret = ParseZ85Key(secret_key_z85);
  if (!secret.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("secret key: %s", secret.status().message()));
  }
  return MakeCurveClientKeys(*server, *secret);
}

absl::Status ApplyCurveClient(zmq::socket_t& socket,
                              const CurveClientKeys& keys) {
  if (absl::Status s =
          SetOption(socket, ZMQ_CURVE_SERVERKEY, keys.server_public_key.data(),
                    keys.server_public_key.size(), "ZMQ_CURVE_SERVERKEY");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          SetOption(socket, ZMQ_CURVE_PUBLICKEY, keys.public_key.data(),
                    keys.public_key.size(), "ZMQ_CURVE_PUBLICKEY");
      !s.ok()) {
    return s;
  }
  return SetOption(socket, ZMQ_CURVE_SECRETKEY, keys.secret_key.data(),
                   keys.secret_key.size(), "ZMQ_CURVE_SECRETKEY");
}

// --- Key files -------------------------------------------------------------

absl::StatusOr<std::vector<CurveKeyEntry>> ParseCurveKeyText(
    std::string_view text, std::string_view source) {
  std::vector<CurveKeyEntry> entries;
  int line_number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_number;
    if (line.empty()) continue;
    std::size_t end = 0;
    while (end < line.size() && !IsBlank(line[end])) ++end;
    const std::string_view word = line.substr(0, end);
    if (IsZ85Key(word)) {
      absl::StatusOr<CurveKey> key = ParseZ85Key(word);
      if (!key.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d: %s", source, line_number, key.status().message()));
      }
      std::string_view label = Trim(line.substr(end));
      if (!label.empty() && label.front() == '#') {
        label = Trim(label.substr(1));
      }
      entries.push_back({*key, std::string(label),
                         absl::StrFormat("%s:%d", source, line_number)});
      continue;
    }
    if (line.front() == '#') continue;  // a comment
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: expected a CURVE key of 40 Z85 characters or a '#' comment, "
        "got a line starting with a word of %d character(s)",
        source, line_number, word.size()));
  }
  return entries;
}

absl::StatusOr<CurveKey> ReadCurveKeyFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<CurveKeyEntry>> entries =
      ParseCurveKeyText(*text, path);
  if (!entries.ok()) return entries.status();
  if (entries->size() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected exactly one key, found %d", path, entries->size()));
  }
  return entries->front().key;
}

absl::StatusOr<CurveKey> ReadCurveSecretKeyFile(const std::string& path,
                                                std::string* warning) {
  if (warning != nullptr) warning->clear();
  absl::StatusOr<CurveKey> key = ReadCurveKeyFile(path);
  if (!key.ok()) return key.status();
  struct stat st;
  if (warning != nullptr && stat(path.c_str(), &st) == 0 &&
      (st.st_mode & 077) != 0) {
    *warning = absl::StrFormat(
        "secret key file \"%s\" can be read by others (mode %04o); "
        "chmod 600 it",
        path, st.st_mode & 07777);
  }
  return key;
}

absl::StatusOr<CurveClientKeys> LoadCurveClientKeys(
    const std::string& server_public_key_file,
    const std::string& secret_key_file) {
  absl::StatusOr<CurveKey> server = ReadCurveKeyFile(server_public_key_file);
  if (!server.ok()) return server.status();
  absl::StatusOr<CurveKey> secret = ReadCurveSecretKeyFile(secret_key_file);
  if (!secret.ok()) return secret.status();
  return MakeCurveClientKeys(*server, *secret);
}

absl::StatusOr<WrittenKeyPair> WriteCurveKeyPairFiles(const std::string& prefix,
                                                      bool overwrite) {
  absl::StatusOr<CurveKeyPair> pair = GenerateCurveKeyPair();
  if (!pair.ok()) return pair.status();
  WrittenKeyPair out{pair->public_key, prefix + ".pub", prefix + ".secret"};

  auto write = [overwrite](const std::string& path, mode_t mode,
                           const std::string& text) -> absl::Status {
    const int flags =
        O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);
    const int fd = open(path.c_str(), flags, mode);
    if (fd < 0) return ErrnoError("create", path, errno);
    // An existing file keeps its mode under O_TRUNC: force ours.
    if (fchmod(fd, mode) != 0) {
      const int err = errno;
      close(fd);
      return ErrnoError("chmod", path, err);
    }
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        close(fd);
        return ErrnoError("write", path, err);
      }
      done += static_cast<std::size_t>(n);
    }
    if (close(fd) != 0) return ErrnoError("close", path, errno);
    return absl::OkStatus();
  };

  const std::string public_z85 = Z85(pair->public_key);
  std::string secret_text = absl::StrFormat(
      "# zbrokers CURVE secret key (Z85).  Keep it private: mode 0600, never\n"
      "# copy it off this host.  Its public key is %s\n%s\n",
      public_z85, Z85(pair->secret_key));
  const std::string public_text = absl::StrFormat(
      "# zbrokers CURVE public key (Z85).  Give it to the peers that must\n"
      "# trust this key (a broker's allowlist, or clients as the server key).\n"
      "%s\n",
      public_z85);
  // The secret first: a failure leaves no public key without its secret.
  absl::Status s = write(out.secret_key_file, 0600, secret_text);
  std::fill(secret_text.begin(), secret_text.end(), '\0');
  if (!s.ok()) return s;
  if (s = write(out.public_key_file, 0644, public_text); !s.ok()) return s;
  return out;
}

// --- Listeners -------------------------------------------------------------

absl::Status CheckCurveEndpoint(std::string_view endpoint) {
  if (endpoint.starts_with("tcp://") || endpoint.starts_with("ipc://")) {
    return absl::OkStatus();
  }
  if (endpoint.starts_with("inproc://")) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "\"%s\": inproc:// connections skip the ZMTP handshake, so CURVE "
        "cannot protect them",
        endpoint));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "\"%s\": CURVE endpoints must be tcp:// or ipc://", endpoint));
}

ListenerSecurityScope::ListenerSecurityScope(zmq::socket_t& socket,
                                             const ListenerSecurity& security)
    : socket_(socket), curve_(security.curve()) {
  if (!curve_) return;
  if (security.zap_domain.empty()) {
    status_ = absl::InvalidArgumentError(
        "a CURVE listener needs a ZAP domain (the broker's name)");
    return;
  }
  if (!CurveAvailable()) {
    status_ = absl::FailedPreconditionError(
        "this libzmq has no CURVE support (zmq_has(\"curve\") is false)");
    return;
  }
  status_ = SetInt(socket_, ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER");
  if (status_.ok()) {
    status_ = SetOption(
        socket_, ZMQ_CURVE_SECRETKEY, security.curve_secret_key->data(),
        security.curve_secret_key->size(), "ZMQ_CURVE_SECRETKEY");
  }
  if (status_.ok()) {
    status_ = SetOption(socket_, ZMQ_ZAP_DOMAIN, security.zap_domain.data(),
                        security.zap_domain.size(), "ZMQ_ZAP_DOMAIN");
  }
  if (status_.ok()) {
    // Without it, a CURVE handshake that finds no ZAP handler in the
    // context is let through unauthenticated.  Older libzmq builds may not
    // know the option; the daemon then relies on binding its handler first.
    const int on = 1;
    zmq_setsockopt(socket_.handle(), kZmqZapEnforceDomain, &on, sizeof(on));
  }
}

ListenerSecurityScope::~ListenerSecurityScope() {
  if (!curve_) return;
  // ZMQ_CURVE_SERVER = 0 switches the socket back to the NULL mechanism.
  // The ZAP domain stays (libzmq 4.3 refuses to set an empty one): later
  // plaintext listeners ask ZAP with mechanism NULL, and with enforcement
  // off they also pass when no handler is bound.
  const int off = 0;
  zmq_setsockopt(socket_.handle(), ZMQ_CURVE_SERVER, &off, sizeof(off));
  zmq_setsockopt(socket_.handle(), kZmqZapEnforceDomain, &off, sizeof(off));
}

}  // namespace zb
