// Copyright 2026 The zbrokers Authors.

#include "brokers/common/dealer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "zbrokers/frames/frames.h"

namespace zb {
namespace {

using ::testing::HasSubstr;

// A ROUTER on a free loopback port, and its resolved endpoint.
struct Router {
  explicit Router(zmq::context_t& ctx, const char* bind = "tcp://127.0.0.1:*")
      : socket(ctx, zmq::socket_type::router) {
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::rcvtimeo, 5000);  // bounds every receive
    socket.bind(bind);
    endpoint = socket.get(zmq::sockopt::last_endpoint);
  }
  zmq::socket_t socket;
  std::string endpoint;
};

TEST(OpenDealerTest, ConnectsWithLingerZeroAndNoSizeLimitByDefault) {
  zmq::context_t ctx;
  Router router(ctx);
  absl::StatusOr<zmq::socket_t> dealer =
      OpenDealer(ctx, router.endpoint, {}, "Test");
  ASSERT_TRUE(dealer.ok()) << dealer.status();
  EXPECT_EQ(dealer->get(zmq::sockopt::type),
            static_cast<int>(zmq::socket_type::dealer));
  EXPECT_EQ(dealer->get(zmq::sockopt::linger), 0);
  EXPECT_EQ(dealer->get(zmq::sockopt::maxmsgsize), -1);
  EXPECT_EQ(dealer->get(zmq::sockopt::ipv6), 0);
  EXPECT_EQ(dealer->get(zmq::sockopt::sndhwm), 1000);  // libzmq's default
  EXPECT_EQ(dealer->get(zmq::sockopt::rcvhwm), 1000);

  // Connected: a message gets to the router as [identity][payload].
  dealer->send(zmq::str_buffer("hello"), zmq::send_flags::none);
  std::vector<zmq::message_t> got;
  ASSERT_TRUE(zmq::recv_multipart(router.socket, std::back_inserter(got)));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(View(got[1]), "hello");
}

TEST(OpenDealerTest, AppliesMaxMessageSizeAndUnlimitedHighWaterMarks) {
  zmq::context_t ctx;
  Router router(ctx);
  absl::StatusOr<zmq::socket_t> dealer =
      OpenDealer(ctx, router.endpoint,
                 {.max_message_size = 1234, .unlimited_hwm = true}, "Test");
  ASSERT_TRUE(dealer.ok()) << dealer.status();
  EXPECT_EQ(dealer->get(zmq::sockopt::maxmsgsize), 1234);
  EXPECT_EQ(dealer->get(zmq::sockopt::sndhwm), 0);
  EXPECT_EQ(dealer->get(zmq::sockopt::rcvhwm), 0);
}

TEST(OpenDealerTest, SetsIpv6ForAnIpv6Literal) {
  zmq::context_t ctx;
  // Nothing listens there: connect() is asynchronous, so this only checks
  // that libzmq accepted the address, which needs ZMQ_IPV6.
  absl::StatusOr<zmq::socket_t> dealer =
      OpenDealer(ctx, "tcp://[::1]:1", {}, "Test");
  ASSERT_TRUE(dealer.ok()) << dealer.status();
  EXPECT_EQ(dealer->get(zmq::sockopt::ipv6), 1);
}

TEST(OpenDealerTest, RefusesABadEndpointNamingTheCallerAndTheEndpoint) {
  zmq::context_t ctx;
  for (const char* ep : {"nonsense", "tcp://", "bogus://127.0.0.1:5555"}) {
    absl::StatusOr<zmq::socket_t> dealer = OpenDealer(ctx, ep, {}, "MyWorker");
    ASSERT_FALSE(dealer.ok()) << ep;
    EXPECT_EQ(dealer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(
        std::string(dealer.status().message()),
        HasSubstr(std::string("MyWorker: cannot connect to \"") + ep + "\""));
  }
}

TEST(OpenDealerTest, AppliesCurveClientKeys) {
  if (!CurveAvailable()) {
    GTEST_SKIP() << "this libzmq has no CURVE";
  }
  absl::StatusOr<CurveKeyPair> server = GenerateCurveKeyPair();
  absl::StatusOr<CurveKeyPair> client = GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok() && client.ok());
  zmq::context_t ctx;
  absl::StatusOr<zmq::socket_t> dealer = OpenDealer(
      ctx, "tcp://127.0.0.1:1",
      {.curve = CurveClientKeys{.server_public_key = server->public_key,
                                .public_key = client->public_key,
                                .secret_key = client->secret_key}},
      "Test");
  ASSERT_TRUE(dealer.ok()) << dealer.status();
  EXPECT_EQ(dealer->get(zmq::sockopt::mechanism), ZMQ_CURVE);
  EXPECT_EQ(dealer->get(zmq::sockopt::curve_serverkey, 41),
            Z85(server->public_key));
  EXPECT_EQ(dealer->get(zmq::sockopt::curve_publickey, 41),
            Z85(client->public_key));
}

}  // namespace
}  // namespace zb
