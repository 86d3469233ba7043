// Copyright 2026 The zbrokers Authors.
//
// zb::MdpClient and zb::MdpAsyncClient against a fake broker: a raw ROUTER
// socket driven by the test, so every frame is checked exactly.  The fake
// broker answers MdpAsyncClient's "mmi.zb.tag" query like an RFC 8 broker
// ("501") unless a test says otherwise.

#include "zbrokers/majordomo/client.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>
#include <zmq_addon.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/raw_router.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;

// The raw ROUTER (Recv, Send) plus the answer to MdpAsyncClient's probe.
class FakeBroker : public test::RawRouter {
 public:
  using RawRouter::RawRouter;

  // The next message that is not MdpAsyncClient's "mmi.zb.tag" query; a
  // query is answered with probe_answer (none when empty) and counted.
  std::vector<std::string> RecvRequest(
      std::chrono::milliseconds limit = 5000ms) {
    for (;;) {
      std::vector<std::string> m = Recv(limit);
      if (m.size() == 5 && m[2] == "MDPC01" && m[3] == "mmi.zb.tag") {
        ++probes;
        if (!probe_answer.empty()) {
          Send({m[0], "", "MDPC01", "mmi.zb.tag", probe_answer});
        }
        continue;
      }
      return m;
    }
  }
  std::string probe_answer = "501";  // what an RFC 8 broker says
  int probes = 0;
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
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), Opts(0, 5000ms), &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
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
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), Opts(3, 300ms), &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
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
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), Opts(2, 200ms), &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
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
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), Opts(0, 5000ms), &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
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
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), Opts(0, 5000ms), &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  EXPECT_EQ(client.Request("", MakeFrames({"x"})).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::thread t([&] { (void)client.Request("svc", {}); });
  auto req = broker.Recv();
  EXPECT_THAT(std::vector<std::string>(req.begin() + 1, req.end()),
              ElementsAre("", "MDPC01", "svc", ""));
  broker.Send({req[0], "", "MDPC01", "svc", "r"});
  t.join();
}

// Issue 11 item 3: a reply frame over max_message_size never reaches the
// client (libzmq drops the connection); the request ends by its timeout,
// and a reply within the limit on the reconnected socket works.
TEST(MdpClientTest, ReplyOverMaxMessageSizeIsNotAccepted) {
  zmq::context_t ctx;
  FakeBroker broker(ctx);
  MdpClient::Options o = Opts(1, 1000ms);
  o.max_message_size = 1 << 20;
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(broker.endpoint(), o, &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  absl::StatusOr<Frames> reply;
  std::thread t([&] { reply = client.Request("svc", MakeFrames({"x"})); });
  auto first = broker.Recv();
  ASSERT_EQ(first.size(), 5u);
  broker.Send(std::vector<std::string>{first[0], "", "MDPC01", "svc",
                                       std::string((1 << 20) + 1, 'r')});
  auto second = broker.Recv();  // the retry, on a new socket
  ASSERT_EQ(second.size(), 5u);
  broker.Send(std::vector<std::string>{second[0], "", "MDPC01", "svc",
                                       std::string(1 << 20, 'r')});
  t.join();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->at(0).size(), 1u << 20);
  EXPECT_EQ(client.resends(), 1u);
}

// --- MdpAsyncClient
// -----------------------------------------------------------

class MdpAsyncClientTest : public ::testing::Test {
 protected:
  MdpAsyncClientTest() : broker_(ctx_) {}
  ~MdpAsyncClientTest() override {
    thread_.Invoke([&](Reactor&) { client_.reset(); });
  }

