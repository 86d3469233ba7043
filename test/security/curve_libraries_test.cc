// Copyright 2026 The zbrokers Authors.
//
// Every client and worker library with Options::curve against both brokers
// listening in plaintext and with CURVE on one ROUTER each, a ZAP handler
// over an allowlist, and handshake monitors: allowed peers get through on
// both protocols; an unlisted key, a wrong server key and a plaintext peer
// on the CURVE endpoint get nothing through (no worker registered, no
// request answered), and the monitors say why.
//
// Threads: both brokers, the ZAP handler and the monitors on one
// ReactorThread; workers on another; the asynchronous MDP client on a
// third; the blocking clients on the test thread (BlockingConsensusClient
// has its own).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/wait.h"
#include "zbrokers/consensus/blocking_client.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"
#include "zbrokers/security/curve.h"
#include "zbrokers/security/handshake_monitor.h"
#include "zbrokers/security/zap_handler.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

CurveKeyPair NewPair() {
  absl::StatusOr<CurveKeyPair> p = GenerateCurveKeyPair();
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

class CurveLibrariesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CurveAvailable());
    absl::StatusOr<CurveAllowlist> allow =
        CurveAllowlist::Parse(Z85(client_.public_key) + " client\n" +
                                  Z85(worker_.public_key) + " worker\n",
                              "test");
    ASSERT_TRUE(allow.ok());
    broker_thread_.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<ZapHandler>> zap =
          ZapHandler::Create(r, ctx_);
      ASSERT_TRUE(zap.ok());
      zap_ = *std::move(zap);
      zap_->set_allowlist(std::make_shared<const CurveAllowlist>(*allow));

      MajordomoBroker::Options mo;
      mo.heartbeat_interval = milliseconds(200);
      absl::StatusOr<std::unique_ptr<MajordomoBroker>> mdp =
          MajordomoBroker::Create(r, ctx_, mo);
      ASSERT_TRUE(mdp.ok()) << mdp.status();
      mdp_ = *std::move(mdp);
      absl::StatusOr<std::unique_ptr<ConsensusBroker>> ccp =
          ConsensusBroker::Create(r, ctx_, {});
      ASSERT_TRUE(ccp.ok()) << ccp.status();
      ccp_ = *std::move(ccp);
      const ListenerSecurity mdp_curve{.curve_secret_key = server_.secret_key,
                                       .zap_domain = "majordomo"};
      const ListenerSecurity ccp_curve{.curve_secret_key = server_.secret_key,
                                       .zap_domain = "consensus"};
      ASSERT_TRUE(mdp_->Bind("tcp://127.0.0.1:*").ok());
      ASSERT_TRUE(mdp_->Bind("tcp://127.0.0.1:*", mdp_curve).ok());
      ASSERT_TRUE(ccp_->Bind("tcp://127.0.0.1:*").ok());
      ASSERT_TRUE(ccp_->Bind("tcp://127.0.0.1:*", ccp_curve).ok());
      mdp_plain_ = mdp_->endpoints()[0];
      mdp_curve_ = mdp_->endpoints()[1];
      ccp_plain_ = ccp_->endpoints()[0];
      ccp_curve_ = ccp_->endpoints()[1];

      ASSERT_TRUE(
          mdp_->Monitor("inproc://mon-mdp", HandshakeMonitor::kEvents).ok());
      ASSERT_TRUE(
          ccp_->Monitor("inproc://mon-ccp", HandshakeMonitor::kEvents).ok());
      for (const char* kind : {"mdp", "ccp"}) {
        absl::StatusOr<std::unique_ptr<HandshakeMonitor>> m =
            HandshakeMonitor::Create(
                r, ctx_, std::string("inproc://mon-") + kind,
                [this, kind](const HandshakeMonitor::Failure& f) {
                  std::lock_guard<std::mutex> lock(mu_);
                  ++failures_[std::string(kind) + ":" + std::string(f.reason)];
                });
        ASSERT_TRUE(m.ok());
        monitors_.push_back(*std::move(m));
      }
    });
  }

  void TearDown() override {
    worker_thread_.Invoke([&](Reactor&) {
      ccp_workers_.clear();
      mdp_workers_.clear();
    });
    broker_thread_.Invoke([&](Reactor&) {
      monitors_.clear();
      mdp_.reset();
      ccp_.reset();
      zap_.reset();  // after the CURVE listeners
    });
  }

  CurveClientKeys Keys(const CurveKeyPair& own,
                       const CurveKey* server = nullptr) {
    absl::StatusOr<CurveClientKeys> k = MakeCurveClientKeys(
        server != nullptr ? *server : server_.public_key, own.secret_key);
    EXPECT_TRUE(k.ok());
    return *k;
  }

  void StartCcpWorker(const std::string& endpoint,
                      std::optional<CurveClientKeys> curve) {
    worker_thread_.Invoke([&](Reactor& r) {
      ConsensusWorker::Options o;
      o.curve = curve;
      absl::StatusOr<std::unique_ptr<ConsensusWorker>> w =
          ConsensusWorker::Create(
              r, ctx_, endpoint, "echo",
              [this](std::span<zmq::message_t> payload,
                     ConsensusWorker::Responder responder) {
                ++ccp_handled_;
                responder.Succeed(payload);
              },
              o);
      ASSERT_TRUE(w.ok()) << w.status();
      ccp_workers_.push_back(*std::move(w));
    });
  }

  void StartMdpWorker(const std::string& endpoint,
                      std::optional<CurveClientKeys> curve) {
    worker_thread_.Invoke([&](Reactor& r) {
      MdpWorker::Options o;
      o.heartbeat_interval = milliseconds(200);
      o.reconnect_delay = milliseconds(100);
      o.curve = curve;
      absl::StatusOr<std::unique_ptr<MdpWorker>> w = MdpWorker::Create(
          r, ctx_, endpoint, "echo",
          [this](Frames body, MdpWorker::Replier replier) {
            ++mdp_handled_;
            replier.Reply(std::move(body));
          },
          o);
      ASSERT_TRUE(w.ok()) << w.status();
      mdp_workers_.push_back(*std::move(w));
    });
  }

  std::size_t CcpWorkers() {
    return broker_thread_.Invoke(
        [&](Reactor&) { return ccp_->worker_count("echo"); });
  }
  std::size_t MdpWorkers() {
    return broker_thread_.Invoke([&](Reactor&) -> std::size_t {
      const MajordomoBroker::Stats s = mdp_->stats();
      auto it = s.services.find("echo");
      return it == s.services.end() ? 0 : it->second.workers;
    });
  }
  // Waits up to 3 s for `n` registered workers on both brokers.
  bool WorkersRegistered(std::size_t ccp, std::size_t mdp) {
    return test::WaitFor(
        [&] { return CcpWorkers() == ccp && MdpWorkers() == mdp; },
        milliseconds(3000));
  }
  int Failures(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_[key];
  }
  bool SawFailure(const std::string& key) {
    return test::WaitFor([&] { return Failures(key) > 0; }, milliseconds(3000));
  }

  absl::StatusOr<Frames> MdpRequest(const std::string& endpoint,
                                    std::optional<CurveClientKeys> curve,
                                    milliseconds timeout) {
    MdpClient::Options o;
    o.timeout = timeout;
    o.retries = 0;
    o.curve = curve;
    absl::StatusOr<std::unique_ptr<MdpClient>> client =
        MdpClient::Create(endpoint, o, &ctx_);
    if (!client.ok()) return client.status();
    return (*client)->Request("echo", MakeFrames({"mdp-payload"}));
  }

  ConsensusClient::Result CcpRequest(const std::string& endpoint,
                                     std::optional<CurveClientKeys> curve,
                                     milliseconds timeout) {
    ConsensusClient::Options o;
    o.curve = curve;
    std::unique_ptr<BlockingConsensusClient> client =
        BlockingConsensusClient::Create(ctx_, endpoint, o).value();
    return client->Request("echo", MakeFrames({"ccp-payload"}),
                           {.timeout = timeout, .retries = 0});
  }

  zmq::context_t ctx_;
  ReactorThread broker_thread_;
  ReactorThread worker_thread_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<MajordomoBroker> mdp_;
  std::unique_ptr<ConsensusBroker> ccp_;
  std::vector<std::unique_ptr<HandshakeMonitor>> monitors_;
  std::vector<std::unique_ptr<ConsensusWorker>> ccp_workers_;
  std::vector<std::unique_ptr<MdpWorker>> mdp_workers_;
  std::atomic<int> ccp_handled_{0};
  std::atomic<int> mdp_handled_{0};
  std::string mdp_plain_, mdp_curve_, ccp_plain_, ccp_curve_;
  const CurveKeyPair server_ = NewPair();
  const CurveKeyPair client_ = NewPair();
  const CurveKeyPair worker_ = NewPair();
  const CurveKeyPair stranger_ = NewPair();
  std::mutex mu_;
  std::map<std::string, int> failures_;
};

