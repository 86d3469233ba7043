// Copyright 2026 The zbrokers Authors.
//
// ConsensusClient and BlockingConsensusClient with a list of brokers
// (Options::endpoint_policy): real ConsensusBroker instances on tcp
// loopback, stopped and restarted by the test, with real workers.
//
// Threads: the brokers and the workers run on one ReactorThread (server_);
// an asynchronous client runs on the test thread's reactor (reactor_), a
// blocking client on its own thread.  Timeouts are tens of milliseconds so
// that each failover takes a fraction of a second.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "test/testing/wait.h"
#include "zbrokers/consensus/blocking_client.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using test::RunFor;
using test::RunUntil;
using test::WaitFor;
using Result = ConsensusClient::Result;
using Outcome = ConsensusClient::Outcome;

constexpr milliseconds kAttempt{100};  // each attempt's timeout

class ClientBrokersTest : public ::testing::Test {
 protected:
  ~ClientBrokersTest() override {
    server_.Invoke([&](Reactor&) {
      workers_.clear();
      brokers_.clear();
    });
  }

  // Starts broker `name` bound to `bind` (a new port by default) and
  // returns its endpoint.  A restarted broker binds the endpoint of its
  // predecessor, whose port libzmq releases asynchronously: retried for a
  // while.
  std::string StartBroker(const std::string& name,
                          const std::string& bind = "tcp://127.0.0.1:*") {
    const Clock::time_point end = Clock::now() + std::chrono::seconds(10);
    while (true) {
      absl::StatusOr<std::string> ep =
          server_.Invoke([&](Reactor& r) -> absl::StatusOr<std::string> {
            ConsensusBroker::Options o;
            o.request_timeout = milliseconds(2000);
            o.sweep_interval = milliseconds(10);
            absl::StatusOr<std::unique_ptr<ConsensusBroker>> b =
                ConsensusBroker::Create(r, ctx_, o);
            if (!b.ok()) return b.status();
            (*b)->set_log_hook([](LogLevel, std::string_view) {});
            if (absl::Status s = (*b)->Bind(bind); !s.ok()) return s;
            std::string endpoint = (*b)->endpoints().front();
            brokers_[name] = *std::move(b);
            return endpoint;
          });
      if (ep.ok()) return *ep;
      if (Clock::now() > end) {
        ADD_FAILURE() << ep.status();
        return "";
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
  }
  void StopBroker(const std::string& name) {
    server_.Invoke([&](Reactor&) { brokers_.erase(name); });
  }
  ConsensusBroker::Stats BrokerStats(const std::string& name) {
    return server_.Invoke([&](Reactor&) { return brokers_.at(name)->stats(); });
  }
  // Workers of "svc" registered with broker `name`.
  std::size_t Workers(const std::string& name) {
    return server_.Invoke([&](Reactor&) -> std::size_t {
      auto it = brokers_.find(name);
      return it == brokers_.end() ? 0 : it->second->worker_count("svc");
    });
  }

  // A worker of "svc" on `endpoints` (one or a list) that answers with one
  // frame, `name`.  It notices a dead broker after 3 x 20 ms and reconnects.
  void StartWorker(const std::string& endpoints, const std::string& name) {
    server_.Invoke([&](Reactor& r) {
      auto w = ConsensusWorker::Create(
          r, ctx_, endpoints, "svc",
          [name](std::span<zmq::message_t>, ConsensusWorker::Responder rsp) {
            rsp.Succeed(MakeFrames({name}));
          },
          {.heartbeat_interval = milliseconds(20), .heartbeat_liveness = 3});
      ASSERT_TRUE(w.ok()) << w.status();
      workers_.push_back(*std::move(w));
    });
  }

  // An endpoint where nothing listens: a port bound and released again.
  std::string UnusedEndpoint() {
    zmq::socket_t s(ctx_, zmq::socket_type::router);
    s.bind("tcp://127.0.0.1:*");
    std::string ep = s.get(zmq::sockopt::last_endpoint);
    s.close();
    return ep;
  }

  std::unique_ptr<ConsensusClient> MakeClient(const std::string& list,
                                              ConsensusClient::Options o) {
    absl::StatusOr<std::unique_ptr<ConsensusClient>> c =
        ConsensusClient::Create(reactor_, ctx_, list, o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  // Sends `n` requests at once and runs the reactor until all have ended;
  // checks that each ended exactly once and returns the results.
  std::vector<Result> RequestMany(ConsensusClient& client, int n,
                                  ConsensusClient::RequestOptions ro) {
    std::vector<std::vector<Result>> ends(n);
    int calls = 0;
    for (int i = 0; i < n; ++i) {
      client.Request("svc", MakeFrames({std::to_string(i)}), ro,
                     [&ends, &calls, i](Result&& r) {
                       ++calls;
                       ends[i].push_back(std::move(r));
                     });
    }
    EXPECT_TRUE(RunUntil(
        reactor_, [&] { return calls >= n; }, std::chrono::seconds(10)));
    RunFor(reactor_, milliseconds(5));  // a second end would show here
    std::vector<Result> out;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(ends[i].size(), 1u) << "request " << i;
      out.push_back(ends[i].empty() ? Result() : std::move(ends[i].front()));
    }
    EXPECT_EQ(client.open_requests(), 0u);
    return out;
  }
  Result RequestOne(ConsensusClient& client,
                    ConsensusClient::RequestOptions ro) {
    return std::move(RequestMany(client, 1, ro).front());
  }

  zmq::context_t ctx_;
  ReactorThread server_;
  std::map<std::string, std::unique_ptr<ConsensusBroker>> brokers_;
  std::vector<std::unique_ptr<ConsensusWorker>> workers_;
  Reactor reactor_;
};

// The payload of a success from one worker: its name.
std::string ServedBy(const Result& r) {
  if (!r.ok() || r.payload.size() != 1) return "(not served)";
  return std::string(View(r.payload[0]));
}

// --- Lists Create() refuses
// ---------------------------------------------------

TEST_F(ClientBrokersTest, CreateRefusesABadList) {
  for (EndpointPolicy policy :
       {EndpointPolicy::kFailover, EndpointPolicy::kSpread}) {
    for (const std::string list :
         {"tcp://127.0.0.1:5001,,tcp://127.0.0.1:5002",
          "tcp://127.0.0.1:5001,tcp://127.0.0.1:5001", "tcp://127.0.0.1:5001,",
          "", "tcp://127.0.0.1:5001,tcp://h:99999",
          // libzmq refuses it: checked at Create(), not at the first
          // failover.
          "tcp://127.0.0.1:5001,bogus://x"}) {
      absl::StatusOr<std::unique_ptr<ConsensusClient>> c =
          ConsensusClient::Create(reactor_, ctx_, list,
                                  {.endpoint_policy = policy});
      ASSERT_FALSE(c.ok()) << list;
      EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << list;
      EXPECT_THAT(c.status().message(), HasSubstr("ConsensusClient")) << list;
    }
  }
  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> b =
      BlockingConsensusClient::Create(
          ctx_, "tcp://127.0.0.1:5001,,tcp://127.0.0.1:5002");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  // A list with spaces around the items is fine.
  EXPECT_TRUE(ConsensusClient::Create(
                  reactor_, ctx_, "tcp://127.0.0.1:5001 , tcp://127.0.0.1:5002")
                  .ok());
}

// --- kFailover
// ------------------------------------------------------------------

TEST_F(ClientBrokersTest, FailoverMovesToTheNextBrokerAndBackAround) {
  const std::string a = StartBroker("A");
  const std::string b = StartBroker("B");
  StartWorker(a + "," + b, "w");
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1 && Workers("B") == 1; }));

