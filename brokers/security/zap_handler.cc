// Copyright 2026 The zbrokers Authors.

#include "zbrokers/security/zap_handler.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"

namespace zb {
namespace {

constexpr std::string_view kPubSuffix = ".pub";

absl::StatusOr<std::string> ReadText(const std::string& path) {
  constexpr std::size_t kMaxBytes = 64u << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read \"%s\": %s", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read \"%s\": %s", path, std::strerror(errno)));
  }
  std::string s = std::move(text).str();
  if (s.size() > kMaxBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "\"%s\" is larger than %d bytes: not an allowlist", path, kMaxBytes));
  }
  return s;
}

}  // namespace

// --- CurveAllowlist ----------------------------------------------------------

std::size_t CurveAllowlist::KeyHash::operator()(const CurveKey& k) const {
  return absl::HashOf(
      std::string_view(reinterpret_cast<const char*>(k.data()), k.size()));
}

void CurveAllowlist::Add(const CurveKeyEntry& entry,
                         std::string_view default_label) {
  std::string label =
      entry.label.empty() ? std::string(default_label) : entry.label;
  // A key listed twice keeps its first label.
  keys_.try_emplace(entry.key, std::move(label));
}

absl::StatusOr<CurveAllowlist> CurveAllowlist::Parse(std::string_view text,
                                                     std::string_view source) {
  absl::StatusOr<std::vector<CurveKeyEntry>> entries =
      ParseCurveKeyText(text, source);
  if (!entries.ok()) return entries.status();
  CurveAllowlist list;
  for (const CurveKeyEntry& e : *entries) list.Add(e, "");
  return list;
}

absl::StatusOr<CurveAllowlist> CurveAllowlist::Load(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read \"%s\": %s", path, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return text.status();
    return Parse(*text, path);
  }
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot read directory \"%s\": %s", path, std::strerror(errno)));
  }
  std::vector<std::string> names;
  std::size_t ignored = 0;
  while (dirent* e = readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name.size() <= kPubSuffix.size() || !name.ends_with(kPubSuffix) ||
        name.front() == '.') {
      ++ignored;
      continue;
    }
    names.emplace_back(name);
  }
  closedir(dir);
  // Sorted, so that a key listed in two files always gets the same label.
  std::sort(names.begin(), names.end());
  CurveAllowlist list;
  for (const std::string& name : names) {
    const std::string file = path + "/" + name;
    struct stat fst;
    if (stat(file.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) {
      ++ignored;
      continue;
    }
    absl::StatusOr<std::string> text = ReadText(file);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<CurveKeyEntry>> entries =
        ParseCurveKeyText(*text, file);
    if (!entries.ok()) return entries.status();
    const std::string_view stem =
        std::string_view(name).substr(0, name.size() - kPubSuffix.size());
    for (const CurveKeyEntry& entry : *entries) list.Add(entry, stem);
  }
  list.ignored_files_ = ignored;
  return list;
}

std::optional<std::string_view> CurveAllowlist::Find(
    const CurveKey& key) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::vector<CurveKey> CurveAllowlist::keys() const {
  std::vector<CurveKey> out;
  out.reserve(keys_.size());
  for (const auto& [key, label] : keys_) out.push_back(key);
  return out;
}

// --- ZapHandler
// ----------------------------------------------------------------

ZapHandler::ZapHandler(zmq::context_t& context)
    : socket_(context, zmq::socket_type::router) {
  socket_.set(zmq::sockopt::linger, 0);
  out_.reserve(8);
}

ZapHandler::~ZapHandler() = default;

