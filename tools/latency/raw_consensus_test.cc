// Copyright 2026 The zbrokers Authors.
//
// The raw baseline must be a correct CCp100 consensus fan-out, or its
// numbers mean nothing: these tests drive it with its own workers and client
// and with hand-made DEALER sockets.

#include "tools/latency/raw_consensus.h"

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb::latency {
namespace {

using ::testing::ElementsAre;

constexpr auto kTimeout = std::chrono::milliseconds(5000);

std::vector<std::string> Strings(const std::vector<zmq::message_t>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(f.to_string());
  return out;
}

// Receives one multipart message, waiting at most kTimeout.
std::vector<zmq::message_t> Recv(zmq::socket_t& s) {
  std::vector<zmq::message_t> frames;
  zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, kTimeout) == 0) return frames;
  auto n = zmq::recv_multipart(s, std::back_inserter(frames));
  EXPECT_TRUE(n.has_value());
  return frames;
}

void SendStrings(zmq::socket_t& s, const std::vector<std::string>& parts) {
  std::vector<zmq::const_buffer> bufs;
  for (const auto& p : parts) bufs.push_back(zmq::buffer(p));
  ASSERT_TRUE(zmq::send_multipart(s, bufs).has_value());
}

std::string Seq(std::uint64_t number, std::uint32_t client) {
  std::string s(12, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(number >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i)
    s[8 + i] = static_cast<char>(client >> (24 - 8 * i));
  return s;
}

class RawConsensusTest : public ::testing::TestWithParam<const char*> {
 protected:
  zmq::context_t ctx_;
};

TEST_P(RawConsensusTest, FanOutToGrowingWorkers) {
  auto broker = RawBroker::Start(ctx_, GetParam());
  ASSERT_TRUE(broker.ok()) << broker.status();
  auto workers = RawWorkers::Start(ctx_, (*broker)->endpoint(), "echo");
  ASSERT_TRUE(workers.ok()) << workers.status();
  RawClient client(ctx_, (*broker)->endpoint(), "echo", 24, kTimeout);
  for (int n : {1, 2, 5}) {
    ASSERT_TRUE((*workers)->Add(n - (*workers)->size()).ok());
    // Registration is asynchronous: probe until every worker answers.
    int seen = -1;
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (seen != n && std::chrono::steady_clock::now() < deadline) {
      seen = client.Probe();
    }
    ASSERT_EQ(seen, n);
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(client.RoundTrip(n)) << i;
    EXPECT_FALSE(client.RoundTrip(n + 1));  // wrong count is a failure
  }
  workers->reset();
  broker->reset();
}

INSTANTIATE_TEST_SUITE_P(Transports, RawConsensusTest,
                         ::testing::Values("tcp://127.0.0.1:*",
                                           "inproc://raw-consensus-test"));

class RawBrokerProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = RawBroker::Start(ctx_, "tcp://127.0.0.1:*");
    ASSERT_TRUE(b.ok()) << b.status();
    broker_ = std::move(*b);
  }
  zmq::socket_t Dealer() {
    zmq::socket_t s(ctx_, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(broker_->endpoint());
    return s;
  }
  zmq::context_t ctx_;
  std::unique_ptr<RawBroker> broker_;
};

TEST_F(RawBrokerProtocolTest, PayloadsInRegistrationOrder) {
  zmq::socket_t w1 = Dealer(), w2 = Dealer(), client = Dealer();
  const std::string hb("\0\0\x03\xe8", 4);
  SendStrings(w1, {"", "CCp100", "\x01", "svc", hb, "\x03"});
  // A ping round trip through w1 proves its READY was handled first.
  SendStrings(w1, {"", "CCp100", "\x07"});
  EXPECT_THAT(Strings(Recv(w1)), ElementsAre("", "CCp100", "\x07"));
  SendStrings(w2, {"", "CCp100", "\x01", "svc", hb, "\x03"});
  SendStrings(w2, {"", "CCp100", "\x07"});
  EXPECT_THAT(Strings(Recv(w2)), ElementsAre("", "CCp100", "\x07"));

  const std::string seq = Seq(1, 42);
  SendStrings(client, {"", "CCp100", "\x03", "svc", seq, "hello"});
  auto r1 = Strings(Recv(w1));
  auto r2 = Strings(Recv(w2));
  EXPECT_THAT(r1, ElementsAre("", "CCp100", "\x03", "svc", seq, "hello"));
  EXPECT_EQ(r1, r2);
  // Answer in reverse order; the reply still lists w1 first.
  SendStrings(w2, {"", "CCp100", "\x04", "svc", seq, "from-w2"});
  SendStrings(w2, {"", "CCp100", "\x04", "svc", seq, "again"});  // ignored
  SendStrings(w1, {"", "CCp100", "\x04", "svc", seq, "from-w1"});
  EXPECT_THAT(Strings(Recv(client)), ElementsAre("", "CCp100", "\x04", "svc",
                                                 seq, "from-w1", "from-w2"));

  // A worker failure fails the request with the worker's payload.
  const std::string seq2 = Seq(2, 42);
  SendStrings(client, {"", "CCp100", "\x03", "svc", seq2, "x"});
  Recv(w1);
  Recv(w2);
  SendStrings(w1, {"", "CCp100", "\x05", "svc", seq2, "nope"});
  EXPECT_THAT(Strings(Recv(client)),
              ElementsAre("", "CCp100", "\x05", "svc", seq2, "nope"));
}

TEST_F(RawBrokerProtocolTest, SequenceRuleAndNoWorkers) {
  zmq::socket_t client = Dealer(), other = Dealer();
  // No workers for the service.
  SendStrings(client, {"", "CCp100", "\x03", "none", Seq(1, 7), ""});
  EXPECT_THAT(Strings(Recv(client)), ElementsAre("", "CCp100", "\x05", "none",
                                                 Seq(1, 7), "zb:no-workers"));
  // A gap: 3 after 1.
  SendStrings(client, {"", "CCp100", "\x03", "none", Seq(3, 7), ""});
  EXPECT_THAT(Strings(Recv(client)), ElementsAre("", "CCp100", "\x05", "none",
                                                 Seq(3, 7), "zb:bad-sequence"));
  // The client id from another socket.
  SendStrings(other, {"", "CCp100", "\x03", "none", Seq(2, 7), ""});
  EXPECT_THAT(Strings(Recv(other)), ElementsAre("", "CCp100", "\x05", "none",
                                                Seq(2, 7), "zb:bad-sequence"));
  // A new client must start at 1.
  SendStrings(other, {"", "CCp100", "\x03", "none", Seq(5, 8), ""});
  EXPECT_THAT(Strings(Recv(other)), ElementsAre("", "CCp100", "\x05", "none",
                                                Seq(5, 8), "zb:bad-sequence"));
}

}  // namespace
}  // namespace zb::latency