  auto client = MakeClient(a + "," + b, {.reopen_after_timeouts = 2});
  ASSERT_NE(client, nullptr);
  const ConsensusClient::RequestOptions ro{.timeout = kAttempt, .retries = 6};
  EXPECT_EQ(client->endpoint(), a);

  // The first broker serves everything while it is there.
  for (const Result& r : RequestMany(*client, 5, ro)) {
    EXPECT_EQ(ServedBy(r), "w");
  }
  EXPECT_EQ(BrokerStats("A").requests, 5u);
  EXPECT_EQ(BrokerStats("B").requests, 0u);
  EXPECT_EQ(client->stats().failovers, 0u);

  // A goes: requests in flight and new ones end, served by B after the
  // reopen.
  StopBroker("A");
  for (const Result& r : RequestMany(*client, 5, ro)) {
    EXPECT_EQ(ServedBy(r), "w");
  }
  EXPECT_EQ(client->stats().failovers, 1u);
  EXPECT_EQ(client->endpoint(), b);
  EXPECT_GE(BrokerStats("B").requests, 5u);
  EXPECT_EQ(RequestOne(*client, ro).attempts, 1);  // B serves at once now

  // A comes back, B goes: the list wraps around to A.
  StartBroker("A", a);
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1; }));
  StopBroker("B");
  for (const Result& r : RequestMany(*client, 5, ro)) {
    EXPECT_EQ(ServedBy(r), "w");
  }
  EXPECT_EQ(client->stats().failovers, 2u);
  EXPECT_EQ(client->endpoint(), a);
  EXPECT_GE(BrokerStats("A").requests, 5u);
  EXPECT_EQ(client->stats().requests, 16u);
  EXPECT_EQ(client->stats().successes, 16u);
}

