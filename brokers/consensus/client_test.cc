// Copyright 2026 The zbrokers Authors.
//
// ConsensusClient against a raw ROUTER socket that plays the broker.  The
// ROUTER and the client share one reactor on the test thread, so each test
// is a single-threaded loop driven by RunUntil(); the blocking wrapper is
// tested against a fake broker on its own ReactorThread.

#include "zbrokers/consensus/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/raw_router.h"
#include "test/testing/wait.h"
#include "zbrokers/consensus/blocking_client.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using test::RunFor;
using test::RunUntil;
using Result = ConsensusClient::Result;
using Outcome = ConsensusClient::Outcome;
using FailedBy = ConsensusClient::FailedBy;

// One message the fake broker received.
struct Received {
  std::string identity;
  ccp::MessageType type;
  std::string service;
  ccp::SequenceId sequence;
  std::vector<std::string> payload;
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
  std::vector<Received> requests() const {
    std::vector<Received> out;
    for (const Received& r : received_) {
      if (r.type == ccp::MessageType::kRequest) out.push_back(r);
    }
    return out;
  }
  // Called for every message received; may answer with Reply().
  std::function<void(const Received&)> on_receive;

  void Send(const std::string& identity, Frames body) {
    router_.SendTo(identity, std::move(body));
  }
  // Answers `to` (a received REQUEST) with a reply of `type`.
  void Reply(const Received& to, ccp::MessageType type,
             std::vector<std::string> payload) {
    Frames body;
    ccp::AppendHeader(body, type, to.service, to.sequence);
    for (const std::string& p : payload) body.push_back(Frame(p));
    Send(to.identity, std::move(body));
  }
  void Echo(const Received& to) {
    Frames body;
    ccp::AppendHeader(body, ccp::MessageType::kPing);
    Send(to.identity, std::move(body));
  }

 private:
  void OnMessage(std::span<zmq::message_t> frames) {
    absl::StatusOr<std::span<zmq::message_t>> body = ccp::RouterBody(frames);
    ASSERT_TRUE(body.ok()) << body.status();
    absl::StatusOr<ccp::Header> h = ccp::ParseHeader(*body);
    ASSERT_TRUE(h.ok()) << h.status();
    Received r;
    r.identity = std::string(View(frames[0]));
    r.type = h->type;
    r.service = std::string(h->service);
    r.sequence = h->sequence;
    r.payload = FramesToStrings(body->subspan(h->payload_index));
    received_.push_back(r);
    if (on_receive) on_receive(r);
  }

  test::RawRouter router_;
  std::vector<Received> received_;
};

// Collects results by request number and counts callback calls.
struct Results {
  std::map<int, std::vector<Result>> by_id;
  int calls = 0;
  ConsensusClient::Callback For(int id) {
    return [this, id](Result&& r) {
      ++calls;
      by_id[id].push_back(std::move(r));
    };
  }
  const Result& Only(int id) {
    EXPECT_EQ(by_id[id].size(), 1u) << "request " << id;
    if (by_id[id].empty()) by_id[id].emplace_back();
    return by_id[id].front();
  }
};

class ConsensusClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  ConsensusClientTest() : broker_(ctx_, reactor_, GetParam()) {}

  std::unique_ptr<ConsensusClient> MakeClient(
      ConsensusClient::Options options = {}) {
    absl::StatusOr<std::unique_ptr<ConsensusClient>> c =
        ConsensusClient::Create(reactor_, ctx_, broker_.endpoint(), options);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(c).value();
  }

  zmq::context_t ctx_;
  Reactor reactor_;
  FakeBroker broker_;
  Results results_;
};

TEST_P(ConsensusClientTest, ConsecutiveSequenceIdsAndPayloadsOnSuccess) {
  broker_.on_receive = [&](const Received& r) {
    std::vector<std::string> payload = r.payload;
    payload.push_back("second-worker");
    broker_.Reply(r, ccp::MessageType::kReplySuccess, payload);
  };
  auto client = MakeClient({.client_id = 0xabcdef01});
  EXPECT_EQ(client->client_id(), 0xabcdef01u);
  client->Request("echo", MakeFrames({"a", "b"}), {}, results_.For(1));
  client->Request("echo", MakeFrames({"c"}), {}, results_.For(2));
  client->Request("echo", Frames{}, {}, results_.For(3));
  EXPECT_EQ(client->open_requests(), 3u);
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 3; }));

  auto reqs = broker_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(
        reqs[i].sequence,
        (ccp::SequenceId{static_cast<std::uint64_t>(i + 1), 0xabcdef01u}));
    EXPECT_EQ(reqs[i].service, "echo");
    EXPECT_EQ(reqs[i].identity, reqs[0].identity);
  }
  EXPECT_THAT(reqs[2].payload, ElementsAre(""));  // empty -> one empty frame

  const Result& r1 = results_.Only(1);
  EXPECT_TRUE(r1.ok());
  EXPECT_EQ(r1.failed_by, FailedBy::kNone);
  EXPECT_EQ(r1.attempts, 1);
  EXPECT_THAT(FramesToStrings(r1.payload),
              ElementsAre("a", "b", "second-worker"));
  EXPECT_THAT(FramesToStrings(results_.Only(2).payload),
              ElementsAre("c", "second-worker"));
  EXPECT_THAT(FramesToStrings(results_.Only(3).payload),
              ElementsAre("", "second-worker"));
  EXPECT_EQ(client->open_requests(), 0u);
  EXPECT_EQ(client->stats().successes, 3u);
}

