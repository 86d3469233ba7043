// Copyright 2026 The zbrokers Authors.
//
// MajordomoBroker::Drain(grace, done) under the contract it shares with
// ConsensusBroker::Drain (issue 12): `done` is posted, never called inside
// Drain(), exactly once; a request open at the drain is answered when it
// finishes within the grace period and dropped when it does not.  Raw
// DEALER peers play the client and the worker.

#include "zbrokers/majordomo/broker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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
using ::testing::HasSubstr;
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

// Internal endpoints (BindInternal()): the daemon's own peers, whose
// requests are never put to the gate.  The gate here refuses everything and
// counts how often it is asked.
class MajordomoInternalTest : public MajordomoGateTest {
 protected:
  void SetUp() override {
    StartBroker(Prefetch(1));  // raw workers need no heartbeats
    broker_thread_.Invoke([&](Reactor&) {
      ASSERT_TRUE(broker_->BindInternal(kInternal).ok());
      broker_->set_request_gate([&] {
        ++asked_;
        return open_.load();
      });
    });
  }
  // A raw peer on the internal endpoint, with `identity` when given.
  std::unique_ptr<RawPeer> InternalPeer(std::string identity = "") {
    return Peer(kInternal, std::move(identity));
  }
  std::unique_ptr<RawPeer> Peer(const std::string& endpoint,
                                const std::string& identity) {
    return std::make_unique<RawPeer>(ctx_, endpoint, identity);
  }

  static constexpr const char* kInternal = "inproc://mdp-internal-test";
  std::atomic<bool> open_{false};
  std::atomic<int> asked_{0};
};

// Before BindInternal(), Titanic's dispatcher in zb-broker reached the
// broker as any client: a passive broker dropped its requests, and with the
// peer silent they were the CLIENT_REQUEST that made it take over.
TEST_F(MajordomoInternalTest, InternalClientsAreServedWithoutAskingTheGate) {
  auto w = RawWorker("svc");  // over tcp: workers are never gated
  auto internal = InternalPeer();
  internal->Send({"", "MDPC01", "svc", "from inside"});
  auto [addr, body] = Take(*w);
  EXPECT_EQ(body, "from inside");
  // The worker sees the client's address in the internal namespace.
  EXPECT_EQ(addr.rfind(std::string("\0zb-internal:", 13), 0), 0u) << addr;
  w->Send({"", "MDPW01", kReply, addr, "", "answer"});
  EXPECT_THAT(internal->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
  internal->Send({"", "MDPC01", "mmi.service", "svc"});
  EXPECT_THAT(internal->Recv(),
              ElementsAre("", "MDPC01", "mmi.service", "200"));
  EXPECT_EQ(asked_.load(), 0);
  // An outside client is still gated.
  auto outside = RawClient();
  outside->Send({"", "MDPC01", "svc", "from outside"});
  ASSERT_TRUE(WaitFor([&] { return asked_.load() == 1; }));
  EXPECT_TRUE(RecvCommand(*w, kRequest, 100ms).empty());
  auto s = Stats();
  EXPECT_EQ(s.requests_internal, 2u);
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.requests_refused_passive, 1u);
}

// Workers on the internal endpoint (Titanic's titanic.* services) serve
// outside clients, whose requests are gated as always.
TEST_F(MajordomoInternalTest, InternalWorkersServeOutsideClients) {
  auto w = InternalPeer();
  w->Send({"", "MDPW01", kReady, "svc"});
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  open_ = true;
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "body"});
  auto [addr, body] = Take(*w);
  EXPECT_EQ(body, "body");
  w->Send({"", "MDPW01", kReply, addr, "", "answer"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "answer"));
  // Heartbeats and DISCONNECT reach it on its own socket.
  EXPECT_FALSE(RecvCommand(*w, kHeartbeat).empty());
  EXPECT_EQ(asked_.load(), 1);
  EXPECT_EQ(Stats().requests_internal, 0u);
}

