// Copyright 2026 The zbrokers Authors.

#include "brokers/common/router.h"

#include "absl/strings/str_format.h"
#include "zbrokers/common/endpoint.h"

namespace zb {

absl::StatusOr<std::string> BindRouter(zmq::socket_t& router,
                                       const std::string& endpoint,
                                       const ListenerSecurity& security) {
  if (absl::Status s = CheckEndpoint(endpoint); !s.ok()) return s;
  ListenerSecurityScope scope(router, security);
  if (!scope.status().ok()) return scope.status();
  try {
    SetIpv6For(router, endpoint);
    router.bind(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot bind %s: %s", endpoint, e.what()));
  }
  return router.get(zmq::sockopt::last_endpoint);
}

}  // namespace zb