TEST_P(ConsensusClientTest, TellsWorkerFailuresFromBrokerFailures) {
  broker_.on_receive = [&](const Received& r) {
    if (r.payload[0] == "worker") {
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {"disk full", "details"});
    } else {
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {std::string(ccp::kReasonNoWorkers), "no workers"});
    }
  };
  auto client = MakeClient();
  client->Request("svc", MakeFrames({"worker"}), {}, results_.For(1));
  client->Request("svc", MakeFrames({"broker"}), {}, results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  const Result& w = results_.Only(1);
  EXPECT_EQ(w.outcome, Outcome::kFailure);
  EXPECT_EQ(w.failed_by, FailedBy::kWorker);
  EXPECT_EQ(w.reason, "");
  EXPECT_THAT(FramesToStrings(w.payload), ElementsAre("disk full", "details"));
  const Result& b = results_.Only(2);
  EXPECT_EQ(b.outcome, Outcome::kFailure);
  EXPECT_EQ(b.failed_by, FailedBy::kBroker);
  EXPECT_EQ(b.reason, ccp::kReasonNoWorkers);
  EXPECT_THAT(FramesToStrings(b.payload),
              ElementsAre(std::string(ccp::kReasonNoWorkers), "no workers"));
}

TEST_P(ConsensusClientTest, TimeoutEndsOnceAndLateReplyIsDropped) {
  auto client = MakeClient();
  client->Request("svc", MakeFrames({"x"}), {.timeout = milliseconds(50)},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(results_.Only(1).outcome, Outcome::kTimeout);
  EXPECT_EQ(results_.Only(1).attempts, 1);
  // The broker answers after all: nothing happens but a counter.
  broker_.Reply(broker_.requests().at(0), ccp::MessageType::kReplySuccess,
                {"late"});
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return client->stats().stale_replies == 1; }));
  RunFor(reactor_, milliseconds(30));
  EXPECT_EQ(results_.calls, 1);
  EXPECT_EQ(client->stats().timeouts, 1u);
}

TEST_P(ConsensusClientTest, RetriesUseTheNextSequenceNumber) {
  // Ignore two attempts, answer the third.
  broker_.on_receive = [&](const Received& r) {
    if (broker_.requests().size() == 3) {
      broker_.Reply(r, ccp::MessageType::kReplySuccess, {"third"});
    }
  };
  auto client = MakeClient({.reopen_after_timeouts = 0});
  client->Request("svc", MakeFrames({"p1", "p2"}),
                  {.timeout = milliseconds(40), .retries = 3}, results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  const Result& r = results_.Only(1);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 3);
  EXPECT_THAT(FramesToStrings(r.payload), ElementsAre("third"));
  auto reqs = broker_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].sequence.sequence, i + 1);
    EXPECT_EQ(reqs[i].sequence.client_id, client->client_id());
    EXPECT_EQ(reqs[i].identity, reqs[0].identity);
    EXPECT_THAT(reqs[i].payload, ElementsAre("p1", "p2"));
  }
  EXPECT_EQ(client->stats().retries, 2u);
  EXPECT_EQ(client->stats().reopens, 0u);
}

