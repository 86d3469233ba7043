// Copyright 2026 The zbrokers Authors.
//
// zb::MdpClient and zb::MdpAsyncClient given a list of brokers
// (Options::endpoint_policy, docs/majordomo.md "Many brokers"): real
// MajordomoBrokers on tcp://127.0.0.1 (free ports), one of them destroyed
// in the middle of a test; a plain RFC 7 broker (no "mmi.zb.tag") played by
// a raw ROUTER.  Timeouts are short (300 ms) where a request is meant to
// time out, generous (5 s) where it is meant to be served.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "brokers/majordomo/test_util.h"
#include "gtest/gtest.h"
#include "test/testing/must.h"
#include "test/testing/raw_router.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using mdp_test::FastBroker;
using mdp_test::FastWorker;
using mdp_test::WaitFor;
using namespace std::chrono_literals;

// `n` different tcp endpoints on 127.0.0.1 where no broker listens (ports
// the system just handed out, all closed again).
std::vector<std::string> DeadEndpoints(zmq::context_t& ctx, int n) {
  std::vector<zmq::socket_t> sockets;
  std::vector<std::string> endpoints;
  for (int i = 0; i < n; ++i) {
    zmq::socket_t& s = sockets.emplace_back(ctx, zmq::socket_type::router);
    s.set(zmq::sockopt::linger, 0);
    s.bind("tcp://127.0.0.1:*");
    endpoints.push_back(s.get(zmq::sockopt::last_endpoint));
  }
  return endpoints;
}

std::string DeadEndpoint(zmq::context_t& ctx) {
  return DeadEndpoints(ctx, 1)[0];
}

// Outcomes of asynchronous requests, by slot: the reply's first frame or
// the status code's name; `ends` counts each slot's callbacks (a request
// must end exactly once).  Touched on the client thread only.
struct Outcomes {
  std::map<int, std::string> result;
  std::map<int, int> ends;
  int done = 0;
};

class EndpointListTest : public ::testing::Test {
 protected:
  static constexpr int kA = 0;
  static constexpr int kB = 1;

  // Starts broker `i` on `endpoint` (a free port by default; a restarted
  // broker binds its predecessor's port, which libzmq may release a moment
  // late).
  void StartBroker(int i, std::string endpoint = "tcp://127.0.0.1:*") {
    bool bound = false;
    for (int attempt = 0; attempt < 250 && !bound; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(20ms);
      bound = broker_thread_.Invoke([&](Reactor& r) {
        brokers_[i] =
            test::Must(MajordomoBroker::Create(r, ctx_, FastBroker()));
        if (brokers_[i]->Bind(endpoint).ok()) return true;
        brokers_[i].reset();
        return false;
      });
    }
    ASSERT_TRUE(bound) << endpoint;
    endpoints_[i] = broker_thread_.Invoke(
        [&](Reactor&) { return brokers_[i]->endpoints().back(); });
  }

  // Destroys broker `i`: its socket closes, its clients and workers hear
  // nothing from it any more.
  void StopBroker(int i) {
    broker_thread_.Invoke([&](Reactor&) { brokers_[i].reset(); });
  }

  // Client requests broker `i` took, MMI not counted.
  std::uint64_t Served(int i) {
    return broker_thread_.Invoke([&](Reactor&) {
      MajordomoBroker::Stats s = brokers_[i]->stats();
      return s.requests - s.mmi_requests;
    });
  }

  std::size_t Workers(int i, const std::string& service) {
    return broker_thread_.Invoke([&](Reactor&) -> std::size_t {
      MajordomoBroker::Stats s = brokers_[i]->stats();
      auto it = s.services.find(service);
      return it == s.services.end() ? 0 : it->second.workers;
    });
  }

  // A worker for "echo" on `endpoints` (one or a list); it answers with the
  // body (name empty) or with `name`.
  void AddWorker(const std::string& endpoints, const std::string& name = "") {
    worker_thread_.Invoke([&](Reactor& r) {
      MdpWorker::Handler h;
      if (name.empty()) {
        h = [](Frames body, MdpWorker::Replier rep) {
          rep.Reply(std::move(body));
        };
      } else {
        h = [name](Frames, MdpWorker::Replier rep) {
          rep.Reply(MakeFrames({name}));
        };
      }
      workers_.push_back(test::Must(MdpWorker::Create(
          r, ctx_, endpoints, "echo", std::move(h), FastWorker())));
    });
  }

