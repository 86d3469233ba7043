// Copyright 2026 The zbrokers Authors.
//
// MajordomoBroker::Drain(grace, done) under the contract it shares with
// ConsensusBroker::Drain (issue 12): `done` is posted, never called inside
// Drain(), exactly once; a request open at the drain is answered when it
// finishes within the grace period and dropped when it does not.  Raw
// DEALER peers play the client and the worker.

#include "zbrokers/majordomo/broker.h"

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "brokers/majordomo/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;
using namespace mdp_test;

class MajordomoDrainTest : public PrefetchTest {};

// Before issue 12 the broker called `done` from inside Drain() when nothing
// was open.
TEST_F(MajordomoDrainTest, DoneIsPostedNotCalledInsideDrain) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  std::atomic<int> drained{0};
  bool inline_call = true;
  broker_thread_.Invoke([&](Reactor&) {
    broker_->Drain(10000ms, [&] { ++drained; });
    inline_call = drained.load() != 0;
  });
  EXPECT_FALSE(inline_call);
  // It runs on a later iteration of the broker's reactor.
  ASSERT_TRUE(WaitFor([&] { return drained.load() == 1; }));
  broker_thread_.Invoke([&](Reactor&) { EXPECT_TRUE(broker_->drained()); });
  EXPECT_EQ(drained.load(), 1);
}

TEST_F(MajordomoDrainTest, RequestFinishedWithinTheGraceIsAnswered) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "body"});
  auto [addr, body] = Take(*w);
  EXPECT_EQ(body, "body");
  std::atomic<int> drained{0};
  broker_thread_.Invoke(
      [&](Reactor&) { broker_->Drain(10000ms, [&] { ++drained; }); });
  EXPECT_EQ(drained.load(), 0);
  w->Send({"", "MDPW01", kReply, addr, "", "answer"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
  ASSERT_TRUE(WaitFor([&] { return drained.load() == 1; }));
  EXPECT_FALSE(RecvCommand(*w, kDisconnect).empty());
  auto s = Stats();
  EXPECT_EQ(s.replies, 1u);
  EXPECT_EQ(s.expired, 0u);
  broker_thread_.Invoke([](Reactor&) {});
  EXPECT_EQ(drained.load(), 1);
}

// RFC 7 has no failure reply: at the end of the grace the open request is
// dropped (expired), its worker sent DISCONNECT, and the worker's late
// answer reaches nobody.
TEST_F(MajordomoDrainTest, RequestStillOpenAfterTheGraceIsDropped) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "body"});
  auto [addr, body] = Take(*w);
  std::atomic<int> drained{0};
  broker_thread_.Invoke(
      [&](Reactor&) { broker_->Drain(100ms, [&] { ++drained; }); });
  ASSERT_TRUE(WaitFor([&] { return drained.load() == 1; }));
  EXPECT_FALSE(RecvCommand(*w, kDisconnect).empty());
  w->Send({"", "MDPW01", kReply, addr, "", "too late"});
  EXPECT_TRUE(c->Recv(200ms).empty());
  auto s = Stats();
  EXPECT_EQ(s.expired, 1u);
  EXPECT_EQ(s.replies, 0u);
  EXPECT_EQ(drained.load(), 1);
}

// A second Drain keeps the first deadline; every `done` is posted exactly
// once, also one given after the drain finished.  Before issue 12 the
// second call was refused and its `done` never ran.
TEST_F(MajordomoDrainTest, EveryDoneIsPostedExactlyOnce) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "body"});
  auto [addr, body] = Take(*w);
  std::atomic<int> first{0}, second{0}, third{0};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->Drain(10000ms, [&] { ++first; });
    broker_->Drain(1ms, [&] { ++second; });
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(first.load() + second.load(), 0);  // the 1 ms did not apply
  w->Send({"", "MDPW01", kReply, addr, "", "answer"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
  ASSERT_TRUE(WaitFor([&] { return first.load() == 1 && second.load() == 1; }));
  bool inline_call = true;
  broker_thread_.Invoke([&](Reactor&) {
    broker_->Drain(10000ms, [&] { ++third; });
    inline_call = third.load() != 0;
  });
  EXPECT_FALSE(inline_call);
  ASSERT_TRUE(WaitFor([&] { return third.load() == 1; }));
  broker_thread_.Invoke([](Reactor&) {});
  EXPECT_EQ(first.load(), 1);
  EXPECT_EQ(second.load(), 1);
  EXPECT_EQ(third.load(), 1);
}

// Destroying a draining broker ends the drain: `done` is still posted once.
TEST_F(MajordomoDrainTest, DestroyingADrainingBrokerPostsDone) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "body"});
  Take(*w);
  std::atomic<int> drained{0};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->Drain(10000ms, [&] { ++drained; });
    broker_.reset();
    EXPECT_EQ(drained.load(), 0);  // posted, not called by the destructor
  });
  broker_thread_.Invoke([](Reactor&) {});
  EXPECT_EQ(drained.load(), 1);
}

