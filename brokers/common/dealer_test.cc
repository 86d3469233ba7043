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
#include "zbrokers/reactor/reactor.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

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

TEST(OpenWatchedDealerTest, WatchesTheSocketAfterItIsMovedOut) {
  zmq::context_t ctx;
  Router router(ctx);
  Reactor reactor;
  std::vector<std::string> got;
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      reactor, ctx, router.endpoint, {}, "Test",
      [&](std::span<zmq::message_t> f) { got = FramesToStrings(f); });
  ASSERT_TRUE(dealer.ok()) << dealer.status();
  // Where an owner keeps them: the socket first, the watch after it.
  zmq::socket_t socket = std::move(dealer->socket);
  Reactor::SocketWatch watch = std::move(dealer->watch);
  EXPECT_TRUE(watch);
  EXPECT_EQ(socket.get(zmq::sockopt::linger), 0);  // OpenDealer's options

  socket.send(zmq::str_buffer("hi"), zmq::send_flags::none);
  std::vector<zmq::message_t> in;
  ASSERT_TRUE(zmq::recv_multipart(router.socket, std::back_inserter(in)));
  ASSERT_EQ(in.size(), 2u);
  router.socket.send(in[0], zmq::send_flags::sndmore);
  router.socket.send(zmq::str_buffer("back"), zmq::send_flags::none);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got.empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(reactor.RunOnce(50ms).ok());
  }
  EXPECT_EQ(got, std::vector<std::string>{"back"});
}

TEST(OpenWatchedDealerTest, AWatchTheReactorRefusesIsAnError) {
  zmq::context_t ctx;
  Router router(ctx);
  Reactor reactor;
  // An empty handler is refused by Reactor::Add (InvalidArgument).
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      reactor, ctx, router.endpoint, {}, "Test", Reactor::MessageHandler());
  EXPECT_EQ(dealer.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OpenWatchedDealerTest, ABadEndpointIsOpenDealersError) {
  zmq::context_t ctx;
  Reactor reactor;
  absl::StatusOr<WatchedDealer> dealer = OpenWatchedDealer(
      reactor, ctx, "bogus://x", {}, "Test", [](std::span<zmq::message_t>) {});
  EXPECT_EQ(dealer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(dealer.status().message()),
              HasSubstr("Test: cannot connect to \"bogus://x\""));
}

}  // namespace
}  // namespace zb
