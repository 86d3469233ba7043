// Copyright 2026 The zbrokers Authors.
//
// zb::MdpClient and zb::MdpAsyncClient against a fake broker: a raw ROUTER
// socket driven by the test, so every frame is checked exactly.

#include "brokers/client/mdp_client.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>
#include <zmq_addon.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "reactor/reactor_thread.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;

class FakeBroker {
 public:
  explicit FakeBroker(zmq::context_t& ctx)
      : router_(ctx, zmq::socket_type::router) {
    router_.set(zmq::sockopt::linger, 0);
    router_.bind("tcp://127.0.0.1:*");
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }

  std::vector<std::string> Recv(std::chrono::milliseconds limit = 5000ms) {
    zmq_pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, limit) <= 0) return {};
    Frames f;
    (void)zmq::recv_multipart(router_, std::back_inserter(f));
    return FramesToStrings(f);
  }
  void Send(std::initializer_list<std::string_view> parts) {
    Frames f = MakeFrames(parts);
    ASSERT_TRUE(SendFrames(router_, f).ok());
  }

 private:
  zmq::socket_t router_;
  std::string endpoint_;
};

MdpClient::Options Opts(int retries, std::chrono::milliseconds timeout) {
  MdpClient::Options o;
  o.retries = retries;
  o.timeout = timeout;
  return o;
}

// --- MdpClient
// ------------------------------------------------------------------

TEST(MdpClientTest, SendsExactFramesAndReturnsTheBody) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient client(broker.endpoint(), Opts(0, 5000ms), &ctx);
  absl::StatusOr<Frames> reply;
  std::thread t([&] { reply = client.Request("svc", MakeFrames({"x", "y"})); });
  auto req = broker.Recv();
  ASSERT_EQ(req.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(req.begin() + 1, req.end()),
              ElementsAre("", "MDPC01", "svc", "x", "y"));
  broker.Send({req[0], "", "MDPC01", "svc", "r1", "r2"});
  t.join();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(FramesToStrings(*reply), ElementsAre("r1", "r2"));
}

TEST(MdpClientTest, RetriesOnANewSocket) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient client(broker.endpoint(), Opts(3, 300ms), &ctx);
  absl::StatusOr<Frames> reply;
  std::thread t([&] { reply = client.Request("svc", MakeFrames({"x"})); });
  auto first = broker.Recv();
  auto second = broker.Recv();  // after the first timeout
  ASSERT_EQ(second.size(), 5u);
  EXPECT_NE(first[0], second[0]);  // a new identity
  EXPECT_EQ(second[4], "x");
  broker.Send({second[0], "", "MDPC01", "svc", "ok"});
  t.join();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_GE(client.resends(), 1u);
}

TEST(MdpClientTest, DeadlineExceededAfterAllRetries) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient client(broker.endpoint(), Opts(2, 200ms), &ctx);
  auto reply = client.Request("svc", MakeFrames({"x"}));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client.resends(), 2u);
  // Every attempt that reached the broker came from a socket of its own.  (An
  // attempt whose connection was not up before its socket was closed never
  // arrives, so on a loaded machine fewer than three may be seen.)
  std::vector<std::string> ids;
  for (auto m = broker.Recv(200ms); !m.empty(); m = broker.Recv(200ms)) {
    ids.push_back(m[0]);
  }
  ASSERT_GE(ids.size(), 1u);
  ASSERT_LE(ids.size(), 3u);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    for (std::size_t j = i + 1; j < ids.size(); ++j) {
      EXPECT_NE(ids[i], ids[j]);
    }
  }
}

TEST(MdpClientTest, DropsAReplyForAnotherService) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient client(broker.endpoint(), Opts(0, 5000ms), &ctx);
  absl::StatusOr<Frames> reply;
  std::thread t([&] { reply = client.Request("svc", MakeFrames({"x"})); });
  auto req = broker.Recv();
  broker.Send({req[0], "", "MDPC01", "other", "wrong"});
  broker.Send({req[0], "", "MDPC01", "svc"});  // malformed: no body
  broker.Send({req[0], "", "MDPC01", "svc", "right"});
  t.join();
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(FramesToStrings(*reply), ElementsAre("right"));
  EXPECT_EQ(client.dropped_replies(), 2u);
}