  void Start(MdpAsyncClient::Options o = {}) {
    thread_.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
          MdpAsyncClient::Create(r, ctx_, broker_.endpoint(), o);
      ASSERT_TRUE(created.ok()) << created.status();
      client_ = *std::move(created);
    });
  }

  // Sends a request; its outcome lands in results_[slot].
  void Request(std::string service, std::string body, int slot,
               std::optional<std::chrono::milliseconds> timeout = {}) {
    thread_.Invoke([&](Reactor&) {
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
    return thread_.Invoke([&](Reactor&) { return results_[slot]; });
  }

  // One answered request, so that the client's connection is up before a
  // test starts timing (a request queued on a socket that is closed before
  // it connected is lost, which would confuse the counts).  Uses slot 7.
  void Warm() {
    Request("warm", "w", 7);
    auto m = broker_.RecvRequest();
    ASSERT_GE(m.size(), 5u);
    if (m.size() == 6) {  // tagged
      broker_.Send({m[0], "", m[2], "warm", m[4], "w"});
    } else {
      broker_.Send({m[0], "", "MDPC01", "warm", "w"});
    }
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

// A broker that does not speak request tags ("501" to mmi.zb.tag): one
// request per service on the wire, the next sent when its reply comes, so a
// reply always answers the one request of its service that is out.
TEST_F(MdpAsyncClientTest, PlainBrokerGetsOneRequestPerServiceAtATime) {
  Start();
  Request("A", "a0", 0);
  Request("B", "b0", 1);
  Request("A", "a1", 2);
  std::vector<std::string> bodies;
  std::string id;
  for (int i = 0; i < 2; ++i) {
    auto m = broker_.RecvRequest();
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[1], "");
    EXPECT_EQ(m[2], "MDPC01");
    id = m[0];
    bodies.push_back(m[3] + ":" + m[4]);
  }
  EXPECT_THAT(bodies, ::testing::UnorderedElementsAre("A:a0", "B:b0"));
  EXPECT_TRUE(broker_.RecvRequest(300ms).empty());  // a1 waits in the client
  EXPECT_EQ(broker_.probes, 1);
  EXPECT_FALSE(thread_.Invoke([&](Reactor&) { return client_->tagged(); }));
  broker_.Send({id, "", "MDPC01", "B", "reply-b0"});
  broker_.Send({id, "", "MDPC01", "A", "reply-a0"});
  auto a1 = broker_.RecvRequest();
  ASSERT_EQ(a1.size(), 5u);
  EXPECT_EQ(a1[4], "a1");
  broker_.Send({id, "", "MDPC01", "A", "reply-a1"});
  broker_.Send({id, "", "MDPC01", "A", "unsolicited"});
  ASSERT_TRUE(WaitDone(3));
  EXPECT_EQ(Result(0), "reply-a0");
  EXPECT_EQ(Result(1), "reply-b0");
  EXPECT_EQ(Result(2), "reply-a1");
  for (int i = 0; i < 500; ++i) {
    if (thread_.Invoke([&](Reactor&) { return client_->stale_replies(); }) ==
        1u) {
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(thread_.Invoke([&](Reactor&) { return client_->stale_replies(); }),
            1u);
}

// A broker that answers "200": every request goes out at once with a tag,
// and replies in any order complete the requests whose tags they carry.
TEST_F(MdpAsyncClientTest, TaggedBrokerMatchesRepliesByTag) {
  broker_.probe_answer = "200";
  Start();
  Warm();
  EXPECT_TRUE(thread_.Invoke([&](Reactor&) { return client_->tagged(); }));
  Request("A", "a0", 0);
  Request("A", "a1", 1);
  Request("A", "a2", 2);
  std::vector<std::vector<std::string>> got;
  for (int i = 0; i < 3; ++i) {
    got.push_back(broker_.RecvRequest());
    ASSERT_EQ(got.back().size(), 6u);
    EXPECT_EQ(got.back()[2], "zb.tag.MDPC01");
    EXPECT_EQ(got.back()[3], "A");
    EXPECT_EQ(got.back()[4].size(), 8u);  // the tag
    EXPECT_EQ(got.back()[5], "a" + std::to_string(i));
  }
  // Backwards, and one with a tag nobody has, and one without a tag.
  for (int i = 2; i >= 0; --i) {
    broker_.Send(
        {got[i][0], "", "zb.tag.MDPC01", "A", got[i][4], "reply-" + got[i][5]});
  }
  broker_.Send(
      {got[0][0], "", "zb.tag.MDPC01", "A", std::string(8, '\x7f'), "stray"});
  broker_.Send({got[0][0], "", "MDPC01", "A", "untagged"});
  ASSERT_TRUE(WaitDone(3));
  EXPECT_EQ(Result(0), "reply-a0");
  EXPECT_EQ(Result(1), "reply-a1");
  EXPECT_EQ(Result(2), "reply-a2");
  for (int i = 0; i < 500; ++i) {
    if (thread_.Invoke([&](Reactor&) { return client_->stale_replies(); }) ==
        2u) {
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(thread_.Invoke([&](Reactor&) { return client_->stale_replies(); }),
            2u);
}

// Requests made before the broker answered the query go out plain (one per
// service); once it says "200" the waiting ones go out tagged at once.
TEST_F(MdpAsyncClientTest, RequestsBeforeTheAnswerGoPlainThenTagged) {
  broker_.probe_answer = "";
  Start();
  auto probe = broker_.Recv();
  ASSERT_EQ(probe.size(), 5u);
  ASSERT_EQ(probe[3], "mmi.zb.tag");
  Request("A", "a0", 0);
  Request("A", "a1", 1);
  auto a0 = broker_.RecvRequest();
  ASSERT_EQ(a0.size(), 5u);
  EXPECT_EQ(a0[4], "a0");
  EXPECT_TRUE(broker_.RecvRequest(200ms).empty());
  broker_.Send({probe[0], "", "MDPC01", "mmi.zb.tag", "200"});
  auto a1 = broker_.RecvRequest();
  ASSERT_EQ(a1.size(), 6u);
  EXPECT_EQ(a1[2], "zb.tag.MDPC01");
  EXPECT_EQ(a1[5], "a1");
  broker_.Send({a1[0], "", "zb.tag.MDPC01", "A", a1[4], "reply-a1"});
  broker_.Send({a0[0], "", "MDPC01", "A", "reply-a0"});
  ASSERT_TRUE(WaitDone(2));
  EXPECT_EQ(Result(0), "reply-a0");
  EXPECT_EQ(Result(1), "reply-a1");
}

// Plain: a request's timeout reopens the socket (a late reply on the old one
// is lost with it) and what was waiting is sent on the new one.
TEST_F(MdpAsyncClientTest, TimeoutReopensTheSocketAndResendsTheOthers) {
  Start();
  Warm();
  Request("svc", "short", 0, 100ms);
  Request("svc", "long", 1, 10000ms);
  auto a = broker_.RecvRequest();
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[4], "short");
  // "short" times out; "long" (waiting behind it) goes out on a new socket.
  auto again = broker_.RecvRequest();
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
  EXPECT_GE(thread_.Invoke([&](Reactor&) { return client_->reconnects(); }),
            1u);
  EXPECT_GE(broker_.probes, 2);  // asked again on the new connection
}

TEST_F(MdpAsyncClientTest, RetriesBeforeGivingUp) {
  MdpAsyncClient::Options o;
  o.timeout = 300ms;
  o.retries = 1;
  Start(o);
  Warm();
  Request("svc", "x", 0);
  auto first = broker_.RecvRequest();
  auto second = broker_.RecvRequest();
  ASSERT_EQ(second.size(), 5u);
  EXPECT_NE(first[0], second[0]);
  broker_.Send({second[0], "", "MDPC01", "svc", "ok"});
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "ok");
}

// Tagged: a timed-out request is resent on the same socket while the
// connection is alive (other replies came back since it was sent); a late
// reply to its first copy then completes it only once.
TEST_F(MdpAsyncClientTest, TaggedTimeoutResendsOnTheSameLiveSocket) {
  broker_.probe_answer = "200";
  MdpAsyncClient::Options o;
  o.timeout = 300ms;
  o.retries = 1;
  Start(o);
  Warm();
  Request("svc", "slow", 0);
  Request("svc", "quick", 1);
  auto slow = broker_.RecvRequest();
  auto quick = broker_.RecvRequest();
  ASSERT_EQ(quick.size(), 6u);
  broker_.Send({quick[0], "", "zb.tag.MDPC01", "svc", quick[4], "q"});
  ASSERT_TRUE(WaitDone(1));
  auto resent = broker_.RecvRequest();
  ASSERT_EQ(resent.size(), 6u);
  EXPECT_EQ(resent[0], slow[0]);  // the same socket
  EXPECT_EQ(resent[4], slow[4]);  // the same tag
  EXPECT_EQ(resent[5], "slow");
  broker_.Send({slow[0], "", "zb.tag.MDPC01", "svc", slow[4], "first copy"});
  broker_.Send({slow[0], "", "zb.tag.MDPC01", "svc", slow[4], "second copy"});
  ASSERT_TRUE(WaitDone(2));
  EXPECT_EQ(Result(0), "first copy");
  EXPECT_EQ(thread_.Invoke([&](Reactor&) { return client_->reconnects(); }),
            0u);
}

// Tagged: when nothing at all came back since the request was sent, the
// broker looks gone: a new socket, and the query again.
TEST_F(MdpAsyncClientTest, TaggedTimeoutWithASilentBrokerReopens) {
  broker_.probe_answer = "200";
  MdpAsyncClient::Options o;
  o.timeout = 300ms;
  o.retries = 1;
  Start(o);
  Warm();
  Request("svc", "x", 0);
  auto first = broker_.RecvRequest();
  ASSERT_EQ(first.size(), 6u);
  // Resent on the new socket before its query is answered: plain.
  auto second = broker_.RecvRequest();
  ASSERT_EQ(second.size(), 5u);
  EXPECT_NE(first[0], second[0]);
  EXPECT_EQ(second[4], "x");
  broker_.Send({second[0], "", "MDPC01", "svc", "ok"});
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "ok");
  EXPECT_EQ(broker_.probes, 2);
}

// Tagged, a broker that answers the query but no request (a stalled
// service): 32 requests time out together.  One reopen per timeout period
// resends them; the other 31 timeouts of that period wait for what the
// reopen sent.  Before, each of the 32 timeouts reopened and resent all 32
// (~W^2 requests per period, docs/reliability.md, "greedy").
TEST_F(MdpAsyncClientTest, ManyTimeoutsReopenOncePerPeriodNotOncePerRequest) {
  broker_.probe_answer = "200";
  MdpAsyncClient::Options o;
  o.timeout = 300ms;
  o.retries = 2;
  Start(o);
  Warm();
  constexpr int kRequests = 32;
  for (int i = 0; i < kRequests; ++i) {
    Request("svc", "r" + std::to_string(i), i % 7);
  }
  // Count what reaches the broker until every request has given up (3 x
  // 300 ms, bounded at 20 s).
  int received = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (done_.load() < kRequests &&
         std::chrono::steady_clock::now() < deadline) {
    if (!broker_.RecvRequest(50ms).empty()) ++received;
  }
  while (!broker_.RecvRequest(100ms).empty()) ++received;
  ASSERT_EQ(done_.load(), kRequests);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(Result(i), "DEADLINE_EXCEEDED");
  // The first copies, one reopen's resend per retry period, and the last
  // period's reopen (the first request to give up reopens, resending the
  // others just before they give up too): (retries + 2) x 32 at most.
  EXPECT_LE(received, (o.retries + 2) * kRequests);
  EXPECT_GE(received, kRequests);
  EXPECT_LE(thread_.Invoke([&](Reactor&) { return client_->reconnects(); }),
            4u);
}

// A plain request whose last timeout comes after a reopen already resent it
// ends on a socket that still carries its copy.  Its late reply must not
// complete the next request of its service on that socket.  Before the fix,
// "a" ended there without a reopen, "a2" went out behind its copy, and the
// broker's reply to "a" completed "a2" (seen in chaos_flood as request 195
// answered with request 177's body).
TEST_F(MdpAsyncClientTest, PlainRequestEndingAfterAReopenLeavesNoReplyBehind) {
  MdpAsyncClient::Options o;
  o.timeout = 200ms;
  o.retries = 1;
  Start(o);  // the probe is answered 501: plain RFC 7 matching
  Warm();
  Request("s1", "x", 0);  // its timeouts reopen the socket twice
  std::this_thread::sleep_for(20ms);
  Request("s2", "a", 1);           // resent by those reopens
  Request("s2", "a2", 2, 3000ms);  // waits behind "a", outlives it
  // Collect every copy that reaches the broker until "x" and "a" have
  // ended, then answer each "s2" copy on the socket it came on, in order,
  // with its own body.
  std::vector<std::pair<std::string, std::string>> s2;  // socket, body
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  auto collect = [&](std::chrono::milliseconds limit) {
    auto m = broker_.RecvRequest(limit);
    if (m.size() == 5 && m[3] == "s2") s2.emplace_back(m[0], m[4]);
    return !m.empty();
  };
  while (done_.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    collect(20ms);
  }
  ASSERT_GE(done_.load(), 2);
  while (collect(150ms)) {
  }
  for (const auto& [socket, body] : s2) {
    broker_.Send({socket, "", "MDPC01", "s2", "re:" + body});
  }
  // From here on every copy is answered as it comes.
  while (done_.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    auto m = broker_.RecvRequest(20ms);
    if (m.size() == 5 && m[3] == "s2") {
      broker_.Send({m[0], "", "MDPC01", "s2", "re:" + m[4]});
    }
  }
  ASSERT_EQ(done_.load(), 3);
  EXPECT_EQ(Result(0), "DEADLINE_EXCEEDED");
  EXPECT_EQ(Result(1), "DEADLINE_EXCEEDED");
  EXPECT_EQ(Result(2), "re:a2");  // never "re:a"
  EXPECT_GE(thread_.Invoke([&](Reactor&) { return client_->stale_replies(); }),
            1u);
}

// request_tags = false: no query, plain RFC 7 only.
TEST_F(MdpAsyncClientTest, RequestTagsOffSendsNoQuery) {
  broker_.probe_answer = "200";
  MdpAsyncClient::Options o;
  o.request_tags = false;
  Start(o);
  Request("svc", "x", 0);
  auto m = broker_.Recv();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[3], "svc");
  broker_.Send({m[0], "", "MDPC01", "svc", "ok"});
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(broker_.probes, 0);
}

TEST_F(MdpAsyncClientTest, ReplyOverMaxMessageSizeIsNotAccepted) {
  MdpAsyncClient::Options o;
  o.max_message_size = 1 << 20;
  o.timeout = 500ms;
  Start(o);
  Warm();
  Request("svc", "x", 0);
  auto m = broker_.RecvRequest();
  ASSERT_EQ(m.size(), 5u);
  broker_.Send(std::vector<std::string>{m[0], "", "MDPC01", "svc",
                                        std::string((1 << 20) + 1, 'r')});
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "DEADLINE_EXCEEDED");
}

TEST_F(MdpAsyncClientTest, DestructionCancelsOutstandingRequests) {
  Start();
  Request("svc", "x", 0);
  ASSERT_EQ(broker_.RecvRequest().size(), 5u);
  thread_.Invoke([&](Reactor&) { client_.reset(); });
  ASSERT_TRUE(WaitDone(1));
  EXPECT_EQ(Result(0), "CANCELLED");
}

TEST_F(MdpAsyncClientTest, RefusesEmptyService) {
  thread_.Invoke([&](Reactor& r) {
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> c =
        MdpAsyncClient::Create(r, ctx_, broker_.endpoint());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->Request("", {}, [](absl::StatusOr<Frames>) {}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ((*c)->outstanding(), 0u);
  });
}

}  // namespace
}  // namespace zb