  std::string List() { return endpoints_[kA] + "," + endpoints_[kB]; }

  void CreateAsync(const std::string& list, MdpAsyncClient::Options o) {
    client_thread_.Invoke([&](Reactor& r) {
      async_ = test::Must(MdpAsyncClient::Create(r, ctx_, list, o));
    });
  }

  // Sends "echo" requests with bodies "r<slot>" for slots [from, to), all
  // at once; outcomes land in out_.
  void SendAsync(int from, int to,
                 std::optional<std::chrono::milliseconds> timeout = {}) {
    client_thread_.Invoke([&](Reactor&) {
      for (int slot = from; slot < to; ++slot) {
        absl::Status s = async_->Request(
            "echo", MakeFrames({"r" + std::to_string(slot)}),
            [this, slot](absl::StatusOr<Frames> reply) {
              out_.result[slot] = reply.ok()
                                      ? FramesToStrings(*reply)[0]
                                      : std::string(absl::StatusCodeToString(
                                            reply.status().code()));
              ++out_.ends[slot];
              ++out_.done;
            },
            timeout);
        ASSERT_TRUE(s.ok()) << s;
      }
    });
  }

  // Waits until `n` requests have ended in all.
  bool WaitDone(int n) {
    return WaitFor([&] {
      return client_thread_.Invoke([&](Reactor&) { return out_.done >= n; });
    });
  }

  Outcomes Snapshot() {
    return client_thread_.Invoke([&](Reactor&) { return out_; });
  }

  // Slots [from, to) ended exactly once each (after a pause, so that a
  // second end would have come).
  void ExpectEachEndedOnce(int from, int to) {
    std::this_thread::sleep_for(400ms);
    Outcomes o = Snapshot();
    for (int slot = from; slot < to; ++slot) {
      EXPECT_EQ(o.ends[slot], 1) << "slot " << slot;
    }
  }

  template <typename T>
  T OnClient(std::function<T(MdpAsyncClient&)> f) {
    return client_thread_.Invoke([&](Reactor&) { return f(*async_); });
  }

  void TearDown() override {
    client_thread_.Invoke([&](Reactor&) {
      async_.reset();
      plain_.reset();
    });
    worker_thread_.Invoke([&](Reactor&) { workers_.clear(); });
    broker_thread_.Invoke([&](Reactor&) {
      brokers_[kA].reset();
      brokers_[kB].reset();
    });
  }

  zmq::context_t ctx_;
  ReactorThread broker_thread_;
  ReactorThread worker_thread_;
  ReactorThread client_thread_;
  std::unique_ptr<MajordomoBroker> brokers_[2];
  std::string endpoints_[2];
  std::vector<std::unique_ptr<MdpWorker>> workers_;
  std::unique_ptr<MdpAsyncClient> async_;
  std::unique_ptr<test::RawRouter> plain_;  // a plain RFC 7 broker
  Outcomes out_;
};

MdpClient::Options SyncOptions(int retries, std::chrono::milliseconds timeout,
                               EndpointPolicy policy) {
  MdpClient::Options o;
  o.retries = retries;
  o.timeout = timeout;
  o.endpoint_policy = policy;
  return o;
}

MdpAsyncClient::Options AsyncOptions(int retries,
                                     std::chrono::milliseconds timeout,
                                     EndpointPolicy policy) {
  MdpAsyncClient::Options o;
  o.retries = retries;
  o.timeout = timeout;
  o.endpoint_policy = policy;
  return o;
}

std::string Body(const absl::StatusOr<Frames>& reply) {
  if (!reply.ok())
    return std::string(absl::StatusCodeToString(reply.status().code()));
  return FramesToStrings(*reply)[0];
}

// --- Refused lists -----------------------------------------------------------

