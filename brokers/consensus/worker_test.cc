// Copyright 2026 The zbrokers Authors.
//
// ConsensusWorker against a raw ROUTER socket that plays the broker.  The
// ROUTER and the worker share one reactor on the test thread, so every test
// is a single-threaded loop driven by RunUntil().

#include "zbrokers/consensus/worker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/must.h"
#include "test/testing/raw_router.h"
#include "test/testing/wait.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using Clock = std::chrono::steady_clock;
using test::RunFor;
using test::RunUntil;

// One message the fake broker received: who sent it and its parsed body.
struct Received {
  std::string identity;
  ccp::Header header;
  std::vector<std::string> body;  // every body frame
  Clock::time_point at;
  std::vector<std::string> payload() const {
    return {body.begin() + static_cast<std::ptrdiff_t>(header.payload_index),
            body.end()};
  }
};

class FakeBroker {
 public:
  FakeBroker(zmq::context_t& ctx, Reactor& reactor, const std::string& bind)
      : router_(ctx, bind) {
    router_.Watch(reactor,
                  [this](std::span<zmq::message_t> f) { OnMessage(f); });
  }

  const std::string& endpoint() const { return router_.endpoint(); }
  std::vector<Received>& received() { return received_; }
  int malformed() const { return malformed_; }
  std::function<void(const Received&)> on_receive;

  std::vector<Received> OfType(ccp::MessageType type) const {
    std::vector<Received> out;
    for (const Received& r : received_) {
      if (r.header.type == type) out.push_back(r);
    }
    return out;
  }

  // Sends [identity][""][frames...].
  void Send(const std::string& identity, Frames body) {
    router_.SendTo(identity, std::move(body));
  }
  void SendRequest(const std::string& identity, std::string_view service,
                   ccp::SequenceId seq, std::vector<std::string> payload) {
    Frames body;
    ccp::AppendHeader(body, ccp::MessageType::kRequest, service, seq);
    for (const std::string& p : payload) body.push_back(Frame(p));
    Send(identity, std::move(body));
  }
  void SendHeartbeat(const std::string& identity) {
    Frames body;
    ccp::AppendHeader(body, ccp::MessageType::kHeartbeat);
    Send(identity, std::move(body));
  }
  void SendDisconnect(const std::string& identity, std::string_view service) {
    Frames body;
    ccp::AppendDisconnect(body, service);
    Send(identity, std::move(body));
  }

 private:
  void OnMessage(std::span<zmq::message_t> frames) {
    absl::StatusOr<std::span<zmq::message_t>> body = ccp::RouterBody(frames);
    if (!body.ok()) {
      ++malformed_;
      return;
    }
    absl::StatusOr<ccp::Header> h = ccp::ParseHeader(*body);
    if (!h.ok()) {
      ++malformed_;
      return;
    }
    Received r;
    r.identity = std::string(View(frames[0]));
    r.body = FramesToStrings(*body);
    r.header = *h;
    r.header.service = {};  // views into frames that are about to be reused
    r.at = Clock::now();
    received_.push_back(r);
    if (on_receive) on_receive(received_.back());
  }

  test::RawRouter router_;
  std::vector<Received> received_;
  int malformed_ = 0;
};

ConsensusWorker::Handler Echo() {
  return
      [](std::span<zmq::message_t> payload,
         ConsensusWorker::Responder responder) { responder.Succeed(payload); };
}

class ConsensusWorkerTest : public ::testing::TestWithParam<std::string> {
 protected:
  ConsensusWorkerTest() : broker_(ctx_, reactor_, GetParam()) {}

  // Waits for the first READY and returns the worker's identity.
  std::string AwaitReady() {
    EXPECT_TRUE(RunUntil(reactor_, [&] {
      return !broker_.OfType(ccp::MessageType::kReady).empty();
    }));
    auto ready = broker_.OfType(ccp::MessageType::kReady);
    return ready.empty() ? "" : ready.front().identity;
  }

  zmq::context_t ctx_;
  Reactor reactor_;
  FakeBroker broker_;
};

TEST_P(ConsensusWorkerTest, SendsReadyWithItsHeartbeatSettings) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "echo", Echo(),
      {.heartbeat_interval = milliseconds(250), .heartbeat_liveness = 4}));
  AwaitReady();
  auto ready = broker_.OfType(ccp::MessageType::kReady);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_THAT(
      ready[0].body,
      ElementsAre("CCp100", std::string(1, '\x01'), "echo",
                  std::string("\x00\x00\x00\xfa", 4), std::string(1, '\x04')));
  EXPECT_EQ(ready[0].header.heartbeat_interval_ms, 250u);
  EXPECT_EQ(ready[0].header.heartbeat_retries, 4);
}