TEST_P(ConsensusClientTest, RetriesExhaustedEndInTimeout) {
  auto client = MakeClient({.reopen_after_timeouts = 0});
  client->Request("svc", MakeFrames({"p"}),
                  {.timeout = milliseconds(30), .retries = 2}, results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(results_.Only(1).outcome, Outcome::kTimeout);
  EXPECT_EQ(results_.Only(1).attempts, 3);
  EXPECT_EQ(broker_.requests().size(), 3u);
  RunFor(reactor_, milliseconds(60));
  EXPECT_EQ(results_.calls, 1);
  EXPECT_EQ(broker_.requests().size(), 3u);
}

TEST_P(ConsensusClientTest, ReplyToAnEarlierAttemptCompletesTheRequest) {
  broker_.on_receive = [&](const Received&) {
    // When the retry arrives, answer the first attempt (and later the retry).
    if (broker_.requests().size() == 2) {
      broker_.Reply(broker_.requests()[0], ccp::MessageType::kReplySuccess,
                    {"first"});
      broker_.Reply(broker_.requests()[1], ccp::MessageType::kReplySuccess,
                    {"second"});
    }
  };
  auto client = MakeClient({.reopen_after_timeouts = 0});
  client->Request("svc", MakeFrames({"p"}),
                  {.timeout = milliseconds(40), .retries = 1}, results_.For(1));
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return client->stats().stale_replies == 1; }));
  EXPECT_THAT(FramesToStrings(results_.Only(1).payload), ElementsAre("first"));
  EXPECT_EQ(results_.calls, 1);
}

TEST_P(ConsensusClientTest, ReopensWithNewClientIdAfterTimeoutsInARow) {
  auto client = MakeClient({.reopen_after_timeouts = 2});
  const std::uint32_t first_id = client->client_id();
  client->Request("svc", MakeFrames({"1"}), {.timeout = milliseconds(30)},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(client->stats().reopens, 0u);
  client->Request("svc", MakeFrames({"2"}), {.timeout = milliseconds(30)},
                  results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_EQ(client->stats().reopens, 1u);
  EXPECT_NE(client->client_id(), first_id);
  EXPECT_EQ(client->next_sequence(), 1u);

  broker_.on_receive = [&](const Received& r) {
    broker_.Reply(r, ccp::MessageType::kReplySuccess, {"ok"});
  };
  client->Request("svc", MakeFrames({"3"}), {}, results_.For(3));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 3; }));
  EXPECT_TRUE(results_.Only(3).ok());
  auto reqs = broker_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].sequence, (ccp::SequenceId{2, first_id}));
  EXPECT_EQ(reqs[2].sequence, (ccp::SequenceId{1, client->client_id()}));
  EXPECT_NE(reqs[2].identity, reqs[0].identity);  // a new socket
}

TEST_P(ConsensusClientTest, AnswerInBetweenResetsTheTimeoutCount) {
  auto client = MakeClient({.reopen_after_timeouts = 2});
  client->Request("svc", MakeFrames({"1"}), {.timeout = milliseconds(30)},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  client->Ping(milliseconds(1000), [](absl::Status) {});
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return broker_.received().size() == 2; }));
  broker_.Echo(broker_.received()[1]);
  RunFor(reactor_, milliseconds(20));
  client->Request("svc", MakeFrames({"2"}), {.timeout = milliseconds(30)},
                  results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_EQ(client->stats().attempt_timeouts, 2u);
  EXPECT_EQ(client->stats().reopens, 0u);
}

// Issue 10.2: "zb:bad-sequence" now only means that the broker ties our
// client id to another socket or saw a gap.  A new client id fixes that on
// the same socket; reopening the socket would lose every other attempt in
// flight on it.
TEST_P(ConsensusClientTest, BadSequenceTakesANewClientIdAndResends) {
  std::uint32_t rejected_id = 0;
  broker_.on_receive = [&](const Received& r) {
    if (rejected_id == 0 || r.sequence.client_id == rejected_id) {
      rejected_id = r.sequence.client_id;
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {std::string(ccp::kReasonBadSequence), "another socket"});
    } else {
      broker_.Reply(r, ccp::MessageType::kReplySuccess, {"welcome back"});
    }
  };
  auto client = MakeClient();
  const std::uint32_t first_id = client->client_id();
  client->Request("svc", MakeFrames({"a"}),
                  {.timeout = milliseconds(2000), .retries = 1},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_TRUE(results_.Only(1).ok());
  EXPECT_EQ(results_.Only(1).attempts, 2);
  auto reqs = broker_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].sequence, (ccp::SequenceId{1, first_id}));
  EXPECT_NE(reqs[1].sequence.client_id, first_id);
  EXPECT_EQ(reqs[1].sequence.sequence, 1u);
  EXPECT_EQ(reqs[1].identity, reqs[0].identity);  // the same socket
  EXPECT_THAT(reqs[1].payload, ElementsAre("a"));
  EXPECT_EQ(client->stats().rejected, 1u);
  EXPECT_EQ(client->stats().new_client_ids, 1u);
  EXPECT_EQ(client->stats().reopens, 0u);
}