// The two ROUTERs name their peers independently: the same routing id on
// both is two peers, each answered on its own socket.
TEST_F(MajordomoInternalTest, TheSameIdentityInsideAndOutsideIsTwoPeers) {
  open_ = true;
  auto w = RawWorker("svc");  // one request at a time (Prefetch(1))
  auto inside = InternalPeer("same");
  auto outside = Peer(endpoint_, "same");
  // Both open in the broker at once: the second waits in the queue.
  inside->Send({"", "MDPC01", "svc", "in"});
  auto [addr_in, body_in] = Take(*w);
  outside->Send({"", "MDPC01", "svc", "out"});
  ASSERT_TRUE(WaitFor([&] { return Queued("svc") == 1; }));
  EXPECT_EQ(body_in, "in");
  w->Send({"", "MDPW01", kReply, addr_in, "", "re:in"});
  auto [addr_out, body_out] = Take(*w);
  EXPECT_EQ(body_out, "out");
  EXPECT_NE(addr_in, addr_out);
  w->Send({"", "MDPW01", kReply, addr_out, "", "re:out"});
  EXPECT_THAT(inside->Recv(), ElementsAre("", "MDPC01", "svc", "re:in"));
  EXPECT_THAT(outside->Recv(), ElementsAre("", "MDPC01", "svc", "re:out"));
  EXPECT_TRUE(outside->Recv(100ms).empty());
  EXPECT_TRUE(inside->Recv(100ms).empty());
}

// An outside peer that presents an identity of the internal namespace is
// dropped before anything looks at it: it is not served ungated, and it
// cannot touch the internal worker of that name (a malformed message from
// a registered worker would disconnect it).
TEST_F(MajordomoInternalTest, AnOutsidePeerCannotClaimToBeInternal) {
  auto w = InternalPeer("w");
  w->Send({"", "MDPW01", kReady, "svc"});
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  auto impostor = Peer(endpoint_, std::string("\0zb-internal:w", 14));
  impostor->Send({"", "MDPC01", "svc", "let me in"});
  impostor->Send({"", "MDPW01", kDisconnect});
  impostor->Send({"", "garbage"});
  auto other = Peer(endpoint_, std::string("\0zb-internal:x", 14));
  other->Send({"", "MDPC01", "svc", "me too"});
  EXPECT_TRUE(WaitFor([&] { return Stats().malformed == 4u; }, 3s));
  EXPECT_TRUE(RecvCommand(*w, kRequest, 100ms).empty());
  EXPECT_TRUE(RecvCommand(*w, kDisconnect, 100ms).empty());
  EXPECT_TRUE(impostor->Recv(50ms).empty());
  auto s = Stats();
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.requests_internal, 0u);
  EXPECT_EQ(Workers("svc"), 1u);
  EXPECT_EQ(asked_.load(), 0);
}

// A peer speaking ZMTP/1.0 carries no connection metadata at all, exactly
// like an inproc peer (libzmq 4.3): "no Peer-Address" cannot be what marks
// a peer as internal.  Such a peer over tcp is gated like any other.
TEST_F(MajordomoInternalTest, AZmtp10PeerWithoutMetadataIsStillGated) {
  const std::string port = endpoint_.substr(endpoint_.rfind(':') + 1);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // ZMTP/1.0: each frame is a length (the body plus the flags byte), the
  // flags (1 = more) and the body; the first frame is the identity.
  std::string wire("\x01\x00", 2);
  const std::vector<std::string> frames = {"", "MDPC01", "svc", "v1"};
  for (std::size_t i = 0; i < frames.size(); ++i) {
    wire += static_cast<char>(frames[i].size() + 1);
    wire += static_cast<char>(i + 1 < frames.size() ? 1 : 0);
    wire += frames[i];
  }
  ASSERT_EQ(write(fd, wire.data(), wire.size()),
            static_cast<ssize_t>(wire.size()));
  EXPECT_TRUE(WaitFor([&] { return asked_.load() == 1; }));
  close(fd);
  auto s = Stats();
  EXPECT_EQ(s.requests_refused_passive, 1u);
  EXPECT_EQ(s.requests_internal, 0u);
}

TEST_F(MajordomoInternalTest, OnlyInprocEndpointsAreInternal) {
  broker_thread_.Invoke([&](Reactor&) {
    absl::Status s = broker_->BindInternal("tcp://127.0.0.1:*");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("only inproc:// endpoints"));
    // Nor is it one of the broker's endpoints.
    EXPECT_THAT(broker_->endpoints(), ElementsAre(endpoint_));
  });
}

}  // namespace
}  // namespace zb