TEST_P(ConsensusWorkerTest, AnswersSuccessAndFailureWithTheRequestSequence) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "calc",
      [](std::span<zmq::message_t> payload,
         ConsensusWorker::Responder responder) {
        if (View(payload[0]) == "bad") {
          responder.Fail(MakeFrames({"worker:nope", "detail"}));
        } else if (View(payload[0]) == "empty") {
          responder.Succeed(Frames{});
        } else {
          responder.Succeed(payload);
        }
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "calc", {7, 42}, {"a", "b"});
  broker_.SendRequest(id, "calc", {8, 42}, {"bad"});
  broker_.SendRequest(id, "calc", {(1ull << 40) + 3, 9}, {"empty"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReplySuccess).size() +
               broker_.OfType(ccp::MessageType::kReplyFailure).size() ==
           3;
  }));
  auto ok = broker_.OfType(ccp::MessageType::kReplySuccess);
  auto failed = broker_.OfType(ccp::MessageType::kReplyFailure);
  ASSERT_EQ(ok.size(), 2u);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(ok[0].header.sequence, (ccp::SequenceId{7, 42}));
  EXPECT_EQ(ok[0].body[2], "calc");
  EXPECT_THAT(ok[0].payload(), ElementsAre("a", "b"));
  EXPECT_EQ(ok[1].header.sequence, (ccp::SequenceId{(1ull << 40) + 3, 9}));
  EXPECT_THAT(ok[1].payload(), ElementsAre(""));  // empty -> one empty frame
  EXPECT_EQ(failed[0].header.sequence, (ccp::SequenceId{8, 42}));
  EXPECT_THAT(failed[0].payload(), ElementsAre("worker:nope", "detail"));
  EXPECT_EQ(worker->stats().requests, 3u);
  EXPECT_EQ(worker->stats().replies_success, 2u);
  EXPECT_EQ(worker->stats().replies_failure, 1u);
}

// Issue 10.1: the broker forwards a 2011 client's REQUEST without payload
// frames as sent; the worker hands the handler an empty payload (it used to
// drop the request as malformed, leaving it to the broker's deadline).
TEST_P(ConsensusWorkerTest, HandlesARequestWithoutPayloadFrames) {
  std::size_t seen = 99;
  std::unique_ptr<ConsensusWorker> worker = test::Must(
      ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "svc",
                              [&](std::span<zmq::message_t> payload,
                                  ConsensusWorker::Responder responder) {
                                seen = payload.size();
                                responder.Succeed(MakeFrames({"got nothing"}));
                              }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "svc", {3, 8}, {});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  EXPECT_EQ(seen, 0u);
  auto ok = broker_.OfType(ccp::MessageType::kReplySuccess);
  EXPECT_EQ(ok[0].header.sequence, (ccp::SequenceId{3, 8}));
  EXPECT_THAT(ok[0].payload(), ElementsAre("got nothing"));
  EXPECT_EQ(worker->stats().malformed, 0u);
}

TEST_P(ConsensusWorkerTest, AnswersLaterFromAnotherThread) {
  std::vector<std::thread> threads;
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "slow",
      [&](std::span<zmq::message_t> payload,
          ConsensusWorker::Responder responder) {
        Frames kept;
        for (auto& f : payload) kept.push_back(std::move(f));
        threads.emplace_back(
            [r = std::move(responder), kept = std::move(kept)]() mutable {
              std::this_thread::sleep_for(milliseconds(20));
              kept.push_back(Frame("from-thread"));
              r.Succeed(std::move(kept));
              EXPECT_FALSE(r.pending());
            });
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "slow", {1, 5}, {"x"});
  broker_.SendRequest(id, "slow", {2, 5}, {"y"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReplySuccess).size() == 2;
  }));
  for (auto& t : threads) t.join();
  auto ok = broker_.OfType(ccp::MessageType::kReplySuccess);
  std::vector<std::vector<std::string>> payloads;
  for (const auto& r : ok) {
    auto p = r.payload();
    p.insert(p.begin(), std::to_string(r.header.sequence.sequence));
    payloads.push_back(p);
  }
  EXPECT_THAT(payloads, ::testing::UnorderedElementsAre(
                            ElementsAre("1", "x", "from-thread"),
                            ElementsAre("2", "y", "from-thread")));
}