TEST_F(EndpointListTest, BadListsAreRefusedByCreate) {
  const std::string a = "tcp://127.0.0.1:5555";
  const std::string b = "tcp://127.0.0.1:5556";
  const std::vector<std::string> bad = {
      "",                            // empty
      a + ",," + b,                  // empty item
      a + "," + b + ",",             // trailing comma
      a + "," + a,                   // the same broker twice
      a + ",tcp://127.0.0.1:99999",  // a port out of range
      a + ",bogus://nowhere",        // a transport libzmq does not have
  };
  for (EndpointPolicy policy :
       {EndpointPolicy::kFailover, EndpointPolicy::kSpread}) {
    for (const std::string& list : bad) {
      absl::StatusOr<std::unique_ptr<MdpClient>> sync =
          MdpClient::Create(list, SyncOptions(0, 300ms, policy), &ctx_);
      EXPECT_TRUE(absl::IsInvalidArgument(sync.status()))
          << '"' << list << "\" " << EndpointPolicyName(policy) << ": "
          << sync.status();
      absl::Status async = client_thread_.Invoke([&](Reactor& r) {
        return MdpAsyncClient::Create(r, ctx_, list,
                                      AsyncOptions(0, 300ms, policy))
            .status();
      });
      EXPECT_TRUE(absl::IsInvalidArgument(async))
          << '"' << list << "\" " << EndpointPolicyName(policy) << ": "
          << async;
    }
  }
  // Spaces around the items are fine.
  EXPECT_TRUE(MdpClient::Create(" " + a + " , " + b + " ", {}, &ctx_).ok());
}

// --- kFailover, synchronous
// ---------------------------------------------------

// Served by the first broker; when it is gone, the timed-out attempt reopens
// on the second, which serves that request and every later one.
TEST_F(EndpointListTest, SyncFailoverMovesToTheNextBroker) {
  StartBroker(kA);
  StartBroker(kB);
  AddWorker(List());  // one worker, registered with both
  ASSERT_TRUE(WaitFor([&] { return Workers(kA, "echo") == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Workers(kB, "echo") == 1; }));

  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      List(), SyncOptions(2, 1000ms, EndpointPolicy::kFailover), &ctx_));
  EXPECT_EQ(Body(client->Request("echo", MakeFrames({"first"}))), "first");
  EXPECT_EQ(Served(kA), 1u);
  EXPECT_EQ(Served(kB), 0u);
  EXPECT_EQ(client->failovers(), 0u);

  StopBroker(kA);
  for (int i = 0; i < 5; ++i) {
    const std::string body = "after-" + std::to_string(i);
    EXPECT_EQ(Body(client->Request("echo", MakeFrames({body}))), body);
  }
  EXPECT_EQ(Served(kB), 5u);
  EXPECT_EQ(client->failovers(), 1u);  // moved once, then stayed
  EXPECT_EQ(client->resends(), 1u);
}

TEST_F(EndpointListTest, SyncFailoverPastAFirstEndpointWithoutABroker) {
  StartBroker(kB);
  AddWorker(endpoints_[kB]);
  ASSERT_TRUE(WaitFor([&] { return Workers(kB, "echo") == 1; }));

  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      DeadEndpoint(ctx_) + "," + endpoints_[kB],
      SyncOptions(1, 1000ms, EndpointPolicy::kFailover), &ctx_));
  EXPECT_EQ(Body(client->Request("echo", MakeFrames({"x"}))), "x");
  EXPECT_EQ(Body(client->Request("echo", MakeFrames({"y"}))), "y");
  EXPECT_EQ(client->failovers(), 1u);
  EXPECT_EQ(Served(kB), 2u);
}

// With one endpoint a timeout reopens on the same broker: no failover.
TEST_F(EndpointListTest, OneEndpointNeverCountsAFailover) {
  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      DeadEndpoint(ctx_), SyncOptions(1, 100ms, EndpointPolicy::kFailover),
      &ctx_));
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      client->Request("echo", MakeFrames({"x"})).status()));
  EXPECT_EQ(client->resends(), 1u);
  EXPECT_EQ(client->failovers(), 0u);
}

// --- kFailover, asynchronous
// --------------------------------------------------