TEST(MdpClientTest, EmptyBodySendsOneEmptyFrameAndEmptyServiceFails) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient client(broker.endpoint(), Opts(0, 5000ms), &ctx);
  EXPECT_EQ(client.Request("", MakeFrames({"x"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::thread t([&] { (void)client.Request("svc", {}); });
  auto req = broker.Recv();
  EXPECT_THAT(std::vector<std::string>(req.begin() + 1, req.end()),
              ElementsAre("", "MDPC01", "svc", ""));
  broker.Send({req[0], "", "MDPC01", "svc", "r"});
  t.join();
}

// --- MdpAsyncClient
// -----------------------------------------------------------

class MdpAsyncClientTest : public ::testing::Test {
 protected:
  MdpAsyncClientTest() : broker_(ctx_) {}
  ~MdpAsyncClientTest() override {
    thread_.invoke([&](Reactor&) { client_.reset(); });
  }

  void Start(MdpAsyncClient::Options o = {}) {
    thread_.invoke([&](Reactor& r) {
      client_ =
          std::make_unique<MdpAsyncClient>(r, ctx_, broker_.endpoint(), o);
      ASSERT_TRUE(client_->Start().ok());
    });
  }

  // Sends a request; its outcome lands in results_[slot].
  void Request(std::string service, std::string body, int slot,
               std::optional<std::chrono::milliseconds> timeout = {}) {
    thread_.invoke([&](Reactor&) {
      ASSERT_TRUE(client_
                      ->Request(
                          service, MakeFrames({body}),
                          [this, slot](absl::StatusOr<Frames> r) {
                            results_[slot] =
                                r.ok() ? FramesToStrings(*r)[0]
                                       : std::string(absl::StatusCodeToString(
                                             r.status().code()));
                            ++done_;
                          },
                          timeout)
                      .ok());
    });
  }

  std::string Result(int slot) {
    return thread_.invoke([&](Reactor&) { return results_[slot]; });
  }

  // One answered request, so that the client's connection is up before a
  // test starts timing (a request queued on a socket that is closed before
  // it connected is lost, which would confuse the counts).  Uses slot 7.
  void Warm() {
    Request("warm", "w", 7);
    auto m = broker_.Recv();
    ASSERT_EQ(m.size(), 5u);
    broker_.Send({m[0], "", "MDPC01", "warm", "w"});
    ASSERT_TRUE(WaitDone(1));
    done_ = 0;
  }

  bool WaitDone(int n) {
    for (int i = 0; i < 2500 && done_.load() < n; ++i) {
      std::this_thread::sleep_for(2ms);
    }
    return done_.load() >= n;
  }

  zmq::context_t ctx_;
  FakeBroker broker_;
  ReactorThread thread_;
  std::unique_ptr<MdpAsyncClient> client_;
  std::string results_[8];
  std::atomic<int> done_{0};
};

TEST_F(MdpAsyncClientTest, MatchesRepliesFifoPerService) {
  Start();
  Request("A", "a0", 0);
  Request("B", "b0", 1);
  Request("A", "a1", 2);
  std::string id;
  for (int i = 0; i < 3; ++i) {
    auto m = broker_.Recv();
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[1], "");
    EXPECT_EQ(m[2], "MDPC01");
    id = m[0];
  }
  // Replies in a different order across services.
  broker_.Send({id, "", "MDPC01", "B", "reply-b0"});
  broker_.Send({id, "", "MDPC01", "A", "reply-a0"});
  broker_.Send({id, "", "MDPC01", "A", "reply-a1"});
  broker_.Send({id, "", "MDPC01", "A", "unsolicited"});
  ASSERT_TRUE(WaitDone(3));
  EXPECT_EQ(Result(0), "reply-a0");
  EXPECT_EQ(Result(1), "reply-b0");
  EXPECT_EQ(Result(2), "reply-a1");
  for (int i = 0; i < 500; ++i) {
    if (thread_.invoke([&](Reactor&) { return client_->stale_replies(); }) ==
        1u) {
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(thread_.invoke([&](Reactor&) { return client_->stale_replies(); }),
            1u);
}

TEST_F(MdpAsyncClientTest, TimeoutReopensTheSocketAndResendsTheOthers) {
  Start();
  Warm();
  Request("svc", "short", 0, 100ms);
  Request("svc", "long", 1, 10000ms);
  auto a = broker_.Recv();
  auto b = broker_.Recv();
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  // "short" times out; "long" comes again on a new socket.
  auto again = broker_.Recv();
  ASSERT_EQ(again.size(), 5u);
  EXPECT_NE(again[0], a[0]);
  EXPECT_EQ(again[4], "long");
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "DEADLINE_EXCEEDED");
  // A reply on the old socket is lost with it; one on the new one counts.
  broker_.Send({a[0], "", "MDPC01", "svc", "to-the-old-socket"});
  broker_.Send({again[0], "", "MDPC01", "svc", "fresh"});
  ASSERT_TRUE(WaitDone(2));
  EXPECT_EQ(Result(1), "fresh");
  EXPECT_GE(thread_.invoke([&](Reactor&) { return client_->reconnects(); }),
            1u);
}

TEST_F(MdpAsyncClientTest, RetriesBeforeGivingUp) {
  MdpAsyncClient::Options o;
  o.timeout = 300ms;
  o.retries = 1;
  Start(o);
  Warm();
  Request("svc", "x", 0);
  auto first = broker_.Recv();
  auto second = broker_.Recv();
  ASSERT_EQ(second.size(), 5u);
  EXPECT_NE(first[0], second[0]);
  broker_.Send({second[0], "", "MDPC01", "svc", "ok"});
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "ok");
}

TEST_F(MdpAsyncClientTest, DestructionCancelsOutstandingRequests) {
  Start();
  Request("svc", "x", 0);
  ASSERT_EQ(broker_.Recv().size(), 5u);
  thread_.invoke([&](Reactor&) { client_.reset(); });
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "CANCELLED");
}

TEST_F(MdpAsyncClientTest, RefusesBeforeStartAndEmptyService) {
  thread_.invoke([&](Reactor& r) {
    MdpAsyncClient c(r, ctx_, broker_.endpoint());
    EXPECT_EQ(c.Request("svc", {}, [](absl::StatusOr<Frames>) {}).code(),
              absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(c.Start().ok());
    EXPECT_EQ(c.Request("", {}, [](absl::StatusOr<Frames>) {}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(c.outstanding(), 0u);
  });
}

}  // namespace
}  // namespace zb
