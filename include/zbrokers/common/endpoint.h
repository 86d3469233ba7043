// Copyright 2026 The zbrokers Authors.
//
// ZeroMQ endpoint checks that libzmq 4.3 does not make itself, shared by the
// brokers, the client and worker libraries and the zb-broker daemon.
//
//   if (absl::Status s = zb::CheckEndpoint(ep); !s.ok()) return s;
//   zb::SetIpv6For(socket, ep);   // before each bind() or connect()
//   socket.bind(ep);
//   ...
//   socket.close();
//   zb::RemoveIpcSocketFile(resolved_ep);   // ipc:// files libzmq leaves
//
// - libzmq reads a tcp port without a range check: "tcp://127.0.0.1:99999"
//   binds port 34463 (99999 mod 65536) and ":-1" binds 65535, silently.
//   CheckEndpoint() refuses a tcp port that is not "*" or 0 to 65535 (for a
//   bind, "*" and 0 both mean a free port chosen by the system).
// - libzmq resolves IPv6 addresses only on a socket with ZMQ_IPV6 set;
//   without it "tcp://[::1]:5555" fails with ENODEV ("No such device").
//   SetIpv6For() sets ZMQ_IPV6 to whether the endpoint's host is an IPv6
//   literal ("[::1]", "[::]", "[fe80::1%eth0]", or unbracketed "::1"), so
//   that an IPv4 or wildcard endpoint keeps binding IPv4 only even when the
//   same socket also binds an IPv6 one.  ("tcp://[::]:PORT" listens on every
//   IPv6 address and, on a dual-stack host, IPv4 too.)
//
// Thread-safety: pure functions; SetIpv6For() touches only its socket.

#ifndef ZBROKERS_COMMON_ENDPOINT_H_
#define ZBROKERS_COMMON_ENDPOINT_H_

#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zb {

// OK, or InvalidArgument with a message naming the endpoint and what is
// wrong with it, e.g. `tcp port 99999 in "tcp://127.0.0.1:99999" is out of
// range (0 to 65535, or * for any)`.  Only tcp:// endpoints have ports; a
// connect endpoint with a source ("tcp://SRC:PORT;DST:PORT") has both
// checked.  Other transports pass (libzmq checks them when they are used).
absl::Status CheckEndpoint(std::string_view endpoint);

// The brokers named by an endpoint argument of a client or worker: one
// endpoint ("tcp://a:5555") or a comma-separated list of them
// ("tcp://a:5555,tcp://b:5555"), in the order given.  Spaces around each
// item are ignored.  Clients and workers of both protocols, the C binding,
// the Python package and the zb CLI all take a list this way (docs/ha.md
// says what each does with more than one).  InvalidArgument for an empty
// list, an empty item ("a,,b", a trailing comma), the same endpoint twice,
// more than kMaxEndpoints items, or an item CheckEndpoint() refuses.
inline constexpr std::size_t kMaxEndpoints = 64;
absl::StatusOr<std::vector<std::string>> SplitEndpointList(
    std::string_view list);

// What a client does with more than one broker in its endpoint list
// (Options::endpoint_policy of the consensus and Majordomo clients; TOML
// key endpoint_policy, flag --endpoint-policy, Python endpoint_policy=).
// With a single endpoint both policies behave the same.
enum class EndpointPolicy {
  // One broker at a time, the first one first.  When the client's usual
  // timeout/retry/reopen logic gives up on the current broker it reopens to
  // the next one in the list (cyclically), counts a failover, and re-sends
  // what is outstanding by its usual rules (the zguide's lazy pirate /
  // Binary Star client).  The default.
  kFailover,
  // Requests spread across every broker of the list that is connected
  // (round-robin), a dead broker skipped.
  kSpread,
};

// "failover" or "spread": the one spelling of each policy in config, flags,
// Python and logs.
constexpr std::string_view EndpointPolicyName(EndpointPolicy policy) {
  switch (policy) {
    case EndpointPolicy::kFailover:
      return "failover";
    case EndpointPolicy::kSpread:
      return "spread";
  }
  return "?";
}

// The policy named `name` ("failover" or "spread", exactly), or
// InvalidArgument naming the word and the two accepted.
absl::StatusOr<EndpointPolicy> ParseEndpointPolicy(std::string_view name);

// True for a tcp:// endpoint whose host (or source host) is an IPv6 literal.
bool NeedsIpv6(std::string_view endpoint);

// Sets ZMQ_IPV6 on `socket` to NeedsIpv6(endpoint).  Throws zmq::error_t
// like zmq::socket_t::set().
void SetIpv6For(zmq::socket_t& socket, std::string_view endpoint);

// libzmq 4.3 leaves the socket file of a bound ipc:// endpoint behind when
// the socket closes.  A broker calls this for each endpoint it bound (as
// ZMQ_LAST_ENDPOINT resolved it), after closing its socket, to remove the
// file.  Anything else (tcp://, abstract "ipc://@name") is left alone.
void RemoveIpcSocketFile(std::string_view bound_endpoint);

}  // namespace zb

#endif  // ZBROKERS_COMMON_ENDPOINT_H_