TEST_F(ClientBrokersTest, FailoverPassesAnEndpointThatNeverHadABroker) {
  const std::string dead = UnusedEndpoint();
  const std::string b = StartBroker("B");
  StartWorker(b, "w");
  ASSERT_TRUE(WaitFor([&] { return Workers("B") == 1; }));

  auto client = MakeClient(dead + "," + b, {.reopen_after_timeouts = 1});
  ASSERT_NE(client, nullptr);
  for (const Result& r :
       RequestMany(*client, 4, {.timeout = kAttempt, .retries = 3})) {
    EXPECT_EQ(ServedBy(r), "w");
  }
  EXPECT_EQ(client->stats().failovers, 1u);
  EXPECT_EQ(client->endpoint(), b);
  EXPECT_EQ(BrokerStats("B").requests, 4u);
}

TEST_F(ClientBrokersTest, OneEndpointNeverFailsOver) {
  const std::string dead = UnusedEndpoint();
  auto client = MakeClient(dead, {.reopen_after_timeouts = 1});
  ASSERT_NE(client, nullptr);
  for (const Result& r :
       RequestMany(*client, 2, {.timeout = milliseconds(30), .retries = 2})) {
    EXPECT_EQ(r.outcome, Outcome::kTimeout);
  }
  EXPECT_GE(client->stats().reopens, 2u);
  EXPECT_EQ(client->stats().failovers, 0u);
  EXPECT_EQ(client->endpoint(), dead);
}

// --- kSpread
// ---------------------------------------------------------------------

TEST_F(ClientBrokersTest, SpreadSplitsRequestsAndSkipsADeadBroker) {
  const std::string a = StartBroker("A");
  const std::string b = StartBroker("B");
  StartWorker(a, "a");
  StartWorker(b, "b");
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1 && Workers("B") == 1; }));

  // Reopening after one timeout: the connection to B drops what it had
  // queued for B, so only the client's pings can find B again.
  auto client = MakeClient(
      a + "," + b,
      {.reopen_after_timeouts = 1, .endpoint_policy = EndpointPolicy::kSpread});
  ASSERT_NE(client, nullptr);
  const ConsensusClient::RequestOptions ro{.timeout = kAttempt};

  // Round-robin: both brokers get half.
  std::map<std::string, int> served;
  for (const Result& r : RequestMany(*client, 10, ro)) ++served[ServedBy(r)];
  EXPECT_EQ(served["a"], 5);
  EXPECT_EQ(served["b"], 5);
  EXPECT_EQ(BrokerStats("A").requests, 5u);
  EXPECT_EQ(BrokerStats("B").requests, 5u);
  EXPECT_EQ(client->stats().requests, 10u);
  EXPECT_EQ(client->stats().successes, 10u);

  // B goes.  One at a time: the first request sent to B times out (it is
  // never moved to A), after which B looks dead and A serves the rest.
  StopBroker("B");
  served.clear();
  int timeouts = 0;
  for (int i = 0; i < 10; ++i) {
    const Result r = RequestOne(*client, ro);
    if (r.outcome == Outcome::kTimeout) {
      ++timeouts;
    } else {
      ++served[ServedBy(r)];
    }
  }
  EXPECT_EQ(timeouts, 1);
  EXPECT_EQ(served["a"], 9);
  EXPECT_EQ(client->stats().timeouts, 1u);

  // Many at once, B still dead: every request goes to A.
  served.clear();
  for (const Result& r : RequestMany(*client, 10, ro)) ++served[ServedBy(r)];
  EXPECT_EQ(served["a"], 10);

  // B comes back: the pings the client sends it as it passes it over bring
  // it back into the rotation.
  StartBroker("B", b);
  ASSERT_TRUE(WaitFor([&] { return Workers("B") == 1; }));
  bool b_served = false;
  const Clock::time_point end = Clock::now() + std::chrono::seconds(10);
  while (!b_served && Clock::now() < end) {
    const Result r = RequestOne(*client, ro);
    EXPECT_TRUE(r.ok());
    b_served = ServedBy(r) == "b";
    RunFor(reactor_, milliseconds(5));
  }
  EXPECT_TRUE(b_served);
  EXPECT_EQ(client->stats().failovers, 0u);
}

