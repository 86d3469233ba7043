// Copyright 2026 The zbrokers Authors.
//
// The client options of zb.h: zb_client_options_init,
// zb_endpoint_policy_parse / _name, and their reading for the client
// constructors (ClientOptionsFromC, for zb_consensus.cc and
// zb_majordomo.cc).

#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "bindings/c/zb.h"
#include "bindings/c/zb_internal.h"
#include "zbrokers/common/endpoint.h"

namespace zb::capi {

int ClientOptionsFromC(absl::string_view where,
                       const zb_client_options_t* options,
                       zb::EndpointPolicy& policy,
                       std::optional<zb::CurveClientKeys>& curve) {
  if (options == nullptr) return ZB_OK;  // the defaults
  constexpr size_t kKnown = sizeof(zb_client_options_t);
  if (options->size < kKnown) {
    return Fail(ZB_ERR_INVALID,
                absl::StrFormat("%s: options.size is %u, expected %u "
                                "(call zb_client_options_init first)",
                                where, options->size, kKnown));
  }
  // A caller built against a later zb.h may pass a bigger struct; what this
  // library does not know must be left at 0 (unset).
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(options);
  for (size_t i = kKnown; i < options->size; ++i) {
    if (bytes[i] != 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrFormat("%s: options of %u bytes set fields this "
                                  "library (%u bytes) does not know",
                                  where, options->size, kKnown));
    }
  }
  switch (options->endpoint_policy) {
    case ZB_ENDPOINT_FAILOVER:
      policy = zb::EndpointPolicy::kFailover;
      break;
    case ZB_ENDPOINT_SPREAD:
      policy = zb::EndpointPolicy::kSpread;
      break;
    default:
      return Fail(ZB_ERR_INVALID,
                  absl::StrFormat("%s: unknown endpoint_policy %d (expected "
                                  "ZB_ENDPOINT_FAILOVER or ZB_ENDPOINT_SPREAD)",
                                  where, options->endpoint_policy));
  }
  return CurveFromC(where, options->curve, curve);
}

extern "C" int zb_client_options_init(zb_client_options_t* options) {
  return Guard("zb_client_options_init", [&]() -> int {
    if (options == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_client_options_init: options is NULL");
    }
    std::memset(options, 0, sizeof *options);
    options->size = sizeof *options;
    options->endpoint_policy = ZB_ENDPOINT_FAILOVER;
    options->curve = nullptr;
    return ZB_OK;
  });
}

extern "C" int zb_endpoint_policy_parse(const char* name, int* policy) {
  constexpr absl::string_view kWhere = "zb_endpoint_policy_parse";
  return Guard(kWhere, [&]() -> int {
    if (name == nullptr || policy == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": name and policy are required"));
    }
    absl::StatusOr<zb::EndpointPolicy> parsed = zb::ParseEndpointPolicy(name);
    if (!parsed.ok()) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": ", parsed.status().message()));
    }
    *policy = *parsed == zb::EndpointPolicy::kSpread ? ZB_ENDPOINT_SPREAD
                                                     : ZB_ENDPOINT_FAILOVER;
    return ZB_OK;
  });
}

extern "C" const char* zb_endpoint_policy_name(int policy) {
  // EndpointPolicyName's views point at string literals: NUL-terminated.
  switch (policy) {
    case ZB_ENDPOINT_FAILOVER:
      return zb::EndpointPolicyName(zb::EndpointPolicy::kFailover).data();
    case ZB_ENDPOINT_SPREAD:
      return zb::EndpointPolicyName(zb::EndpointPolicy::kSpread).data();
  }
  return nullptr;
}

}  // namespace zb::capi