// The other request in flight when one is rejected still gets its answer
// (it used to be lost with the reopened socket and end as a timeout).
TEST_P(ConsensusClientTest, BadSequenceKeepsOtherAttemptsInFlightAnswerable) {
  std::vector<Received> held;
  broker_.on_receive = [&](const Received& r) {
    if (r.type != ccp::MessageType::kRequest) return;
    if (r.payload.at(0) == "second") {
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {std::string(ccp::kReasonBadSequence), "a gap"});
    } else {
      held.push_back(r);
    }
  };
  auto client = MakeClient();
  client->Request("svc", MakeFrames({"first"}), {.timeout = milliseconds(3000)},
                  results_.For(1));
  client->Request("svc", MakeFrames({"second"}),
                  {.timeout = milliseconds(3000)}, results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(results_.Only(2).reason, ccp::kReasonBadSequence);
  ASSERT_EQ(held.size(), 1u);
  broker_.Reply(held[0], ccp::MessageType::kReplySuccess, {"late but fine"});
  ASSERT_TRUE(RunUntil(
      reactor_, [&] { return results_.calls == 2; }, milliseconds(1000)));
  EXPECT_TRUE(results_.Only(1).ok());
  EXPECT_THAT(FramesToStrings(results_.Only(1).payload),
              ElementsAre("late but fine"));
}

TEST_P(ConsensusClientTest, BadSequenceWithoutRetriesFails) {
  broker_.on_receive = [&](const Received& r) {
    if (r.payload[0] == "a") {
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {std::string(ccp::kReasonBadSequence), "unknown client"});
    } else {
      broker_.Reply(r, ccp::MessageType::kReplySuccess, {"ok"});
    }
  };
  auto client = MakeClient();
  const std::uint32_t first_id = client->client_id();
  client->Request("svc", MakeFrames({"a"}), {}, results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(results_.Only(1).failed_by, FailedBy::kBroker);
  EXPECT_EQ(results_.Only(1).reason, ccp::kReasonBadSequence);
  client->Request("svc", MakeFrames({"b"}), {}, results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_TRUE(results_.Only(2).ok());
  EXPECT_EQ(broker_.requests()[1].sequence,
            (ccp::SequenceId{1, client->client_id()}));
  EXPECT_NE(client->client_id(), first_id);
}

// Issue 10.3: a client started together with its workers got
// "zb:no-workers" at once.  With retry_no_workers it sends again, with a
// growing backoff and a new sequence number each time, within its timeout.
TEST_P(ConsensusClientTest, RetryNoWorkersResendsWithBackoffUntilServed) {
  std::vector<Clock::time_point> at;
  broker_.on_receive = [&](const Received& r) {
    if (r.type != ccp::MessageType::kRequest) return;
    at.push_back(Clock::now());
    if (at.size() < 4) {
      broker_.Reply(r, ccp::MessageType::kReplyFailure,
                    {std::string(ccp::kReasonNoWorkers), "no workers yet"});
    } else {
      broker_.Reply(r, ccp::MessageType::kReplySuccess, {"finally"});
    }
  };
  auto client = MakeClient({.no_workers_backoff = milliseconds(10),
                            .no_workers_backoff_max = milliseconds(25)});
  client->Request("svc", MakeFrames({"p"}),
                  {.timeout = milliseconds(3000), .retry_no_workers = true},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  const Result& r = results_.Only(1);
  EXPECT_TRUE(r.ok()) << r.reason;
  EXPECT_THAT(FramesToStrings(r.payload), ElementsAre("finally"));
  EXPECT_EQ(r.attempts, 4);
  auto reqs = broker_.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].sequence.sequence, i + 1);     // each a new number
    EXPECT_THAT(reqs[i].payload, ElementsAre("p"));  // the same payload
  }
  // Backoff 10 ms, 20 ms, then capped at 25 ms (never early).
  EXPECT_GE(at[1] - at[0], milliseconds(10));
  EXPECT_GE(at[2] - at[1], milliseconds(20));
  EXPECT_GE(at[3] - at[2], milliseconds(25));
  EXPECT_EQ(client->stats().no_workers_resends, 3u);
}