TEST_F(ClientBrokersTest, SpreadRequestStaysWithItsBrokerAndEndsOnce) {
  // B never had a broker: requests sent there before it looks dead retry
  // there and time out; none is answered by A, none ends twice.
  const std::string a = StartBroker("A");
  const std::string dead = UnusedEndpoint();
  StartWorker(a, "a");
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1; }));
  auto client = MakeClient(
      a + "," + dead,
      {.reopen_after_timeouts = 1, .endpoint_policy = EndpointPolicy::kSpread});
  ASSERT_NE(client, nullptr);
  std::map<std::string, int> served;
  int timeouts = 0;
  for (const Result& r :
       RequestMany(*client, 6, {.timeout = milliseconds(50), .retries = 1})) {
    if (r.outcome == Outcome::kTimeout) {
      EXPECT_EQ(r.attempts, 2);
      ++timeouts;
    } else {
      ++served[ServedBy(r)];
    }
  }
  EXPECT_EQ(served["a"], 3);
  EXPECT_EQ(timeouts, 3);
  EXPECT_EQ(BrokerStats("A").requests, 3u);
  // The dead broker's connection reopened (a new id each time) but stayed
  // with its broker.
  EXPECT_GE(client->stats().reopens, 1u);
  EXPECT_EQ(client->stats().failovers, 0u);
}

TEST_F(ClientBrokersTest, SpreadPingsTheBrokersInTurnAndCallSpreadsToo) {
  const std::string a = StartBroker("A");
  const std::string b = StartBroker("B");
  const std::string dead = UnusedEndpoint();
  StartWorker(a, "a");
  StartWorker(b, "b");
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1 && Workers("B") == 1; }));
  auto client = MakeClient(a + "," + b + "," + dead,
                           {.endpoint_policy = EndpointPolicy::kSpread});
  ASSERT_NE(client, nullptr);

  std::vector<absl::Status> pings;
  for (int i = 0; i < 3; ++i) {
    client->Ping(kAttempt, [&](absl::Status s) { pings.push_back(s); });
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] { return pings.size() == 3; }));
  EXPECT_EQ(BrokerStats("A").pings, 1u);
  EXPECT_EQ(BrokerStats("B").pings, 1u);
  int ok = 0;
  for (const absl::Status& s : pings) ok += s.ok();
  EXPECT_EQ(ok, 2);  // the third broker is not there

  // Call() goes round the brokers that do not look dead (the third one's
  // ping timed out).
  std::vector<std::string> served;
  for (int i = 0; i < 4; ++i) {
    Frames payload = MakeFrames({"x"});
    client->Call("svc", payload, {.timeout = kAttempt},
                 [&](Result&& r) { served.push_back(ServedBy(r)); });
  }
  EXPECT_THAT(served, ::testing::ElementsAre("a", "b", "a", "b"));
}

// --- BlockingConsensusClient
// --------------------------------------------------

TEST_F(ClientBrokersTest, BlockingClientFailsOverAndSpreads) {
  const std::string a = StartBroker("A");
  const std::string b = StartBroker("B");
  const std::string dead = UnusedEndpoint();
  StartWorker(a, "a");
  StartWorker(b, "b");
  ASSERT_TRUE(WaitFor([&] { return Workers("A") == 1 && Workers("B") == 1; }));

  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> failover =
      BlockingConsensusClient::Create(ctx_, dead + "," + b,
                                      {.reopen_after_timeouts = 1});
  ASSERT_TRUE(failover.ok()) << failover.status();
  const Result r =
      (*failover)->Request("svc", {}, {.timeout = kAttempt, .retries = 2});
  EXPECT_EQ(ServedBy(r), "b");
  EXPECT_EQ((*failover)->stats().failovers, 1u);

  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> spread =
      BlockingConsensusClient::Create(
          ctx_, a + "," + b, {.endpoint_policy = EndpointPolicy::kSpread});
  ASSERT_TRUE(spread.ok()) << spread.status();
  std::map<std::string, int> served;
  for (int i = 0; i < 4; ++i) {
    ++served[ServedBy((*spread)->Request("svc", {}, {.timeout = kAttempt}))];
  }
  EXPECT_EQ(served["a"], 2);
  EXPECT_EQ(served["b"], 2);
  EXPECT_EQ((*spread)->stats().successes, 4u);
}

}  // namespace
}  // namespace zb