absl::StatusOr<std::unique_ptr<ZapHandler>> ZapHandler::Create(
    Reactor& reactor, zmq::context_t& context) {
  std::unique_ptr<ZapHandler> zap(new ZapHandler(context));
  try {
    zap->socket_.bind(std::string(kEndpoint));
  } catch (const zmq::error_t& e) {
    if (e.num() == EADDRINUSE) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "another ZAP handler is bound to %s in this context", kEndpoint));
    }
    return absl::InternalError(
        absl::StrFormat("bind %s: %s", kEndpoint, e.what()));
  }
  ZapHandler* z = zap.get();
  absl::StatusOr<Reactor::SocketWatch> watch = reactor.Add(
      z->socket_, [z](std::span<zmq::message_t> f) { z->OnRequest(f); });
  if (!watch.ok()) return watch.status();
  z->watch_ = *std::move(watch);
  return zap;
}

void ZapHandler::set_allowlist(
    std::shared_ptr<const CurveAllowlist> allowlist) {
  allowlist_ = std::move(allowlist);
}

void ZapHandler::set_domains(std::vector<std::string> domains) {
  domains_ = std::move(domains);
}

void ZapHandler::Reply(zmq::message_t& routing_id, std::string_view request_id,
                       std::string_view code, std::string_view text,
                       std::string_view user_id) {
  // [routing id] [""] ["1.0"] [request id] [status code] [status text]
  // [user id] [metadata]
  out_.clear();
  out_.push_back(std::move(routing_id));
  out_.emplace_back();
  out_.push_back(Frame("1.0"));
  out_.push_back(Frame(request_id));
  out_.push_back(Frame(code));
  out_.push_back(Frame(text));
  out_.push_back(Frame(user_id));
  out_.emplace_back();
  // The requester is libzmq itself, waiting on an inproc pipe; a failure
  // here means that session is gone, and there is no one left to tell.
  SendFrames(socket_, out_).IgnoreError();
}

void ZapHandler::OnRequest(std::span<zmq::message_t> frames) {
  ++stats_.requests;
  // [routing id] [""] [version] [request id] [domain] [address] [identity]
  // [mechanism] [credentials...]
  if (frames.size() < 4 || frames[1].size() != 0) {
    ++stats_.malformed;  // not even a request id to answer with
    return;
  }
  const std::string_view request_id = View(frames[3]);
  if (frames.size() < 8 || View(frames[2]) != "1.0") {
    ++stats_.malformed;
    Reply(frames[0], request_id, "500", "malformed ZAP request", "");
    return;
  }
  Decision d;
  d.domain = View(frames[4]);
  d.address = View(frames[5]);
  d.mechanism = View(frames[7]);
  const std::span<zmq::message_t> credentials = frames.subspan(8);

  std::string_view code = "400";
  std::string_view text = "not allowed";
  std::string user_id;
  const bool domain_ok =
      domains_.empty() ||
      std::find(domains_.begin(), domains_.end(), d.domain) != domains_.end();
  if (d.mechanism == "NULL" && domain_ok) {
    code = "200";  // a plaintext listener (see zap_handler.h)
    text = "OK";
    d.allowed = true;
  } else if (d.mechanism != "CURVE") {
    text = "mechanism not allowed";
  } else if (credentials.size() != 1 ||
             credentials[0].size() != CurveKey().size()) {
    ++stats_.malformed;
    Reply(frames[0], request_id, "500", "malformed CURVE credentials", "");
    return;
  } else {
    CurveKey key;
    std::memcpy(key.data(), credentials[0].data(), key.size());
    d.key = Z85(key);
    std::optional<std::string_view> label;
    if (allowlist_ != nullptr) label = allowlist_->Find(key);
    if (!domain_ok) {
      text = "unknown ZAP domain";
    } else if (!label.has_value()) {
      text = "client key not allowed";
    } else {
      code = "200";
      text = "OK";
      d.allowed = true;
      d.label = *label;
      user_id = label->empty() ? d.key : std::string(*label);
    }
  }
  if (d.allowed) {
    ++stats_.allowed;
  } else {
    ++stats_.denied;
  }
  d.status_code = code;
  d.status_text = text;
  // The hook runs before the reply is sent, while the request's frames (which
  // d's views point into) are still intact.
  if (hook_) hook_(d);
  Reply(frames[0], request_id, code, text, user_id);
}

}  // namespace zb