TEST_P(ConsensusWorkerTest, DroppedResponderAnswersFailure) {
  reactor_.SetErrorHandler([](std::exception_ptr, std::string_view) {});
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "lazy",
      [](std::span<zmq::message_t> payload, ConsensusWorker::Responder) {
        if (View(payload[0]) == "throw") throw std::runtime_error("boom");
        // Otherwise the responder is simply dropped.
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "lazy", {1, 3}, {"drop"});
  broker_.SendRequest(id, "lazy", {2, 3}, {"throw"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReplyFailure).size() == 2;
  }));
  for (const auto& r : broker_.OfType(ccp::MessageType::kReplyFailure)) {
    EXPECT_THAT(r.payload(),
                ElementsAre(std::string(ConsensusWorker::kUnansweredReason)));
    EXPECT_FALSE(ccp::IsBrokerFailure(MakeFrames({r.payload()[0]})));
  }
  EXPECT_EQ(worker->stats().unanswered, 2u);
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplySuccess).empty());
}

TEST_P(ConsensusWorkerTest, AnswersOnlyOnce) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "twice",
      [](std::span<zmq::message_t> payload,
         ConsensusWorker::Responder responder) {
        responder.Succeed(payload);
        responder.Fail(MakeFrames({"again"}));
        ConsensusWorker::Responder moved = std::move(responder);
        EXPECT_FALSE(moved.pending());
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "twice", {1, 3}, {"p"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  RunFor(reactor_, milliseconds(50));
  EXPECT_EQ(broker_.OfType(ccp::MessageType::kReplySuccess).size(), 1u);
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplyFailure).empty());
}

TEST_P(ConsensusWorkerTest, HeartbeatsWhileIdle) {
  const Clock::time_point start = Clock::now();
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "idle", Echo(),
      {.heartbeat_interval = milliseconds(30), .heartbeat_liveness = 100}));
  const std::string id = AwaitReady();
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kHeartbeat).size() >= 4;
  }));
  auto beats = broker_.OfType(ccp::MessageType::kHeartbeat);
  for (const auto& b : beats) EXPECT_EQ(b.identity, id);
  // At most one heartbeat per interval (never one per tick or per loop):
  // count against the time elapsed since before the worker existed.
  const auto elapsed = beats.back().at - start;
  EXPECT_LE(static_cast<double>(beats.size()),
            elapsed / milliseconds(30) + 1.0);
  EXPECT_EQ(worker->stats().reconnects, 0u);
}

// Workers made at different moments still tick on one grid (multiples of
// the tick period on the steady clock), so the workers sharing a reactor
// wake it together: their heartbeats leave at the grid points.
TEST_P(ConsensusWorkerTest, WorkersTickTogetherOnTheClockGrid) {
  constexpr milliseconds kInterval{200};
  constexpr milliseconds kPeriod = kInterval / 2;  // the tick period
  std::vector<std::unique_ptr<ConsensusWorker>> workers;
  for (int i = 0; i < 8; ++i) {
    workers.push_back(test::Must(ConsensusWorker::Create(
        reactor_, ctx_, broker_.endpoint(), "grid", Echo(),
        ConsensusWorker::Options{.heartbeat_interval = kInterval,
                                 .heartbeat_liveness = 100})));
    RunFor(reactor_, milliseconds(13));  // spread the workers' start times
  }
  ASSERT_TRUE(RunUntil(
      reactor_,
      [&] { return broker_.OfType(ccp::MessageType::kHeartbeat).size() >= 24; },
      milliseconds(10000)));
  const auto beats = broker_.OfType(ccp::MessageType::kHeartbeat);
  std::set<std::string> who;
  int on_grid = 0;
  for (const Received& b : beats) {
    who.insert(b.identity);
    // How long after the last grid point the fake broker saw it.
    if (b.at.time_since_epoch() % kPeriod < milliseconds(20)) ++on_grid;
  }
  EXPECT_EQ(who.size(), workers.size());
  // Unaligned, the start times (13 ms apart) would spread the beats over
  // the whole period: about a fifth within 20 ms of a grid point.  A busy
  // machine delays some.
  EXPECT_GE(on_grid, static_cast<int>(beats.size()) * 3 / 4)
      << on_grid << " of " << beats.size() << " heartbeats on the grid";
}

