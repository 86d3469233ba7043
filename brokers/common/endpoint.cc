// Copyright 2026 The zbrokers Authors.

#include "zbrokers/common/endpoint.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

namespace zb {
namespace {

constexpr std::string_view kTcp = "tcp://";

// One "host:port" part of a tcp endpoint.
struct HostPort {
  std::string_view host;  // brackets kept
  std::string_view port;  // empty when there is none
  bool has_port = false;
};

HostPort Split(std::string_view part) {
  HostPort hp;
  const std::size_t colon = part.rfind(':');
  // "[::1]" alone (a source address without a port) has its last colon
  // inside the brackets.
  const std::size_t bracket = part.rfind(']');
  if (colon == std::string_view::npos ||
      (bracket != std::string_view::npos && colon < bracket)) {
    hp.host = part;
    return hp;
  }
  hp.host = part.substr(0, colon);
  hp.port = part.substr(colon + 1);
  hp.has_port = true;
  return hp;
}

bool IsIpv6Host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host.find(':') != std::string_view::npos;
}

absl::Status CheckPort(std::string_view endpoint, const HostPort& hp,
                       bool required) {
  if (!hp.has_port) {
    if (!required) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "\"%s\" has no tcp port (expected HOST:PORT, e.g. "
        "\"tcp://127.0.0.1:5555\", or PORT * for any free port)",
        endpoint));
  }
  if (hp.port == "*") return absl::OkStatus();
  bool digits = !hp.port.empty() && hp.port.size() <= 5;
  int value = 0;
  for (char c : hp.port) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    if (digits) value = value * 10 + (c - '0');
  }
  if (!digits || value > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tcp port \"%s\" in \"%s\" is out of range (0 to 65535, or * for any "
        "free port)",
        hp.port, endpoint));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckEndpoint(std::string_view endpoint) {
  if (!endpoint.starts_with(kTcp)) return absl::OkStatus();
  std::string_view address = endpoint.substr(kTcp.size());
  const std::size_t semi = address.find(';');
  if (semi != std::string_view::npos) {
    // "tcp://SOURCE;DESTINATION": a connect from a chosen source address,
    // whose port is optional.
    if (absl::Status s =
            CheckPort(endpoint, Split(address.substr(0, semi)), false);
        !s.ok()) {
      return s;
    }
    address = address.substr(semi + 1);
  }
  return CheckPort(endpoint, Split(address), true);
}

bool NeedsIpv6(std::string_view endpoint) {
  if (!endpoint.starts_with(kTcp)) return false;
  std::string_view address = endpoint.substr(kTcp.size());
  const std::size_t semi = address.find(';');
  if (semi != std::string_view::npos) {
    if (IsIpv6Host(Split(address.substr(0, semi)).host)) return true;
    address = address.substr(semi + 1);
  }
  return IsIpv6Host(Split(address).host);
}

void SetIpv6For(zmq::socket_t& socket, std::string_view endpoint) {
  socket.set(zmq::sockopt::ipv6, NeedsIpv6(endpoint));
}

void RemoveIpcSocketFile(std::string_view bound_endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (!bound_endpoint.starts_with(kIpc)) return;
  const std::string path(bound_endpoint.substr(kIpc.size()));
  if (path.empty() || path.front() == '@') return;  // abstract: no file
  ::unlink(path.c_str());
}

absl::StatusOr<std::vector<std::string>> SplitEndpointList(
    std::string_view list) {
  std::vector<std::string> endpoints;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    std::string_view item = list.substr(start, comma == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) {
      return absl::InvalidArgumentError(
          list.empty()
              ? std::string("no broker endpoint given")
              : absl::StrFormat("empty endpoint in list \"%s\"", list));
    }
    if (absl::Status s = CheckEndpoint(item); !s.ok()) return s;
    if (std::find(endpoints.begin(), endpoints.end(), item) !=
        endpoints.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "endpoint \"%s\" appears twice in \"%s\"", item, list));
    }
    if (endpoints.size() == kMaxEndpoints) {
      return absl::InvalidArgumentError(
          absl::StrFormat("more than %d endpoints in one list", kMaxEndpoints));
    }
    endpoints.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return endpoints;
}

absl::StatusOr<EndpointPolicy> ParseEndpointPolicy(std::string_view name) {
  for (EndpointPolicy policy :
       {EndpointPolicy::kFailover, EndpointPolicy::kSpread}) {
    if (name == EndpointPolicyName(policy)) return policy;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "endpoint_policy \"%s\" is not \"failover\" or \"spread\"", name));
}

}  // namespace zb