// Within the request's timeout only: then it ends with the broker's own
// answer (a failure, not a timeout).  Without the option it ends at once.
TEST_P(ConsensusClientTest, RetryNoWorkersStopsWithinTheTimeout) {
  broker_.on_receive = [&](const Received& r) {
    if (r.type != ccp::MessageType::kRequest) return;
    broker_.Reply(r, ccp::MessageType::kReplyFailure,
                  {std::string(ccp::kReasonNoWorkers), "nobody"});
  };
  auto client = MakeClient({.no_workers_backoff = milliseconds(10),
                            .no_workers_backoff_max = milliseconds(40)});
  const auto start = Clock::now();
  client->Request("svc", MakeFrames({"p"}),
                  {.timeout = milliseconds(300), .retry_no_workers = true},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  const auto took = Clock::now() - start;
  EXPECT_EQ(results_.Only(1).outcome, ConsensusClient::Outcome::kFailure);
  EXPECT_EQ(results_.Only(1).reason, ccp::kReasonNoWorkers);
  EXPECT_GE(results_.Only(1).attempts, 5);
  // Kept trying for most of the timeout, and ended by it (the bound is
  // loose: a loaded machine fires the deadline timer late).
  EXPECT_GE(took, milliseconds(200));
  EXPECT_LT(took, milliseconds(1500));

  client->Request("svc", MakeFrames({"p"}), {.timeout = milliseconds(300)},
                  results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_EQ(results_.Only(2).reason, ccp::kReasonNoWorkers);
  EXPECT_EQ(results_.Only(2).attempts, 1);
}

// Issue 11.3: the client's socket has a ZMQ_MAXMSGSIZE too: a reply frame
// over it is never received (libzmq drops the connection; tcp only).
TEST_P(ConsensusClientTest, ReplyFrameOverMaxMessageSizeIsNotReceived) {
  if (GetParam().starts_with("inproc")) {
    GTEST_SKIP() << "libzmq does not apply ZMQ_MAXMSGSIZE over inproc";
  }
  broker_.on_receive = [&](const Received& r) {
    if (r.type != ccp::MessageType::kRequest) return;
    broker_.Reply(r, ccp::MessageType::kReplySuccess,
                  {std::string(r.payload.at(0) == "big" ? 4097 : 4096, 'z')});
  };
  // libzmq does not reconnect a connection it dropped for a protocol error
  // (an oversized frame is one): the client's own rule -- reopen after
  // timeouts with nothing heard -- brings it back.
  auto client =
      MakeClient({.reopen_after_timeouts = 1, .max_message_size = 4096});
  client->Request("svc", MakeFrames({"big"}), {.timeout = milliseconds(300)},
                  results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_EQ(results_.Only(1).outcome, ConsensusClient::Outcome::kTimeout);
  EXPECT_EQ(client->stats().reopens, 1u);
  client->Request("svc", MakeFrames({"fits"}), {.timeout = milliseconds(2000)},
                  results_.For(2));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_TRUE(results_.Only(2).ok());
  EXPECT_EQ(results_.Only(2).payload.at(0).size(), 4096u);
}

TEST_P(ConsensusClientTest, DestroyingTheClientEndsOpenRequestsAndPings) {
  auto client = MakeClient();
  for (int i = 0; i < 3; ++i) {
    client->Request("svc", MakeFrames({"x"}), {}, results_.For(i));
  }
  absl::Status ping_status;
  int pings = 0;
  client->Ping([&](absl::Status s) {
    ping_status = s;
    ++pings;
  });
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return broker_.received().size() == 4; }));
  EXPECT_EQ(results_.calls, 0);
  client.reset();
  EXPECT_EQ(results_.calls, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results_.Only(i).failed_by, FailedBy::kClient);
    EXPECT_EQ(results_.Only(i).reason, ConsensusClient::kReasonClientClosed);
  }
  EXPECT_EQ(pings, 1);
  EXPECT_TRUE(absl::IsCancelled(ping_status));
  RunFor(reactor_, milliseconds(20));
  EXPECT_EQ(results_.calls, 3);
}

TEST_P(ConsensusClientTest, PingIsAnsweredByTheEchoOrTimesOut) {
  bool echo = true;
  broker_.on_receive = [&](const Received& r) {
    if (r.type == ccp::MessageType::kPing && echo) broker_.Echo(r);
  };
  auto client = MakeClient({.reopen_after_timeouts = 0});
  std::vector<absl::Status> got;
  client->Ping([&](absl::Status s) { got.push_back(s); });
  ASSERT_TRUE(RunUntil(reactor_, [&] { return got.size() == 1; }));
  EXPECT_TRUE(got[0].ok()) << got[0];
  echo = false;
  client->Ping(milliseconds(40), [&](absl::Status s) { got.push_back(s); });
  ASSERT_TRUE(RunUntil(reactor_, [&] { return got.size() == 2; }));
  EXPECT_TRUE(absl::IsDeadlineExceeded(got[1])) << got[1];
}

TEST_P(ConsensusClientTest, ManyOpenRequestsAnsweredOutOfOrder) {
  constexpr int kCount = 200;
  auto client = MakeClient();
  for (int i = 0; i < kCount; ++i) {
    client->Request("svc", MakeFrames({std::to_string(i)}),
                    {.timeout = milliseconds(5000)}, results_.For(i));
  }
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return broker_.requests().size() == kCount; }));
  auto reqs = broker_.requests();
  for (int i = kCount - 1; i >= 0; --i) {
    broker_.Reply(reqs[i], ccp::MessageType::kReplySuccess,
                  {"re:" + reqs[i].payload[0]});
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == kCount; }));
  for (int i = 0; i < kCount; ++i) {
    EXPECT_THAT(FramesToStrings(results_.Only(i).payload),
                ElementsAre("re:" + std::to_string(i)));
  }
  EXPECT_EQ(client->open_requests(), 0u);
}

