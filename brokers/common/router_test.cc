// Copyright 2026 The zbrokers Authors.

#include "brokers/common/router.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <zmq.hpp>

namespace zb {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

zmq::socket_t NewRouter(zmq::context_t& ctx) {
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::linger, 0);
  return s;
}

TEST(BindRouterTest, ReturnsTheEndpointAsResolved) {
  zmq::context_t ctx;
  zmq::socket_t router = NewRouter(ctx);
  absl::StatusOr<std::string> bound =
      BindRouter(router, "tcp://127.0.0.1:*", {});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_THAT(*bound, StartsWith("tcp://127.0.0.1:"));
  EXPECT_NE(*bound, "tcp://127.0.0.1:*");  // the port libzmq chose
}

TEST(BindRouterTest, RefusesAnOutOfRangePortBeforeLibzmqWrapsIt) {
  zmq::context_t ctx;
  zmq::socket_t router = NewRouter(ctx);
  absl::StatusOr<std::string> bound =
      BindRouter(router, "tcp://127.0.0.1:99999", {});
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bound.status().message()), HasSubstr("out of range"));
  // Nothing was bound (libzmq would have taken port 34463).
  EXPECT_EQ(router.get(zmq::sockopt::last_endpoint), "");
}

TEST(BindRouterTest, AnAddressInUseNamesTheEndpoint) {
  zmq::context_t ctx;
  zmq::socket_t first = NewRouter(ctx);
  absl::StatusOr<std::string> bound =
      BindRouter(first, "tcp://127.0.0.1:*", {});
  ASSERT_TRUE(bound.ok()) << bound.status();
  zmq::socket_t second = NewRouter(ctx);
  absl::StatusOr<std::string> again = BindRouter(second, *bound, {});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(again.status().message()),
              StartsWith("cannot bind " + *bound));
}

TEST(BindRouterTest, ACurveListenerWithoutZapDomainIsRefusedUnbound) {
  zmq::context_t ctx;
  zmq::socket_t router = NewRouter(ctx);
  ListenerSecurity security;
  security.curve_secret_key.emplace();  // any key; refused before it is used
  absl::StatusOr<std::string> bound =
      BindRouter(router, "tcp://127.0.0.1:*", security);
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bound.status().message()), HasSubstr("ZAP domain"));
  EXPECT_EQ(router.get(zmq::sockopt::last_endpoint), "");
}

TEST(BindRouterTest, BindsAnIpv6LiteralAndStillAnIpv4OneAfterIt) {
  zmq::context_t ctx;
  zmq::socket_t router = NewRouter(ctx);
  absl::StatusOr<std::string> v6 = BindRouter(router, "tcp://[::1]:*", {});
  if (!v6.ok()) {
    GTEST_SKIP() << "no IPv6 loopback on this host: " << v6.status();
  }
  EXPECT_THAT(*v6, StartsWith("tcp://[::1]:"));
  absl::StatusOr<std::string> v4 = BindRouter(router, "tcp://127.0.0.1:*", {});
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_THAT(*v4, StartsWith("tcp://127.0.0.1:"));
}

}  // namespace
}  // namespace zb