// Served by the first broker; destroyed, the requests outstanding on it
// time out, the client reopens on the second broker (negotiating tags
// there) and resends them: each ends once, with its own reply.
TEST_F(EndpointListTest, AsyncFailoverMovesToTheNextBroker) {
  StartBroker(kA);
  StartBroker(kB);
  AddWorker(List());
  ASSERT_TRUE(WaitFor([&] { return Workers(kA, "echo") == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Workers(kB, "echo") == 1; }));
  CreateAsync(List(), AsyncOptions(2, 1000ms, EndpointPolicy::kFailover));

  SendAsync(0, 5, 5000ms);
  ASSERT_TRUE(WaitDone(5));
  EXPECT_EQ(Served(kA), 5u);
  EXPECT_EQ(Served(kB), 0u);

  StopBroker(kA);
  SendAsync(5, 15);
  ASSERT_TRUE(WaitDone(15));
  SendAsync(15, 20);
  ASSERT_TRUE(WaitDone(20));
  ExpectEachEndedOnce(0, 20);
  Outcomes o = Snapshot();
  for (int slot = 0; slot < 20; ++slot) {
    EXPECT_EQ(o.result[slot], "r" + std::to_string(slot)) << slot;
  }
  EXPECT_GE(Served(kB), 15u);
  EXPECT_GE(
      OnClient<std::uint64_t>([](MdpAsyncClient& c) { return c.failovers(); }),
      1u);
  EXPECT_TRUE(OnClient<bool>([](MdpAsyncClient& c) { return c.tagged(); }));
}

TEST_F(EndpointListTest, AsyncFailoverPastAFirstEndpointWithoutABroker) {
  StartBroker(kB);
  AddWorker(endpoints_[kB]);
  ASSERT_TRUE(WaitFor([&] { return Workers(kB, "echo") == 1; }));
  CreateAsync(DeadEndpoint(ctx_) + "," + endpoints_[kB],
              AsyncOptions(2, 1000ms, EndpointPolicy::kFailover));
  SendAsync(0, 6);
  ASSERT_TRUE(WaitDone(6));
  ExpectEachEndedOnce(0, 6);
  Outcomes o = Snapshot();
  for (int slot = 0; slot < 6; ++slot) {
    EXPECT_EQ(o.result[slot], "r" + std::to_string(slot)) << slot;
  }
  EXPECT_EQ(
      OnClient<std::uint64_t>([](MdpAsyncClient& c) { return c.failovers(); }),
      1u);
  EXPECT_EQ(Served(kB), 6u);
}

// --- kSpread -----------------------------------------------------------------

// Each broker has its own worker, which says which broker it is behind.
class SpreadTest : public EndpointListTest {
 protected:
  void SetUp() override {
    StartBroker(kA);
    StartBroker(kB);
    AddWorker(endpoints_[kA], "A");
    AddWorker(endpoints_[kB], "B");
    ASSERT_TRUE(WaitFor([&] { return Workers(kA, "echo") == 1; }));
    ASSERT_TRUE(WaitFor([&] { return Workers(kB, "echo") == 1; }));
  }

  // How many of slots [from, to) ended with `what`.
  int Count(int from, int to, const std::string& what) {
    Outcomes o = Snapshot();
    int n = 0;
    for (int slot = from; slot < to; ++slot) n += o.result[slot] == what;
    return n;
  }
};