TEST_P(ConsensusWorkerTest, NoHeartbeatsWhileBusy) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "busy", Echo(),
      {.heartbeat_interval = milliseconds(200), .heartbeat_liveness = 5}));
  const std::string id = AwaitReady();
  std::uint64_t seq = 0;
  Clock::time_point last = Clock::now();
  Clock::duration longest_gap{0};
  Reactor::Timer t = *reactor_.Every(milliseconds(5), [&] {
    const Clock::time_point now = Clock::now();
    longest_gap = std::max(longest_gap, now - last);
    last = now;
    ++seq;
    broker_.SendRequest(id, "busy", {seq, 1}, {"x"});
  });
  RunFor(reactor_, milliseconds(700));
  t.Reset();
  EXPECT_GT(worker->stats().replies_success, 20u);
  // Requests and answers flow every few ms, so no tick ever finds a whole
  // quiet interval -- unless this thread itself stalled for half an
  // interval (an overloaded machine), which the test cannot rule out.
  if (longest_gap < milliseconds(100)) {
    EXPECT_EQ(worker->stats().heartbeats_sent, 0u);
  } else {
    EXPECT_LE(worker->stats().heartbeats_sent, 3u);
  }
}

TEST_P(ConsensusWorkerTest, ReconnectsWithNewIdentityWhenBrokerIsSilent) {
  const Clock::time_point start = Clock::now();
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc", Echo(),
      {.heartbeat_interval = milliseconds(20), .heartbeat_liveness = 3}));
  AwaitReady();
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReady).size() >= 2;
  }));
  auto ready = broker_.OfType(ccp::MessageType::kReady);
  EXPECT_NE(ready[0].identity, ready[1].identity);
  // Never before interval x liveness of silence (the first READY may have
  // arrived late, so measure from before the worker existed).
  EXPECT_GE(ready[1].at - start, milliseconds(60));
  EXPECT_GE(worker->stats().reconnects, 1u);
  // The new socket serves requests.
  broker_.SendRequest(ready[1].identity, "svc", {1, 1}, {"hi"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  EXPECT_EQ(broker_.OfType(ccp::MessageType::kReplySuccess)[0].identity,
            ready[1].identity);
}

// A broker that registered the worker but stayed silent (its answer late:
// it came back while the worker's socket was connecting, or it stalled)
// is told DISCONNECT on the socket the worker gives up, so it drops that
// registration instead of keeping it next to the new one.  Before, the
// abandoned registration stayed until a send to it failed or it expired;
// after a broker restart a request fanned out to it alone failed with
// "zb:worker-left" (ConsensusRestartTest).
TEST_P(ConsensusWorkerTest, AbandonedSocketSaysDisconnect) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc", Echo(),
      {.heartbeat_interval = milliseconds(20), .heartbeat_liveness = 3}));
  const std::string first = AwaitReady();
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    for (const auto& d : broker_.OfType(ccp::MessageType::kDisconnect)) {
      if (d.identity == first) return true;
    }
    return false;
  })) << "no DISCONNECT from the abandoned socket";
  // And registers again on a new socket.
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReady).size() >= 2;
  }));
  EXPECT_NE(broker_.OfType(ccp::MessageType::kReady)[1].identity, first);
}

TEST_P(ConsensusWorkerTest, StaysConnectedWhileBrokerHeartbeats) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc", Echo(),
      {.heartbeat_interval = milliseconds(100), .heartbeat_liveness = 4}));
  const std::string id = AwaitReady();
  Clock::time_point last = Clock::now();
  Clock::duration longest_gap{0};
  Reactor::Timer t = *reactor_.Every(milliseconds(10), [&] {
    const Clock::time_point now = Clock::now();
    longest_gap = std::max(longest_gap, now - last);
    last = now;
    broker_.SendHeartbeat(id);
  });
  RunFor(reactor_, milliseconds(600));
  t.Reset();
  // Only meaningful when this thread kept up (see NoHeartbeatsWhileBusy).
  if (longest_gap < milliseconds(200)) {
    EXPECT_EQ(broker_.OfType(ccp::MessageType::kReady).size(), 1u);
    EXPECT_EQ(worker->stats().reconnects, 0u);
  }
  EXPECT_GT(broker_.OfType(ccp::MessageType::kHeartbeat).size(), 0u);
}