TEST_F(CurveLibrariesTest, AllowedPeersWorkOnBothProtocols) {
  StartCcpWorker(ccp_curve_, Keys(worker_));
  StartMdpWorker(mdp_curve_, Keys(worker_));
  ASSERT_TRUE(WorkersRegistered(1, 1));

  ConsensusClient::Result r =
      CcpRequest(ccp_curve_, Keys(client_), milliseconds(3000));
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_THAT(FramesToStrings(r.payload), ElementsAre("ccp-payload"));

  absl::StatusOr<Frames> m =
      MdpRequest(mdp_curve_, Keys(client_), milliseconds(3000));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(FramesToStrings(*m), ElementsAre("mdp-payload"));

  // The reactor-driven MDP client.
  ReactorThread client_thread;
  absl::StatusOr<Frames> async_reply = absl::UnknownError("not called");
  std::atomic<bool> done{false};
  std::unique_ptr<MdpAsyncClient> async;
  client_thread.Invoke([&](Reactor& reactor) {
    MdpAsyncClient::Options o;
    o.curve = Keys(client_);
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(reactor, ctx_, mdp_curve_, o);
    ASSERT_TRUE(created.ok()) << created.status();
    async = *std::move(created);
    ASSERT_TRUE(async
                    ->Request(
                        "echo", MakeFrames({"async"}),
                        [&](absl::StatusOr<Frames> reply) {
                          async_reply = std::move(reply);
                          done = true;
                        },
                        milliseconds(3000))
                    .ok());
  });
  test::WaitFor([&] { return done.load(); }, milliseconds(4000));
  client_thread.Invoke([&](Reactor&) { async.reset(); });
  ASSERT_TRUE(done);
  ASSERT_TRUE(async_reply.ok()) << async_reply.status();
  EXPECT_THAT(FramesToStrings(*async_reply), ElementsAre("async"));

  // And PING over CURVE.
  ConsensusClient::Options o;
  o.curve = Keys(client_);
  std::unique_ptr<BlockingConsensusClient> pinger =
      BlockingConsensusClient::Create(ctx_, ccp_curve_, o).value();
  EXPECT_TRUE(pinger->Ping(milliseconds(3000)));
}