TEST_F(MajordomoDrainTest, WorkerCountCountsEveryService) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  auto a = RawWorker("a");
  auto b1 = RawWorker("b");
  auto b2 = RawWorker("b");
  ASSERT_TRUE(WaitFor([&] { return Workers("b") == 2; }));
  broker_thread_.Invoke([&](Reactor&) {
    EXPECT_EQ(broker_->worker_count("a"), 1u);
    EXPECT_EQ(broker_->worker_count("b"), 2u);
    EXPECT_EQ(broker_->worker_count("none"), 0u);
    EXPECT_EQ(broker_->worker_count(), 3u);
  });
}

// The fail-over pair's request gate (set_request_gate(),
// zbrokers/ha/node.h): while it says no, every client request, MMI
// included, is dropped without an answer and counted; workers register and
// are served as always.
class MajordomoGateTest : public PrefetchTest {
 protected:
  void TearDown() override {
    // The gate captures the test's locals.
    if (broker_) {
      broker_thread_.Invoke([&](Reactor&) { broker_->set_request_gate({}); });
    }
    PrefetchTest::TearDown();
  }
};

TEST_F(MajordomoGateTest, ARefusingGateDropsRequestsAndMmiButKeepsWorkers) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  std::atomic<bool> open{false};
  std::atomic<int> asked{0};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->set_request_gate([&] {
      ++asked;
      return open.load();
    });
  });
  auto w = RawWorker("svc");  // a passive broker takes workers
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "first"});
  c->Send({"", "MDPC01", "mmi.service", "svc"});
  EXPECT_TRUE(c->Recv(300ms).empty());
  EXPECT_TRUE(w->Recv(50ms).empty());
  auto s = Stats();
  EXPECT_EQ(s.requests_refused_passive, 2u);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(Workers("svc"), 1u);
  EXPECT_EQ(asked.load(), 2);
  // The gate opens (the broker became active): served again.
  open = true;
  c->Send({"", "MDPC01", "mmi.service", "svc"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "mmi.service", "200"));
  c->Send({"", "MDPC01", "svc", "second"});
  auto [addr, body] = Take(*w);
  EXPECT_EQ(body, "second");
  w->Send({"", "MDPW01", kReply, addr, "", "answer"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
  EXPECT_EQ(asked.load(), 4);
  EXPECT_EQ(Stats().requests_refused_passive, 2u);
}

// A draining broker drops new requests as it always did, without asking the
// gate: asking could make a broker that is going away take over.
TEST_F(MajordomoGateTest, ADrainingBrokerDoesNotAskTheGate) {
  StartBroker(Prefetch(1));  // raw workers need no heartbeats
  std::atomic<int> asked{0};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->set_request_gate([&] {
      ++asked;
      return true;
    });
  });
  // A request held by a worker keeps the drain going (a broker with
  // nothing open is drained, and inert, at once).
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "held"});
  Take(*w);
  EXPECT_EQ(asked.load(), 1);
  broker_thread_.Invoke([&](Reactor&) { broker_->Drain(10000ms, {}); });
  c->Send({"", "MDPC01", "svc", "late"});
  ASSERT_TRUE(WaitFor([&] { return Stats().rejected_draining == 1u; }));
  EXPECT_EQ(asked.load(), 1);
  EXPECT_EQ(Stats().requests_refused_passive, 0u);
}

}  // namespace
}  // namespace zb