TEST_P(ConsensusClientTest, CallbacksMayIssueTheNextRequest) {
  broker_.on_receive = [&](const Received& r) {
    broker_.Reply(r, ccp::MessageType::kReplySuccess, r.payload);
  };
  auto client = MakeClient();
  // Reuses one payload vector through the span overload.
  Frames payload;
  int done = 0;
  std::function<void(Result &&)> next = [&](Result&& r) {
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(View(r.payload.at(0)), std::to_string(done));
    if (++done == 50) return;
    payload.clear();
    payload.push_back(Frame(std::to_string(done)));
    client->Request("svc", std::span(payload), {},
                    [&](Result&& r2) { next(std::move(r2)); });
  };
  payload.push_back(Frame("0"));
  client->Request("svc", std::span(payload), {},
                  [&](Result&& r) { next(std::move(r)); });
  ASSERT_TRUE(RunUntil(reactor_, [&] { return done == 50; }));
  EXPECT_EQ(broker_.requests().back().sequence.sequence, 50u);
}

TEST_P(ConsensusClientTest, ImmediateFailuresArePostedNotCalledInline) {
  auto client = MakeClient();
  bool inside = true;
  client->Request("", MakeFrames({"x"}), {}, [&](Result&& r) {
    EXPECT_FALSE(inside);
    EXPECT_EQ(r.failed_by, FailedBy::kClient);
    EXPECT_EQ(r.reason, ConsensusClient::kReasonInvalidRequest);
    ++results_.calls;
  });
  inside = false;
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_TRUE(broker_.requests().empty());

  EXPECT_FALSE(ConsensusClient::Create(reactor_, ctx_, "nonsense://x").ok());
  // A client left without a socket (a reopen that failed) fails the same way.
  auto bad = MakeClient();
  bad->DropSocketForTesting();
  bad->Request("svc", MakeFrames({"x"}), {}, results_.For(7));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 2; }));
  EXPECT_EQ(results_.Only(7).reason, ConsensusClient::kReasonNotConnected);
}

// Issue 10.8: immediate failures belong to the client.  They used to be
// posted to the reactor and ran after the client was gone, so a callback that
// captures its owner (the C ABI's handle) used freed memory.  Now they are
// delivered before the destructor returns, and never again afterwards.
TEST_P(ConsensusClientTest, ImmediateFailuresEndBeforeTheDestructorReturns) {
  struct Owner {
    int requests = 0;
    int pings = 0;
    absl::Status ping_status;
  };
  auto owner = std::make_unique<Owner>();
  Owner* o = owner.get();
  auto client = MakeClient();
  client->Request("", MakeFrames({"x"}), {}, [o](Result&& r) {
    EXPECT_EQ(r.reason, ConsensusClient::kReasonInvalidRequest);
    ++o->requests;
  });
  auto bad = MakeClient();
  bad->DropSocketForTesting();  // as after a reopen that failed
  bad->Request("svc", MakeFrames({"x"}), {}, [o](Result&& r) {
    EXPECT_EQ(r.reason, ConsensusClient::kReasonNotConnected);
    ++o->requests;
  });
  bad->Ping(milliseconds(1000), [o](absl::Status s) {
    o->ping_status = s;
    ++o->pings;
  });
  EXPECT_EQ(o->requests, 0);  // never inside request() or ping()
  client.reset();
  bad.reset();
  EXPECT_EQ(o->requests, 2);
  EXPECT_EQ(o->pings, 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(o->ping_status)) << o->ping_status;
  owner.reset();  // what the callbacks captured is gone now
  RunFor(reactor_, milliseconds(20));  // and nothing runs any more
}

TEST_P(ConsensusClientTest, IgnoresMalformedAndForeignReplies) {
  broker_.on_receive = [&](const Received& r) {
    broker_.Send(r.identity, MakeFrames({"garbage"}));
    Received other = r;
    other.sequence.client_id ^= 1;  // not ours
    broker_.Reply(other, ccp::MessageType::kReplySuccess, {"foreign"});
    other = r;
    other.sequence.sequence += 100;  // never sent
    broker_.Reply(other, ccp::MessageType::kReplySuccess, {"unknown"});
    broker_.Reply(r, ccp::MessageType::kReplySuccess, {"real"});
  };
  auto client = MakeClient();
  client->Request("svc", MakeFrames({"x"}), {}, results_.For(1));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return results_.calls == 1; }));
  EXPECT_THAT(FramesToStrings(results_.Only(1).payload), ElementsAre("real"));
  EXPECT_EQ(client->stats().malformed, 1u);
  EXPECT_EQ(client->stats().stale_replies, 2u);
}