TEST_F(CurveLibrariesTest, PlaintextAndCurveEndpointsServeTogether) {
  // A CURVE worker and a plaintext worker on the same service; a plaintext
  // client on the plaintext endpoint reaches both (consensus: every worker
  // answers).
  StartCcpWorker(ccp_curve_, Keys(worker_));
  StartCcpWorker(ccp_plain_, std::nullopt);
  StartMdpWorker(mdp_plain_, std::nullopt);
  ASSERT_TRUE(WorkersRegistered(2, 1));
  ConsensusClient::Result r =
      CcpRequest(ccp_plain_, std::nullopt, milliseconds(3000));
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_THAT(FramesToStrings(r.payload),
              ElementsAre("ccp-payload", "ccp-payload"));
  absl::StatusOr<Frames> m =
      MdpRequest(mdp_curve_, Keys(client_), milliseconds(3000));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<Frames> plain =
      MdpRequest(mdp_plain_, std::nullopt, milliseconds(3000));
  ASSERT_TRUE(plain.ok()) << plain.status();
}

TEST_F(CurveLibrariesTest, UnlistedWorkersNeverRegister) {
  StartCcpWorker(ccp_curve_, Keys(stranger_));
  StartMdpWorker(mdp_curve_, Keys(stranger_));
  EXPECT_TRUE(SawFailure("ccp:key_not_allowed"));
  EXPECT_TRUE(SawFailure("mdp:key_not_allowed"));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(CcpWorkers(), 0u);
  EXPECT_EQ(MdpWorkers(), 0u);
  // An allowed client finds no worker.
  ConsensusClient::Result r =
      CcpRequest(ccp_curve_, Keys(client_), milliseconds(2000));
  EXPECT_EQ(r.reason, ccp::kReasonNoWorkers);
  EXPECT_EQ(ccp_handled_.load() + mdp_handled_.load(), 0);
}