TEST_P(ConsensusWorkerTest, BrokerDisconnectMakesItRegisterAgain) {
  ConsensusWorker::Responder kept;
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc",
      [&](std::span<zmq::message_t>, ConsensusWorker::Responder r) {
        kept = std::move(r);
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "svc", {1, 1}, {"held"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return kept.pending(); }));
  broker_.SendDisconnect(id, "svc");
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return broker_.OfType(ccp::MessageType::kReady).size() == 2;
  }));
  EXPECT_NE(broker_.OfType(ccp::MessageType::kReady)[1].identity, id);
  // The answer belongs to the forgotten registration: dropped.
  kept.Succeed(MakeFrames({"late"}));
  RunFor(reactor_, milliseconds(30));
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplySuccess).empty());
  EXPECT_EQ(worker->stats().dropped_answers, 1u);
}

// Issue 11.2: a broker refuses a READY beyond its caps or heartbeat bounds
// with DISCONNECT.  The worker must not answer that with a new socket and
// READY at once, forever: it waits, longer after each refusal in a row.
TEST_P(ConsensusWorkerTest, RefusedReadyIsRetriedWithBackoff) {
  broker_.on_receive = [&](const Received& r) {
    if (r.header.type == ccp::MessageType::kReady) {
      broker_.SendDisconnect(r.identity, "svc");
    }
  };
  std::unique_ptr<ConsensusWorker> worker = test::Must(
      ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "svc", Echo(),
                              {.refusal_backoff = milliseconds(20),
                               .refusal_backoff_max = milliseconds(80)}));
  RunFor(reactor_, milliseconds(400));
  auto readies = broker_.OfType(ccp::MessageType::kReady);
  // 20 + 40 + 80 + 80 + ... ms: about 6 READYs in 400 ms, not thousands.
  EXPECT_GE(readies.size(), 3u);
  EXPECT_LE(readies.size(), 10u);
  for (std::size_t i = 2; i < readies.size(); ++i) {
    EXPECT_GE(readies[i].at - readies[i - 1].at, milliseconds(35));
  }
  EXPECT_GE(worker->stats().refusals, 3u);

  // Accepted at last: the broker heartbeats, and a later DISCONNECT (an
  // expiry) makes the worker register again at once, on a new socket.
  broker_.on_receive = nullptr;
  RunFor(reactor_, milliseconds(120));
  const std::string id =
      broker_.OfType(ccp::MessageType::kReady).back().identity;
  broker_.SendHeartbeat(id);
  RunFor(reactor_, milliseconds(20));
  const std::size_t before = broker_.OfType(ccp::MessageType::kReady).size();
  broker_.SendDisconnect(id, "svc");
  ASSERT_TRUE(RunUntil(
      reactor_,
      [&] {
        return broker_.OfType(ccp::MessageType::kReady).size() == before + 1;
      },
      milliseconds(50)));
  EXPECT_NE(broker_.OfType(ccp::MessageType::kReady).back().identity, id);
}

// Issue 11.3: the worker's socket has a ZMQ_MAXMSGSIZE too.  (tcp only:
// libzmq does not check it over inproc.)
TEST_P(ConsensusWorkerTest, FrameOverMaxMessageSizeIsNotReceived) {
  if (GetParam().starts_with("inproc")) {
    GTEST_SKIP() << "libzmq does not apply ZMQ_MAXMSGSIZE over inproc";
  }
  std::vector<std::size_t> sizes;
  std::unique_ptr<ConsensusWorker> worker = test::Must(
      ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "svc",
                              [&](std::span<zmq::message_t> payload,
                                  ConsensusWorker::Responder responder) {
                                sizes.push_back(payload[0].size());
                                responder.Succeed(MakeFrames({"ok"}));
                              },
                              {.max_message_size = 4096}));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "svc", {1, 1}, {std::string(4097, 'x')});
  broker_.SendRequest(id, "svc", {2, 1}, {std::string(4096, 'x')});
  RunFor(reactor_, milliseconds(200));
  // The connection carrying the big frame was dropped (and with it what
  // followed on it); nothing of it reached the handler.
  for (std::size_t n : sizes) EXPECT_LE(n, 4096u);
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplySuccess).size() <= 1);
}

TEST_P(ConsensusWorkerTest, SendsDisconnectWhenDestroyed) {
  auto worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "bye", Echo()));
  const std::string id = AwaitReady();
  worker.reset();
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kDisconnect).empty();
  }));
  auto d = broker_.OfType(ccp::MessageType::kDisconnect);
  EXPECT_EQ(d[0].identity, id);
  EXPECT_THAT(d[0].body, ElementsAre("CCp100", std::string(1, '\x06'), "bye"));
}