INSTANTIATE_TEST_SUITE_P(Transports, ConsensusClientTest,
                         ::testing::Values("inproc://consensus-client-test",
                                           "tcp://127.0.0.1:*"),
                         [](const auto& info) {
                           return info.param.starts_with("tcp") ? "tcp"
                                                                : "inproc";
                         });

// --- call(): a sequential client waiting on its own socket ------------------

// The client runs on the test thread (its reactor is never run by the test);
// the fake broker on a thread of its own.
class ConsensusClientCallTest : public ::testing::Test {
 protected:
  ConsensusClientCallTest() {
    broker_thread_.Invoke([&](Reactor& r) {
      broker_ = std::make_unique<FakeBroker>(ctx_, r, "inproc://call");
      broker_->on_receive = [this](const Received& m) {
        if (on_receive) on_receive(*broker_, m);
      };
    });
    client_ = ConsensusClient::Create(reactor_, ctx_, "inproc://call").value();
  }
  ~ConsensusClientCallTest() override {
    client_.reset();
    broker_thread_.Invoke([&](Reactor&) { broker_.reset(); });
  }
  std::vector<Received> BrokerRequests() {
    return broker_thread_.Invoke([&](Reactor&) { return broker_->requests(); });
  }

  // What the fake broker does with each message; runs on the broker thread,
  // so it is set there too: the request that makes the broker call it goes
  // through libzmq, whose ordering ThreadSanitizer cannot see.
  void SetOnReceive(std::function<void(FakeBroker&, const Received&)> fn) {
    broker_thread_.Invoke([&](Reactor&) { on_receive = std::move(fn); });
  }
  std::function<void(FakeBroker&, const Received&)> on_receive;
  zmq::context_t ctx_;
  ReactorThread broker_thread_;
  std::unique_ptr<FakeBroker> broker_;
  Reactor reactor_;
  std::unique_ptr<ConsensusClient> client_;
  Results results_;
};

TEST_F(ConsensusClientCallTest,
       ReturnsAfterTheOutcomeWithoutRunningTheReactor) {
  SetOnReceive([](FakeBroker& b, const Received& m) {
    b.Reply(m, ccp::MessageType::kReplySuccess, {m.payload[0] + "!"});
  });
  bool posted_ran = false;
  reactor_.Post([&] { posted_ran = true; });
  for (int i = 1; i <= 3; ++i) {
    Frames payload = MakeFrames({"req" + std::to_string(i)});
    client_->Call("svc", payload, {.timeout = milliseconds(5000)},
                  results_.For(i));
    ASSERT_EQ(results_.calls, i) << "Call() returned before the outcome";
    const Result& r = results_.Only(i);
    ASSERT_TRUE(r.ok());
    EXPECT_THAT(FramesToStrings(r.payload),
                ElementsAre("req" + std::to_string(i) + "!"));
  }
  EXPECT_FALSE(posted_ran) << "Call() ran the reactor";
  const std::vector<Received> got = BrokerRequests();
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i].sequence.sequence, i + 1u);
  EXPECT_EQ(client_->open_requests(), 0u);
}

TEST_F(ConsensusClientCallTest, RetriesAtTheDeadlineWithTheNextSequence) {
  // The first attempt is ignored; the second is answered.
  SetOnReceive([](FakeBroker& b, const Received& m) {
    if (m.sequence.sequence >= 2) {
      b.Reply(m, ccp::MessageType::kReplySuccess, {"late but fine"});
    }
  });
  Frames payload = MakeFrames({"x"});
  client_->Call("svc", payload, {.timeout = milliseconds(100), .retries = 2},
                results_.For(1));
  const Result& r = results_.Only(1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 2);
  const std::vector<Received> got = BrokerRequests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].sequence.sequence, 2u);
  EXPECT_THAT(got[1].payload, ElementsAre("x"));
}

TEST_F(ConsensusClientCallTest, EndsInTimeoutAfterEveryAttempt) {
  const auto start = Clock::now();
  Frames payload = MakeFrames({"nobody answers"});
  client_->Call("svc", payload, {.timeout = milliseconds(60), .retries = 1},
                results_.For(1));
  EXPECT_GE(Clock::now() - start, milliseconds(120));
  EXPECT_EQ(results_.Only(1).outcome, Outcome::kTimeout);
  EXPECT_EQ(results_.Only(1).attempts, 2);
  EXPECT_EQ(client_->stats().timeouts, 1u);
}