TEST_F(SpreadTest, AsyncRequestsSplitAcrossBrokersAndAvoidADeadOne) {
  CreateAsync(List(), AsyncOptions(0, 1000ms, EndpointPolicy::kSpread));
  // Both alive: round-robin, half each.
  SendAsync(0, 20, 5000ms);
  ASSERT_TRUE(WaitDone(20));
  EXPECT_EQ(Count(0, 20, "A"), 10);
  EXPECT_EQ(Count(0, 20, "B"), 10);
  EXPECT_EQ(Served(kA), 10u);
  EXPECT_EQ(Served(kB), 10u);
  EXPECT_TRUE(OnClient<bool>([](MdpAsyncClient& c) { return c.tagged(); }));
  EXPECT_EQ(
      OnClient<std::uint64_t>([](MdpAsyncClient& c) { return c.failovers(); }),
      0u);

  StopBroker(kA);
  // Still round-robin: the half sent to A times out (no retries), the rest
  // is served by B; none is sent to both.  (1 s each.)
  SendAsync(20, 30);
  ASSERT_TRUE(WaitDone(30));
  EXPECT_EQ(Count(20, 30, "B"), 5);
  EXPECT_EQ(Count(20, 30, "DEADLINE_EXCEEDED"), 5);
  EXPECT_EQ(
      OnClient<std::uint64_t>([](MdpAsyncClient& c) { return c.failovers(); }),
      1u);
  // A looks dead now: everything goes to B and succeeds.
  SendAsync(30, 50);
  ASSERT_TRUE(WaitDone(50));
  EXPECT_EQ(Count(30, 50, "B"), 20);
  ExpectEachEndedOnce(0, 50);
  EXPECT_EQ(Served(kB), 35u);
  EXPECT_EQ(
      OnClient<std::size_t>([](MdpAsyncClient& c) { return c.outstanding(); }),
      0u);
}

// A broker that comes back answers the tag query its connection's reopen
// left queued: it no longer looks dead and gets its share again.
TEST_F(SpreadTest, AsyncBrokerThatComesBackIsUsedAgain) {
  CreateAsync(List(), AsyncOptions(0, 300ms, EndpointPolicy::kSpread));
  // Both connections' tag queries answered first: an answer from A that
  // arrived after request 0 was sent (A stopped under load just after it
  // answered) would rightly count as A being there, and A would not look
  // dead after request 0's timeout (CI once saw 2 of requests 2-5 go to A).
  ASSERT_TRUE(WaitFor([&] {
    return OnClient<bool>([](MdpAsyncClient& c) { return c.tagged(); });
  }));
  const std::string a = endpoints_[kA];
  StopBroker(kA);
  SendAsync(0, 1);          // to A: times out, A looks dead
  SendAsync(1, 2, 5000ms);  // to B
  ASSERT_TRUE(WaitDone(2));
  EXPECT_EQ(Count(0, 2, "DEADLINE_EXCEEDED"), 1);
  SendAsync(2, 6, 5000ms);
  ASSERT_TRUE(WaitDone(6));
  EXPECT_EQ(Count(2, 6, "B"), 4);

  StartBroker(kA, a);  // the same port; the worker reconnects by itself
  ASSERT_TRUE(WaitFor([&] { return Workers(kA, "echo") == 1; }));
  int next = 6;
  bool a_again = false;
  for (int round = 0; round < 50 && !a_again; ++round) {
    SendAsync(next, next + 2, 5000ms);
    next += 2;
    ASSERT_TRUE(WaitDone(next));
    a_again = Count(next - 2, next, "A") > 0;
    if (!a_again) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(a_again);
  ExpectEachEndedOnce(0, next);
}

// One broker negotiates request tags, the other is a plain RFC 7 broker
// ("501" to mmi.zb.tag): each connection makes its own choice, and every
// request gets its own reply.
TEST_F(SpreadTest, AsyncSpreadOverATaggedAndAPlainBroker) {
  // Shared with the watch, which outlives this function (until TearDown).
  auto plain_requests = std::make_shared<std::atomic<int>>(0);
  auto plain_tagged = std::make_shared<std::atomic<int>>(0);
  const std::string plain_endpoint = client_thread_.Invoke([&](Reactor& r) {
    plain_ = std::make_unique<test::RawRouter>(ctx_);
    plain_->Watch(
        r, [this, plain_requests, plain_tagged](std::span<zmq::message_t> f) {
          std::vector<std::string> m;
          for (auto& frame : f) m.emplace_back(View(frame));
          if (m.size() >= 5 && m[2] == "MDPC01" && m[3] == "mmi.zb.tag") {
            plain_->Send({m[0], "", "MDPC01", "mmi.zb.tag", "501"});
          } else if (m.size() >= 5 && m[2] == "MDPC01") {
            ++*plain_requests;
            plain_->Send({m[0], "", "MDPC01", m[3], "P" + m[4]});
          } else {
            ++*plain_tagged;  // a tagged request: this broker would not know it
          }
        });
    return plain_->endpoint();
  });
  CreateAsync(endpoints_[kA] + "," + plain_endpoint,
              AsyncOptions(0, 5000ms, EndpointPolicy::kSpread));
  SendAsync(0, 20);
  ASSERT_TRUE(WaitDone(20));
  ExpectEachEndedOnce(0, 20);
  Outcomes o = Snapshot();
  int from_a = 0;
  int from_plain = 0;
  for (int slot = 0; slot < 20; ++slot) {
    if (o.result[slot] == "A") {
      ++from_a;
    } else {
      EXPECT_EQ(o.result[slot], "Pr" + std::to_string(slot));
      ++from_plain;
    }
  }
  EXPECT_EQ(from_a, 10);
  EXPECT_EQ(from_plain, 10);
  EXPECT_EQ(plain_requests->load(), 10);
  EXPECT_EQ(plain_tagged->load(), 0);
  EXPECT_FALSE(OnClient<bool>([](MdpAsyncClient& c) { return c.tagged(); }));
  // Broker A negotiated tags on its own connection (its first requests may
  // have gone out plain before the answer came).
  EXPECT_TRUE(WaitFor([&] {
    return broker_thread_.Invoke(
        [&](Reactor&) { return brokers_[kA]->stats().tagged_requests > 0; });
  }));
}

TEST_F(SpreadTest, SyncRequestsAlternateAndSkipADeadBroker) {
  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      List(), SyncOptions(0, 1000ms, EndpointPolicy::kSpread), &ctx_));
  std::vector<std::string> got;
  for (int i = 0; i < 6; ++i) {
    got.push_back(Body(client->Request("echo", MakeFrames({"x"}))));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"A", "B", "A", "B", "A", "B"}));

  StopBroker(kA);
  // The next goes to A, times out (no retry on another broker); A then
  // looks dead and B serves the rest.
  EXPECT_EQ(Body(client->Request("echo", MakeFrames({"x"}))),
            "DEADLINE_EXCEEDED");
  EXPECT_EQ(client->failovers(), 1u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(Body(client->Request("echo", MakeFrames({"x"}))), "B");
  }
  EXPECT_EQ(client->failovers(), 1u);
  EXPECT_EQ(Served(kB), 9u);
}