TEST_P(ConsensusWorkerTest, ShutdownSendsDisconnectAndDropsLaterAnswers) {
  ConsensusWorker::Responder kept;
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc",
      [&](std::span<zmq::message_t>, ConsensusWorker::Responder r) {
        kept = std::move(r);
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "svc", {1, 1}, {"held"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return kept.pending(); }));
  worker->Shutdown();
  EXPECT_FALSE(worker->running());
  kept.Succeed(MakeFrames({"late"}));
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kDisconnect).empty();
  }));
  RunFor(reactor_, milliseconds(30));
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplySuccess).empty());
  EXPECT_EQ(worker->stats().dropped_answers, 1u);
}

TEST_P(ConsensusWorkerTest, ResponderOutlivingTheWorkerIsHarmless) {
  ConsensusWorker::Responder kept;
  auto worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc",
      [&](std::span<zmq::message_t>, ConsensusWorker::Responder r) {
        kept = std::move(r);
      }));
  const std::string id = AwaitReady();
  broker_.SendRequest(id, "svc", {1, 1}, {"held"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return kept.pending(); }));
  worker.reset();
  // Answered from another thread after the worker is gone: dropped, no crash.
  std::thread t([&] { kept.Succeed(MakeFrames({"late"})); });
  t.join();
  EXPECT_FALSE(kept.pending());
  RunFor(reactor_, milliseconds(30));
  EXPECT_TRUE(broker_.OfType(ccp::MessageType::kReplySuccess).empty());
}

TEST_P(ConsensusWorkerTest, CountsMalformedMessagesAndKeepsServing) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, broker_.endpoint(), "svc", Echo()));
  const std::string id = AwaitReady();
  broker_.Send(id, MakeFrames({"XXp100", "\x03"}));         // wrong tag
  broker_.Send(id, MakeFrames({"CCp100", "\x09"}));         // unknown type
  broker_.Send(id, MakeFrames({"CCp100", "\x03", "svc"}));  // truncated
  broker_.Send(id, MakeFrames({"CCp100", "\x04", "svc", "123456789012",
                               "x"}));  // a reply is not for workers
  broker_.SendRequest(id, "other", {1, 1}, {"wrong service"});
  broker_.SendRequest(id, "svc", {2, 1}, {"fine"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !broker_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  EXPECT_EQ(worker->stats().malformed, 5u);
  EXPECT_THAT(broker_.OfType(ccp::MessageType::kReplySuccess)[0].payload(),
              ElementsAre("fine"));
  // The misrouted request was answered rather than left open.
  auto failed = broker_.OfType(ccp::MessageType::kReplyFailure);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].header.sequence, (ccp::SequenceId{1, 1}));
}

TEST_P(ConsensusWorkerTest, RejectsBadOptions) {
  EXPECT_FALSE(
      ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "", Echo())
          .ok());
  EXPECT_FALSE(ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "s",
                                       Echo(), {.heartbeat_liveness = 0})
                   .ok());
  EXPECT_FALSE(ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "s",
                                       Echo(), {.heartbeat_liveness = 256})
                   .ok());
  EXPECT_FALSE(ConsensusWorker::Create(reactor_, ctx_, broker_.endpoint(), "s",
                                       Echo(),
                                       {.heartbeat_interval = milliseconds(0)})
                   .ok());
  // A bad endpoint: no worker at all (it used to be a worker that was not
  // running()).
  EXPECT_FALSE(
      ConsensusWorker::Create(reactor_, ctx_, "nonsense://x", "s", Echo())
          .ok());
}

// --- One worker, many brokers (issue 14) ------------------------------------

// Two fake brokers on one reactor; the worker is given both as a list.
class ConsensusWorkerManyBrokersTest : public ::testing::Test {
 protected:
  ConsensusWorkerManyBrokersTest()
      : a_(ctx_, reactor_, "tcp://127.0.0.1:*"),
        b_(ctx_, reactor_, "tcp://127.0.0.1:*") {}

  std::string List() const { return a_.endpoint() + "," + b_.endpoint(); }

  // Waits for `broker`'s READY number `n` (1 = the first) and returns the
  // identity it came from.
  std::string AwaitReady(FakeBroker& broker, std::size_t n = 1) {
    EXPECT_TRUE(RunUntil(reactor_, [&] {
      return broker.OfType(ccp::MessageType::kReady).size() >= n;
    }));
    auto ready = broker.OfType(ccp::MessageType::kReady);
    return ready.size() < n ? "" : ready[n - 1].identity;
  }

  zmq::context_t ctx_;
  Reactor reactor_;
  FakeBroker a_;
  FakeBroker b_;
};

