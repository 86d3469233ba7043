// Copyright 2026 The zbrokers Authors.
//
// BindRouter: the one way both brokers bind their ROUTER socket to a listen
// endpoint.  Internal to the zbrokers libraries (not installed).
//
//   absl::StatusOr<std::string> bound =
//       zb::BindRouter(router_, endpoint, security);
//   if (!bound.ok()) return bound.status();
//   endpoints_.push_back(*std::move(bound));  // for RemoveIpcSocketFile()
//
// In order: CheckEndpoint() (libzmq would bind an out-of-range tcp port
// modulo 65536), the listener's security for this bind only
// (ListenerSecurityScope: CURVE and its ZAP domain, or plaintext),
// SetIpv6For() (libzmq resolves IPv6 literals only with ZMQ_IPV6 set), then
// bind().
//
// Thread-safety: touches only `router`; call it on the socket's thread.

#ifndef ZBROKERS_BROKERS_COMMON_ROUTER_H_
#define ZBROKERS_BROKERS_COMMON_ROUTER_H_

#include <string>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "zbrokers/security/curve.h"

namespace zb {

// Binds `router` to `endpoint` with `security` and returns the endpoint as
// libzmq resolved it (ZMQ_LAST_ENDPOINT: the port chosen for "*", the path
// of an ipc:// endpoint).  Errors: CheckEndpoint()'s InvalidArgument; the
// error ListenerSecurityScope reports when the CURVE options cannot be set;
// InvalidArgument "cannot bind <endpoint>: <why>" when libzmq refuses the
// bind (address in use, unknown transport, ...).  On error nothing is bound
// and the socket's security is back to plaintext.
absl::StatusOr<std::string> BindRouter(zmq::socket_t& router,
                                       const std::string& endpoint,
                                       const ListenerSecurity& security);

}  // namespace zb

#endif  // ZBROKERS_BROKERS_COMMON_ROUTER_H_