TEST_F(CurveLibrariesTest, UnlistedClientsGetNothingThrough) {
  StartCcpWorker(ccp_curve_, Keys(worker_));
  StartMdpWorker(mdp_curve_, Keys(worker_));
  ASSERT_TRUE(WorkersRegistered(1, 1));
  ConsensusClient::Result r =
      CcpRequest(ccp_curve_, Keys(stranger_), milliseconds(600));
  EXPECT_EQ(r.outcome, ConsensusClient::Outcome::kTimeout);
  absl::StatusOr<Frames> m =
      MdpRequest(mdp_curve_, Keys(stranger_), milliseconds(600));
  EXPECT_TRUE(absl::IsDeadlineExceeded(m.status())) << m.status();
  EXPECT_EQ(ccp_handled_.load() + mdp_handled_.load(), 0);
  EXPECT_TRUE(SawFailure("ccp:key_not_allowed"));
  EXPECT_TRUE(SawFailure("mdp:key_not_allowed"));
}

TEST_F(CurveLibrariesTest, WrongServerKeyGetsNothingThrough) {
  StartCcpWorker(ccp_curve_, Keys(worker_));
  StartMdpWorker(mdp_curve_, Keys(worker_));
  ASSERT_TRUE(WorkersRegistered(1, 1));
  const CurveKeyPair impostor = NewPair();
  ConsensusClient::Result r = CcpRequest(
      ccp_curve_, Keys(client_, &impostor.public_key), milliseconds(600));
  EXPECT_EQ(r.outcome, ConsensusClient::Outcome::kTimeout);
  absl::StatusOr<Frames> m = MdpRequest(
      mdp_curve_, Keys(client_, &impostor.public_key), milliseconds(600));
  EXPECT_TRUE(absl::IsDeadlineExceeded(m.status())) << m.status();
  // A worker with the wrong server key does not register either.
  StartCcpWorker(ccp_curve_, Keys(worker_, &impostor.public_key));
  EXPECT_TRUE(SawFailure("ccp:decrypt_failed"));
  EXPECT_TRUE(SawFailure("mdp:decrypt_failed"));
  EXPECT_EQ(CcpWorkers(), 1u);
  EXPECT_EQ(ccp_handled_.load() + mdp_handled_.load(), 0);
}

TEST_F(CurveLibrariesTest, PlaintextPeersOnTheCurveEndpointGetNothingThrough) {
  StartCcpWorker(ccp_curve_, Keys(worker_));
  StartMdpWorker(mdp_curve_, Keys(worker_));
  ASSERT_TRUE(WorkersRegistered(1, 1));
  ConsensusClient::Result r =
      CcpRequest(ccp_curve_, std::nullopt, milliseconds(600));
  EXPECT_EQ(r.outcome, ConsensusClient::Outcome::kTimeout);
  absl::StatusOr<Frames> m =
      MdpRequest(mdp_curve_, std::nullopt, milliseconds(600));
  EXPECT_TRUE(absl::IsDeadlineExceeded(m.status())) << m.status();
  StartMdpWorker(mdp_curve_, std::nullopt);
  EXPECT_TRUE(SawFailure("ccp:mechanism_mismatch"));
  EXPECT_TRUE(SawFailure("mdp:mechanism_mismatch"));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(MdpWorkers(), 1u);
  EXPECT_EQ(ccp_handled_.load() + mdp_handled_.load(), 0);
}

}  // namespace
}  // namespace zb