TEST_F(ConsensusWorkerManyBrokersTest, EveryBrokerGetsReadyAndHeartbeats) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, List(), "echo", Echo(),
      {.heartbeat_interval = milliseconds(40), .heartbeat_liveness = 50}));
  EXPECT_EQ(worker->stats().brokers, 2u);
  EXPECT_EQ(worker->stats().brokers_connected, 0u);  // nobody answered yet
  const std::string ida = AwaitReady(a_);
  const std::string idb = AwaitReady(b_);
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return a_.OfType(ccp::MessageType::kHeartbeat).size() >= 2 &&
           b_.OfType(ccp::MessageType::kHeartbeat).size() >= 2;
  }));
  for (FakeBroker* broker : {&a_, &b_}) {
    auto ready = broker->OfType(ccp::MessageType::kReady);
    ASSERT_EQ(ready.size(), 1u);
    EXPECT_EQ(ready[0].header.heartbeat_interval_ms, 40u);
    EXPECT_EQ(ready[0].header.heartbeat_retries, 50);
  }
  // A heartbeat from a broker is what counts it as connected.
  a_.SendHeartbeat(ida);
  ASSERT_TRUE(RunUntil(reactor_,
                       [&] { return worker->stats().brokers_connected == 1; }));
  b_.SendHeartbeat(idb);
  ASSERT_TRUE(RunUntil(reactor_,
                       [&] { return worker->stats().brokers_connected == 2; }));
  worker.reset();
  // Shutdown says goodbye to both.
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !a_.OfType(ccp::MessageType::kDisconnect).empty() &&
           !b_.OfType(ccp::MessageType::kDisconnect).empty();
  }));
}

// Both brokers send requests with the SAME sequence ids; the answers are
// given out of order, some later from other threads, and each must reach
// the broker its request came from.
TEST_F(ConsensusWorkerManyBrokersTest, EachAnswerGoesToItsOwnBroker) {
  std::vector<ConsensusWorker::Responder> held;
  std::vector<std::string> held_payload;
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, List(), "svc",
      [&](std::span<zmq::message_t> payload, ConsensusWorker::Responder r) {
        const std::string p(View(payload[0]));
        if (p.ends_with("now")) {
          r.Succeed(payload);  // answered inside the handler
          return;
        }
        held.push_back(std::move(r));
        held_payload.push_back(p);
      }));
  const std::string ida = AwaitReady(a_);
  const std::string idb = AwaitReady(b_);
  for (int i = 0; i < 20; ++i) {
    const ccp::SequenceId seq{static_cast<std::uint64_t>(i), 1};
    const std::string kind = i % 2 == 0 ? "now" : "later";
    a_.SendRequest(ida, "svc", seq, {"a-" + kind});
    b_.SendRequest(idb, "svc", seq, {"b-" + kind});
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] { return held.size() == 20; }));
  // Half the held ones from the reactor thread in reverse order, half from
  // other threads.
  std::vector<std::thread> threads;
  for (std::size_t i = held.size(); i-- > 0;) {
    Frames answer = MakeFrames({held_payload[i]});
    if (i % 2 == 0) {
      held[i].Succeed(std::move(answer));
    } else {
      threads.emplace_back(
          [r = std::move(held[i]), answer = std::move(answer)]() mutable {
            r.Succeed(std::move(answer));
          });
    }
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return a_.OfType(ccp::MessageType::kReplySuccess).size() == 20 &&
           b_.OfType(ccp::MessageType::kReplySuccess).size() == 20;
  }));
  for (auto [broker, prefix] : {std::pair{&a_, "a-"}, std::pair{&b_, "b-"}}) {
    std::set<std::uint64_t> sequences;
    for (const Received& r : broker->OfType(ccp::MessageType::kReplySuccess)) {
      ASSERT_EQ(r.payload().size(), 1u);
      EXPECT_TRUE(r.payload()[0].starts_with(prefix)) << r.payload()[0];
      EXPECT_EQ(r.payload()[0].ends_with("now"),
                r.header.sequence.sequence % 2 == 0);
      sequences.insert(r.header.sequence.sequence);
    }
    EXPECT_EQ(sequences.size(), 20u);  // each request answered once
  }
  EXPECT_EQ(worker->stats().requests, 40u);
  EXPECT_EQ(worker->stats().replies_success, 40u);
  EXPECT_EQ(worker->stats().dropped_answers, 0u);
}