// A broker that looks dead is asked "mmi.zb.tag" on a new socket; when it
// is back and answers, requests go to it again.
TEST_F(SpreadTest, SyncBrokerThatComesBackIsUsedAgain) {
  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      List(), SyncOptions(0, 1000ms, EndpointPolicy::kSpread), &ctx_));
  const std::string a = endpoints_[kA];
  StopBroker(kA);
  EXPECT_EQ(Body(client->Request("echo", MakeFrames({"x"}))),
            "DEADLINE_EXCEEDED");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Body(client->Request("echo", MakeFrames({"x"}))), "B");
  }
  StartBroker(kA, a);
  ASSERT_TRUE(WaitFor([&] { return Workers(kA, "echo") == 1; }));
  bool a_again = false;
  for (int i = 0; i < 100 && !a_again; ++i) {
    const std::string got = Body(client->Request("echo", MakeFrames({"x"})));
    EXPECT_TRUE(got == "A" || got == "B") << got;
    a_again = got == "A";
    if (!a_again) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(a_again);
  EXPECT_EQ(client->failovers(), 1u);
}

// Every broker looks dead: plain round-robin, each request still ends once.
TEST_F(EndpointListTest, SyncSpreadWithAllBrokersDeadStillRoundRobins) {
  std::unique_ptr<MdpClient> client = test::Must(MdpClient::Create(
      DeadEndpoints(ctx_, 2)[0] + "," + DeadEndpoints(ctx_, 2)[1],
      SyncOptions(0, 100ms, EndpointPolicy::kSpread), &ctx_));
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(
        client->Request("echo", MakeFrames({"x"})).status()));
  }
  EXPECT_EQ(client->failovers(), 2u);  // each came to look dead once
}

}  // namespace
}  // namespace zb