TEST_F(ConsensusClientCallTest, ImmediateFailureRunsBeforeCallReturns) {
  Frames payload = MakeFrames({"x"});
  client_->Call("", payload, {}, results_.For(1));
  ASSERT_EQ(results_.calls, 1);
  EXPECT_EQ(results_.Only(1).failed_by, FailedBy::kClient);
  EXPECT_EQ(results_.Only(1).reason, ConsensusClient::kReasonInvalidRequest);
}

TEST_F(ConsensusClientCallTest, TakesRepliesToOtherOpenRequestsWhileWaiting) {
  // The broker holds the first request and answers both when the second
  // arrives, the first one first.
  // `held` lives in the function, on the broker thread.
  SetOnReceive([held = std::vector<Received>()](FakeBroker& b,
                                                const Received& m) mutable {
    held.push_back(m);
    if (held.size() == 2) {
      b.Reply(held[0], ccp::MessageType::kReplySuccess, {"first"});
      b.Reply(held[1], ccp::MessageType::kReplySuccess, {"second"});
    }
  });
  client_->Request("svc", MakeFrames({"a"}), {}, results_.For(1));
  Frames payload = MakeFrames({"b"});
  client_->Call("svc", payload, {}, results_.For(2));
  ASSERT_EQ(results_.calls, 2);
  EXPECT_THAT(FramesToStrings(results_.Only(1).payload), ElementsAre("first"));
  EXPECT_THAT(FramesToStrings(results_.Only(2).payload), ElementsAre("second"));
}

// --- BlockingConsensusClient
// ---------------------------------------------------

TEST(BlockingConsensusClientTest, RequestsAndPings) {
  zmq::context_t ctx;
  ReactorThread broker_thread;
  std::unique_ptr<FakeBroker> broker;
  bool echo_pings = true;
  broker_thread.Invoke([&](Reactor& r) {
    broker = std::make_unique<FakeBroker>(ctx, r, "tcp://127.0.0.1:*");
    broker->on_receive = [&](const Received& m) {
      if (m.type == ccp::MessageType::kPing) {
        if (echo_pings) broker->Echo(m);
      } else if (m.payload[0] != "silence") {
        broker->Reply(m, ccp::MessageType::kReplySuccess, {m.payload[0] + "!"});
      }
    };
  });
  const std::string endpoint =
      broker_thread.Invoke([&](Reactor&) { return broker->endpoint(); });
  {
    absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> created =
        BlockingConsensusClient::Create(ctx, endpoint);
    ASSERT_TRUE(created.ok());
    BlockingConsensusClient& client = **created;
    EXPECT_TRUE(client.Ping(milliseconds(2000)));
    Result r = client.Request("svc", MakeFrames({"hi"}));
    ASSERT_TRUE(r.ok());
    EXPECT_THAT(FramesToStrings(r.payload), ElementsAre("hi!"));
    Result t = client.Request("svc", MakeFrames({"silence"}),
                              {.timeout = milliseconds(50)});
    EXPECT_EQ(t.outcome, Outcome::kTimeout);
    broker_thread.Invoke([&](Reactor&) { echo_pings = false; });
    EXPECT_FALSE(client.Ping(milliseconds(50)));
    EXPECT_EQ(client.stats().successes, 1u);
  }
  broker_thread.Invoke([&](Reactor&) { broker.reset(); });
}

TEST(BlockingConsensusClientTest, RequestsFromSeveralThreadsAtOnce) {
  zmq::context_t ctx;
  ReactorThread broker_thread;
  std::unique_ptr<FakeBroker> broker;
  broker_thread.Invoke([&](Reactor& r) {
    broker = std::make_unique<FakeBroker>(ctx, r, "inproc://blocking");
    broker->on_receive = [&](const Received& m) {
      broker->Reply(m, ccp::MessageType::kReplySuccess, m.payload);
    };
  });
  {
    std::unique_ptr<BlockingConsensusClient> owned =
        BlockingConsensusClient::Create(ctx, "inproc://blocking").value();
    BlockingConsensusClient& client = *owned;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          const std::string tag = std::to_string(t) + "/" + std::to_string(i);
          Result r = client.Request("svc", MakeFrames({tag}));
          if (r.ok() && r.payload.size() == 1 && View(r.payload[0]) == tag) {
            ++ok;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 200);
  }
  broker_thread.Invoke([&](Reactor&) { broker.reset(); });
}

TEST(BlockingConsensusClientTest, CreateFailsWhenTheSocketCannotBeSetUp) {
  zmq::context_t ctx;
  absl::StatusOr<std::unique_ptr<BlockingConsensusClient>> client =
      BlockingConsensusClient::Create(ctx, "nonsense://x");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("nonsense://x"));
}

}  // namespace
}  // namespace zb