// A DISCONNECT from one broker re-registers that session only; an answer
// held for the old registration is dropped, the other broker's is sent.
TEST_F(ConsensusWorkerManyBrokersTest, DisconnectFromOneLeavesTheOtherAlone) {
  std::vector<ConsensusWorker::Responder> held;
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, List(), "svc",
      [&](std::span<zmq::message_t>, ConsensusWorker::Responder r) {
        held.push_back(std::move(r));
      }));
  const std::string ida = AwaitReady(a_);
  const std::string idb = AwaitReady(b_);
  a_.SendRequest(ida, "svc", {1, 1}, {"a"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return held.size() == 1; }));
  b_.SendRequest(idb, "svc", {1, 1}, {"b"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return held.size() == 2; }));
  ASSERT_EQ(worker->stats().brokers_connected, 2u);
  a_.SendDisconnect(ida, "svc");
  const std::string ida2 = AwaitReady(a_, 2);
  EXPECT_NE(ida2, ida);
  EXPECT_EQ(worker->stats().reconnects, 1u);
  EXPECT_EQ(worker->stats().brokers_connected, 1u);
  held[0].Succeed(MakeFrames({"late-a"}));
  held[1].Succeed(MakeFrames({"b-ok"}));
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !b_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  RunFor(reactor_, milliseconds(30));
  EXPECT_TRUE(a_.OfType(ccp::MessageType::kReplySuccess).empty());
  EXPECT_EQ(b_.OfType(ccp::MessageType::kReplySuccess)[0].identity, idb);
  EXPECT_EQ(worker->stats().dropped_answers, 1u);
  // b never saw a second READY, and a's new registration serves.
  EXPECT_EQ(b_.OfType(ccp::MessageType::kReady).size(), 1u);
  a_.SendRequest(ida2, "svc", {2, 1}, {"a2"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return held.size() == 3; }));
  held[2].Succeed(MakeFrames({"a2-ok"}));
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !a_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  EXPECT_EQ(a_.OfType(ccp::MessageType::kReplySuccess)[0].identity, ida2);
}

// A broker that goes silent is re-registered with (new socket, READY); the
// other session keeps heartbeating and is never reconnected.
TEST_F(ConsensusWorkerManyBrokersTest, SilentBrokerDoesNotDisturbTheOther) {
  std::unique_ptr<ConsensusWorker> worker = test::Must(ConsensusWorker::Create(
      reactor_, ctx_, List(), "svc", Echo(),
      {.heartbeat_interval = milliseconds(20), .heartbeat_liveness = 3}));
  AwaitReady(a_);
  const std::string idb = AwaitReady(b_);
  // b heartbeats on every message it gets from the worker; a says nothing.
  b_.on_receive = [&](const Received& r) {
    if (r.header.type == ccp::MessageType::kHeartbeat) b_.SendHeartbeat(idb);
  };
  b_.SendHeartbeat(idb);
  AwaitReady(a_, 3);  // a was given up on, twice
  EXPECT_EQ(b_.OfType(ccp::MessageType::kReady).size(), 1u);
  EXPECT_GE(worker->stats().reconnects, 2u);
  EXPECT_EQ(worker->stats().brokers_connected, 1u);
  b_.SendRequest(idb, "svc", {5, 5}, {"still"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return !b_.OfType(ccp::MessageType::kReplySuccess).empty();
  }));
  EXPECT_THAT(b_.OfType(ccp::MessageType::kReplySuccess)[0].payload(),
              ElementsAre("still"));
}

TEST_F(ConsensusWorkerManyBrokersTest, BadListsAreRefused) {
  for (const std::string& list : {std::string(""), a_.endpoint() + ",",
                                  a_.endpoint() + ",," + b_.endpoint(),
                                  a_.endpoint() + "," + a_.endpoint(),
                                  a_.endpoint() + ",tcp://127.0.0.1:99999"}) {
    absl::StatusOr<std::unique_ptr<ConsensusWorker>> w =
        ConsensusWorker::Create(reactor_, ctx_, list, "svc", Echo());
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << list;
  }
  RunFor(reactor_, milliseconds(30));
  // Nothing was half-started.
  EXPECT_TRUE(a_.OfType(ccp::MessageType::kReady).empty());
}

INSTANTIATE_TEST_SUITE_P(Transports, ConsensusWorkerTest,
                         ::testing::Values("inproc://consensus-worker-test",
                                           "tcp://127.0.0.1:*"),
                         [](const auto& info) {
                           return info.param.starts_with("tcp") ? "tcp"
                                                                : "inproc";
                         });

}  // namespace
}  // namespace zb
