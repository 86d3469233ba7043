// Copyright 2026 The zbrokers Authors.

#include "zbrokers/common/endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <zmq.hpp>

namespace zb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CheckEndpointTest, AcceptsPortsInRangeAndWildcards) {
  for (const char* ep :
       {"tcp://127.0.0.1:5555", "tcp://*:*", "tcp://127.0.0.1:0",
        "tcp://127.0.0.1:65535", "tcp://[::1]:5555", "tcp://[::]:*",
        "tcp://::1:5555", "tcp://eth0:1", "tcp://127.0.0.1;127.0.0.1:5555",
        "tcp://127.0.0.1:0;127.0.0.1:5555", "tcp://[::1];[::1]:5555",
        "ipc:///tmp/x.sock", "ipc://@abstract", "inproc://name:99999"}) {
    EXPECT_TRUE(CheckEndpoint(ep).ok()) << ep << ": " << CheckEndpoint(ep);
  }
}

TEST(CheckEndpointTest, RefusesPortsOutOfRangeAndMissingPorts) {
  // libzmq 4.3 binds 99999 as 34463 and -1 as 65535 without a word.
  for (const char* ep :
       {"tcp://127.0.0.1:99999", "tcp://127.0.0.1:65536", "tcp://*:-1",
        "tcp://127.0.0.1:", "tcp://127.0.0.1", "tcp://[::1]:123456",
        "tcp://[::1]", "tcp://127.0.0.1:55x", "tcp://127.0.0.1:+80",
        "tcp://1.2.3.4:99999;127.0.0.1:5555",
        "tcp://127.0.0.1:5555;127.0.0.1:70000"}) {
    const absl::Status s = CheckEndpoint(ep);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << ep;
    EXPECT_THAT(std::string(s.message()), HasSubstr(ep));
  }
  EXPECT_THAT(std::string(CheckEndpoint("tcp://127.0.0.1:99999").message()),
              HasSubstr("tcp port \"99999\" in \"tcp://127.0.0.1:99999\" is "
                        "out of range (0 to 65535"));
  EXPECT_THAT(std::string(CheckEndpoint("tcp://127.0.0.1").message()),
              HasSubstr("has no tcp port"));
}

TEST(SplitEndpointListTest, OneOrManyInOrder) {
  auto one = SplitEndpointList("tcp://127.0.0.1:5555");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(*one, ElementsAre("tcp://127.0.0.1:5555"));
  auto two = SplitEndpointList("tcp://127.0.0.1:5556, ipc:///tmp/b ");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(*two, ElementsAre("tcp://127.0.0.1:5556", "ipc:///tmp/b"));
}

TEST(SplitEndpointListTest, RefusesEmptyDuplicateBadAndTooMany) {
  for (std::string_view bad :
       {"", " ", "tcp://a:1,", ",tcp://a:1", "tcp://a:1,,tcp://b:2",
        "tcp://a:1,tcp://a:1", "tcp://a:1,tcp://b:99999"}) {
    auto r = SplitEndpointList(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::string many;
  for (std::size_t i = 0; i <= kMaxEndpoints; ++i) {
    if (i) many += ",";
    many += "tcp://127.0.0.1:" + std::to_string(1000 + i);
  }
  EXPECT_THAT(SplitEndpointList(many).status().message(),
              HasSubstr("more than 64"));
}

TEST(EndpointPolicyTest, NamesRoundTripAndOthersRefused) {
  for (EndpointPolicy p :
       {EndpointPolicy::kFailover, EndpointPolicy::kSpread}) {
    auto parsed = ParseEndpointPolicy(EndpointPolicyName(p));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(EndpointPolicyName(EndpointPolicy::kFailover), "failover");
  EXPECT_EQ(EndpointPolicyName(EndpointPolicy::kSpread), "spread");
  for (std::string_view bad : {"", "Failover", "spread ", "round-robin"}) {
    auto r = ParseEndpointPolicy(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseEndpointPolicy("both").status().message(),
              HasSubstr("\"both\""));
}

TEST(NeedsIpv6Test, OnlyIpv6Literals) {
  EXPECT_TRUE(NeedsIpv6("tcp://[::1]:5555"));
  EXPECT_TRUE(NeedsIpv6("tcp://[::]:*"));
  EXPECT_TRUE(NeedsIpv6("tcp://::1:5555"));
  EXPECT_TRUE(NeedsIpv6("tcp://[fe80::1%lo]:5555"));
  EXPECT_TRUE(NeedsIpv6("tcp://[::1];127.0.0.1:5555"));
  EXPECT_TRUE(NeedsIpv6("tcp://127.0.0.1;[::1]:5555"));
  EXPECT_FALSE(NeedsIpv6("tcp://127.0.0.1:5555"));
  EXPECT_FALSE(NeedsIpv6("tcp://*:5555"));
  EXPECT_FALSE(NeedsIpv6("tcp://localhost:5555"));
  EXPECT_FALSE(NeedsIpv6("ipc:///tmp/a:b"));
  EXPECT_FALSE(NeedsIpv6("inproc://x::y"));
}

// What the helper is for: without ZMQ_IPV6 libzmq cannot bind or connect an
// IPv6 literal at all; with SetIpv6For both work, and an IPv4 endpoint on
// the same socket stays IPv4.
TEST(SetIpv6ForTest, RoundTripOverIpv6Loopback) {
  zmq::context_t ctx;
  zmq::socket_t plain(ctx, zmq::socket_type::router);
  plain.set(zmq::sockopt::linger, 0);
  EXPECT_THROW(plain.bind("tcp://[::1]:*"), zmq::error_t);

  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  SetIpv6For(router, "tcp://[::1]:*");
  router.bind("tcp://[::1]:*");
  const std::string v6 = router.get(zmq::sockopt::last_endpoint);
  EXPECT_THAT(v6, HasSubstr("tcp://[::1]:"));
  SetIpv6For(router, "tcp://127.0.0.1:*");
  EXPECT_EQ(router.get(zmq::sockopt::ipv6), 0);
  router.bind("tcp://127.0.0.1:*");

  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  SetIpv6For(dealer, v6);
  EXPECT_EQ(dealer.get(zmq::sockopt::ipv6), 1);
  dealer.connect(v6);
  ASSERT_TRUE(dealer.send(zmq::str_buffer("over ipv6"), zmq::send_flags::none));
  router.set(zmq::sockopt::rcvtimeo, 5000);
  zmq::message_t identity, body;
  ASSERT_TRUE(router.recv(identity));
  ASSERT_TRUE(router.recv(body));
  EXPECT_EQ(body.to_string(), "over ipv6");
}

TEST(RemoveIpcSocketFileTest, RemovesOnlyTheIpcFile) {
  char dir[] = "/tmp/zb_endpoint_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/broker.sock";
  {
    zmq::context_t ctx;
    zmq::socket_t router(ctx, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind("ipc://" + path);
    const std::string bound = router.get(zmq::sockopt::last_endpoint);
    router.close();
    EXPECT_EQ(access(path.c_str(), F_OK), 0) << "libzmq removed it itself";
    RemoveIpcSocketFile(bound);
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  // Nothing else is touched.
  const std::string other = std::string(dir) + "/keep";
  FILE* f = std::fopen(other.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  RemoveIpcSocketFile("tcp://" + other);
  RemoveIpcSocketFile("ipc://@" + other);
  RemoveIpcSocketFile("inproc://" + other);
  RemoveIpcSocketFile("ipc://");
  EXPECT_EQ(access(other.c_str(), F_OK), 0);
  std::remove(other.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace zb
