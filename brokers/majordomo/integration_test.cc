// Copyright 2026 The zbrokers Authors.
//
// The Majordomo broker with the MDP client and worker libraries, in one
// process, over inproc and tcp loopback.  Heartbeats are short (50 ms) so
// that expiry paths run in well under a second; every wait is bounded
// generously and nothing asserts on timing.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq_addon.hpp>

#include "absl/strings/str_cat.h"
#include "brokers/majordomo/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/codec.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;
using namespace mdp_test;

TEST_F(MdpIntegrationTest, EchoOverTcp) {
  StartBroker();
  AddWorker("echo", Echo());
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  auto reply = client.Request("echo", MakeFrames({"hello", "", "world"}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(FramesToStrings(*reply), ElementsAre("hello", "", "world"));
  auto s = Stats();
  EXPECT_EQ(s.requests, 1u);
  EXPECT_EQ(s.replies, 1u);
  EXPECT_EQ(s.workers_joined, 1u);
}

// Issue 14: one worker registered with two brokers at once, both flooded by
// their own client.  The handler answers later from other threads, so the
// two brokers' requests overlap in the worker; every reply must reach the
// client whose broker sent the request, with that request's body.
TEST(MdpManyBrokersIntegrationTest, OneWorkerServesTwoBrokersAtOnce) {
  zmq::context_t ctx;
  ReactorThread thread;
  std::vector<std::unique_ptr<MajordomoBroker>> brokers;
  std::vector<std::string> endpoints;
  std::vector<std::unique_ptr<MdpAsyncClient>> clients;
  std::unique_ptr<MdpWorker> worker;
  std::atomic<int> concurrent{0}, most_concurrent{0};
  std::vector<std::thread> answerers;
  std::mutex answerers_mu;
  constexpr int kPerClient = 300;
  std::atomic<int> ok{0}, bad{0};
  thread.Invoke([&](Reactor& r) {
    for (int i = 0; i < 2; ++i) {
      brokers.push_back(
          test::Must(MajordomoBroker::Create(r, ctx, FastBroker())));
      ASSERT_TRUE(brokers.back()->Bind("tcp://127.0.0.1:*").ok());
      endpoints.push_back(brokers.back()->endpoints()[0]);
    }
    worker = test::Must(MdpWorker::Create(
        r, ctx, endpoints[0] + "," + endpoints[1], "echo",
        [&](Frames body, MdpWorker::Replier replier) {
          const int now = ++concurrent;
          int seen = most_concurrent.load();
          while (now > seen &&
                 !most_concurrent.compare_exchange_weak(seen, now)) {
          }
          std::lock_guard<std::mutex> lock(answerers_mu);
          answerers.emplace_back([&, body = std::move(body),
                                  replier = std::move(replier)]() mutable {
            std::this_thread::sleep_for(1ms);
            --concurrent;
            replier.Reply(std::move(body));
          });
        },
        FastWorker()));
  });
  ASSERT_TRUE(WaitFor([&] {
    return thread.Invoke([&](Reactor&) {
      return brokers[0]->worker_count("echo") == 1 &&
             brokers[1]->worker_count("echo") == 1;
    });
  }));
  thread.Invoke([&](Reactor& r) {
    for (int c = 0; c < 2; ++c) {
      clients.push_back(
          test::Must(MdpAsyncClient::Create(r, ctx, endpoints[c])));
      for (int i = 0; i < kPerClient; ++i) {
        const std::string body = absl::StrCat("c", c, "-", i);
        ASSERT_TRUE(clients[c]
                        ->Request(
                            "echo", MakeFrames({body}),
                            [&, body](absl::StatusOr<Frames> reply) {
                              if (reply.ok() &&
                                  FramesToStrings(*reply) ==
                                      std::vector<std::string>{body}) {
                                ++ok;
                              } else {
                                ++bad;
                              }
                            },
                            // Bounds a hang, not speed: each broker's 300
                            // requests queue behind one another (RFC 7, one
                            // at a time), and a ThreadSanitizer build on a
                            // loaded machine took over 20 s for them.
                            50s)
                        .ok());
      }
    }
  });
  ASSERT_TRUE(WaitFor([&] { return ok + bad == 2 * kPerClient; }, 60s));
  EXPECT_EQ(ok.load(), 2 * kPerClient);
  // RFC 7 per broker: at most one request of each broker at a time, so
  // never more than two in the handler's hands.
  EXPECT_LE(most_concurrent.load(), 2);
  MdpWorker::Stats s = thread.Invoke([&](Reactor&) { return worker->stats(); });
  EXPECT_EQ(s.requests, 2u * kPerClient);
  EXPECT_EQ(s.replies, 2u * kPerClient);
  EXPECT_EQ(s.dropped_replies, 0u);
  EXPECT_EQ(s.brokers, 2u);
  EXPECT_EQ(s.brokers_connected, 2u);
  for (int b = 0; b < 2; ++b) {
    const MajordomoBroker::Stats bs =
        thread.Invoke([&](Reactor&) { return brokers[b]->stats(); });
    EXPECT_EQ(bs.replies - bs.mmi_requests, std::uint64_t{kPerClient}) << b;
  }
  thread.Invoke([&](Reactor&) {
    clients.clear();
    worker.reset();
    brokers.clear();
  });
  std::lock_guard<std::mutex> lock(answerers_mu);
  for (std::thread& t : answerers) t.join();
}

TEST_F(MdpIntegrationTest, EchoOverInprocWithReqSocket) {
  StartBroker(FastBroker(), "inproc://mdp-echo");
  AddWorker("echo", Echo());
  // A plain REQ socket is a valid MDP client: it adds the empty frame.
  zmq::socket_t req(ctx_, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.connect(endpoint_);
  Frames out = MakeFrames({"MDPC01", "echo", "ping"});
  ASSERT_TRUE(SendFrames(req, out).ok());
  zmq_pollitem_t item{req.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_EQ(zmq::poll(&item, 1, kWait), 1);
  Frames in;
  (void)zmq::recv_multipart(req, std::back_inserter(in));
  EXPECT_THAT(FramesToStrings(in), ElementsAre("MDPC01", "echo", "ping"));
}

TEST_F(MdpIntegrationTest, DispatchesToLeastRecentlyUsedWorker) {
  StartBroker();
  for (const char* name : {"A", "B", "C"}) {
    const std::size_t before = Workers("svc");
    AddWorker("svc", Named(name));
    ASSERT_TRUE(WaitFor([&] { return Workers("svc") == before + 1; }));
  }
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  std::vector<std::string> served;
  for (int i = 0; i < 6; ++i) {
    auto reply = client.Request("svc", MakeFrames({"x"}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    served.push_back(FramesToStrings(*reply)[0]);
  }
  EXPECT_THAT(served, ElementsAre("A", "B", "C", "A", "B", "C"));
}

TEST_F(MdpIntegrationTest, QueuesUntilAWorkerArrivesAndMatchesFifo) {
  StartBroker();
  std::atomic<int> ok{0};
  std::vector<std::string> bodies;
  worker_thread_.Invoke([&](Reactor& r) {
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint_);
    ASSERT_TRUE(created.ok()) << created.status();
    async_clients_.push_back(*std::move(created));
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(async_clients_[0]
                      ->Request("late", MakeFrames({std::to_string(i)}),
                                [&, i](absl::StatusOr<Frames> reply) {
                                  if (reply.ok() &&
                                      FramesToStrings(*reply)[0] ==
                                          std::to_string(i)) {
                                    ++ok;
                                  }
                                })
                      .ok());
    }
  });
  ASSERT_TRUE(WaitFor([&] {
    auto s = Stats();
    return s.services.contains("late") && s.services["late"].queued == 50;
  }));
  AddWorker("late", Echo());
  ASSERT_TRUE(WaitFor([&] { return ok.load() == 50; }));
  // (The client's "mmi.zb.tag" query is one more request and reply.)
  auto s = Stats();
  EXPECT_EQ(s.replies - s.mmi_requests, 50u);
  EXPECT_EQ(s.mmi_requests, 1u);
}

TEST_F(MdpIntegrationTest, QueueBoundDropsAndCounts) {
  auto o = FastBroker();
  o.max_queue_per_service = 2;
  StartBroker(o);
  worker_thread_.Invoke([&](Reactor& r) {
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint_);
    ASSERT_TRUE(created.ok()) << created.status();
    async_clients_.push_back(*std::move(created));
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(async_clients_[0]
                      ->Request("nobody", MakeFrames({"x"}),
                                [](absl::StatusOr<Frames>) {})
                      .ok());
    }
  });
  ASSERT_TRUE(WaitFor([&] { return Stats().dropped_queue_full == 3; }));
  auto s = Stats();
  EXPECT_EQ(s.services["nobody"].queued, 2u);
  EXPECT_EQ(s.requests - s.mmi_requests, 5u);
}

TEST_F(MdpIntegrationTest, QueuedRequestsExpire) {
  auto o = FastBroker();
  o.queue_expiry = 100ms;
  StartBroker(o);
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(0, 1000ms), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  auto reply = client.Request("nobody", MakeFrames({"x"}));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(WaitFor([&] { return Stats().expired == 1; }));
  // The expired request is gone: a worker arriving now gets nothing.
  std::atomic<int> served{0};
  AddWorker("nobody", [&](Frames b, MdpWorker::Replier r) {
    ++served;
    r.Reply(std::move(b));
  });
  ASSERT_TRUE(WaitFor([&] { return Workers("nobody") == 1; }));
  EXPECT_EQ(Stats().services["nobody"].queued, 0u);
  EXPECT_EQ(served.load(), 0);
}

TEST_F(MdpIntegrationTest, MmiService) {
  StartBroker();
  AddWorker("echo", Echo());
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 1; }));
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  auto found = client.Request("mmi.service", MakeFrames({"echo"}));
  auto missing = client.Request("mmi.service", MakeFrames({"nope"}));
  auto other = client.Request("mmi.other", MakeFrames({"echo"}));
  ASSERT_TRUE(found.ok() && missing.ok() && other.ok());
  EXPECT_THAT(FramesToStrings(*found), ElementsAre("200"));
  EXPECT_THAT(FramesToStrings(*missing), ElementsAre("404"));
  EXPECT_THAT(FramesToStrings(*other), ElementsAre("501"));
  EXPECT_EQ(Stats().mmi_requests, 3u);
}

TEST_F(MdpIntegrationTest, RefusesMmiWorkerAndUnexpectedCommands) {
  StartBroker();
  RawPeer mmi(ctx_, endpoint_);
  mmi.Send({"", "MDPW01", kReady, "mmi.service"});
  EXPECT_THAT(mmi.Recv(), ElementsAre("", "MDPW01", kDisconnect));

  RawPeer stranger(ctx_, endpoint_);  // HEARTBEAT before READY
  stranger.Send({"", "MDPW01", kHeartbeat});
  EXPECT_THAT(stranger.Recv(), ElementsAre("", "MDPW01", kDisconnect));

  RawPeer twice(ctx_, endpoint_);
  twice.Send({"", "MDPW01", kReady, "svc"});
  twice.Send({"", "MDPW01", kReady, "svc"});
  std::vector<std::string> got;
  // Heartbeats may come first; the DISCONNECT must come.
  ASSERT_TRUE(WaitFor([&] {
    got = twice.Recv(100ms);
    return !got.empty() && got[2] == kDisconnect;
  }));

  RawPeer idle_reply(ctx_, endpoint_);
  idle_reply.Send({"", "MDPW01", kReady, "svc2"});
  idle_reply.Send({"", "MDPW01", kReply, "someone", "", "x"});
  ASSERT_TRUE(WaitFor([&] {
    got = idle_reply.Recv(100ms);
    return !got.empty() && got[2] == kDisconnect;
  }));
  EXPECT_EQ(Workers("svc"), 0u);
  EXPECT_EQ(Workers("svc2"), 0u);
  EXPECT_GE(Stats().disconnects_sent, 4u);
}

TEST_F(MdpIntegrationTest, WorkerKilledWhileBusyIsRedispatched) {
  StartBroker();
  auto victim = std::make_unique<RawPeer>(ctx_, endpoint_);
  victim->Send({"", "MDPW01", kReady, "svc"});
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  std::thread client_thread;
  std::atomic<bool> ok{false};
  client_thread = std::thread([&] {
    absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
        MdpClient::Create(endpoint_, Quick(0, 10000ms), &ctx_);
    ASSERT_TRUE(client_or.ok()) << client_or.status();
    MdpClient& client = **client_or;
    auto reply = client.Request("svc", MakeFrames({"payload"}));
    ok = reply.ok() && FramesToStrings(*reply)[0] == "payload";
  });
  // The victim gets the request (skipping heartbeats), then dies silently.
  std::vector<std::string> got;
  ASSERT_TRUE(WaitFor([&] {
    got = victim->Recv(100ms);
    return !got.empty() && got[2] == kRequest;
  }));
  EXPECT_THAT(got,
              ElementsAre("", "MDPW01", kRequest, ::testing::_, "", "payload"));
  victim.reset();  // closes the socket without DISCONNECT
  AddWorker("svc", Echo());
  client_thread.join();
  EXPECT_TRUE(ok.load());
  auto s = Stats();
  EXPECT_EQ(s.redispatched, 1u);
  EXPECT_EQ(s.failures, 0u);
}

TEST_F(MdpIntegrationTest, SilentBusyWorkerExpiresAndDisconnectWhileBusy) {
  StartBroker();
  RawPeer silent(ctx_, endpoint_);
  silent.Send({"", "MDPW01", kReady, "svc"});
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  // The client's outcome does not matter here (the request is lost on
  // purpose); it only has to send one request.
  std::thread client_thread([&] {
    absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
        MdpClient::Create(endpoint_, Quick(0, 1500ms), &ctx_);
    ASSERT_TRUE(client_or.ok()) << client_or.status();
    MdpClient& client = **client_or;
    (void)client.Request("svc", MakeFrames({"p"}));
  });
  std::vector<std::string> got;
  ASSERT_TRUE(WaitFor([&] {
    got = silent.Recv(100ms);
    return !got.empty() && got[2] == kRequest;
  }));
  // The socket stays open but says nothing: heartbeat expiry while busy.
  ASSERT_TRUE(WaitFor([&] { return Stats().workers_expired == 1; }));
  EXPECT_EQ(Stats().services["svc"].queued, 1u);  // back in the queue
  // A second raw worker takes it, then leaves with DISCONNECT while busy.
  RawPeer leaver(ctx_, endpoint_);
  leaver.Send({"", "MDPW01", kReady, "svc"});
  ASSERT_TRUE(WaitFor([&] {
    got = leaver.Recv(100ms);
    return !got.empty() && got[2] == kRequest;
  }));
  leaver.Send({"", "MDPW01", kDisconnect});
  // max_redispatch is 1: the second failure drops the request.
  ASSERT_TRUE(WaitFor([&] { return Stats().failures == 1; }));
  EXPECT_EQ(Stats().workers_left, 1u);
  // A late reply from the expired worker is refused with DISCONNECT.
  silent.Send({"", "MDPW01", kReply, got[3], "", "late"});
  ASSERT_TRUE(WaitFor([&] {
    got = silent.Recv(100ms);
    return !got.empty() && got[2] == kDisconnect;
  }));
  client_thread.join();
}

TEST_F(MdpIntegrationTest, WorkersReconnectAfterBrokerRestart) {
  StartBroker();
  const std::string endpoint = endpoint_;  // a concrete port now
  AddWorker("echo", Echo());
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 1; }));
  StopBroker();
  StartBroker(FastBroker(), endpoint);
  // The worker's heartbeats reach a broker that does not know it; the
  // broker answers DISCONNECT, the worker reconnects and sends READY.
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 1; }));
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(3, 1000ms), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  auto reply = client.Request("echo", MakeFrames({"again"}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(FramesToStrings(*reply), ElementsAre("again"));
  const auto stats =
      worker_thread_.Invoke([&](Reactor&) { return workers_[0]->stats(); });
  EXPECT_GE(stats.reconnects, 1u);
}

TEST_F(MdpIntegrationTest, MalformedFloodDoesNotStopService) {
  StartBroker();
  AddWorker("echo", Echo());
  constexpr int kGarbage = 5000;
  std::thread flood([&] {
    RawPeer bad(ctx_, endpoint_);
    for (int i = 0; i < kGarbage; ++i) {
      switch (i % 5) {
        case 0:
          bad.Send({"garbage"});
          break;
        case 1:
          bad.Send({"", "MDPC01"});
          break;
        case 2:
          bad.Send({"", "MDPW01", "\x09"});
          break;
        case 3:
          bad.Send({"", "MDPC01", "", "body"});
          break;
        case 4:
          bad.Send({"", "XXXX01", "svc", "x"});
          break;
      }
    }
    // Give the broker time to read everything before the socket closes.
    ASSERT_TRUE(WaitFor([&] { return Stats().malformed >= kGarbage; }));
  });
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  for (int i = 0; i < 200; ++i) {
    auto reply = client.Request("echo", MakeFrames({std::to_string(i)}));
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(FramesToStrings(*reply)[0], std::to_string(i));
  }
  flood.join();
  EXPECT_EQ(Stats().malformed, static_cast<std::uint64_t>(kGarbage));
  // Logging is rate-limited: a handful of lines, not thousands.
  EXPECT_GT(log_lines_.load(), 0);
  EXPECT_LT(log_lines_.load(), 100);
}

TEST_F(MdpIntegrationTest, AsyncClientManyOutstandingTwoWorkers) {
  StartBroker();
  AddWorker("echo", Echo());
  AddWorker("echo", Echo());
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 2; }));
  constexpr int kRequests = 2000;
  std::atomic<int> done{0}, failed{0};
  worker_thread_.Invoke([&](Reactor& r) {
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint_);
    ASSERT_TRUE(created.ok()) << created.status();
    async_clients_.push_back(*std::move(created));
    for (int i = 0; i < kRequests; ++i) {
      ASSERT_TRUE(async_clients_[0]
                      ->Request("echo", MakeFrames({"x"}),
                                [&](absl::StatusOr<Frames> reply) {
                                  if (reply.ok()) {
                                    ++done;
                                  } else {
                                    ++failed;
                                  }
                                })
                      .ok());
    }
  });
  ASSERT_TRUE(
      WaitFor([&] { return done.load() + failed.load() == kRequests; }));
  EXPECT_EQ(failed.load(), 0);
  auto s = Stats();
  EXPECT_EQ(s.replies - s.mmi_requests, static_cast<std::uint64_t>(kRequests));
  ExpectBothWorkersServed();
}

TEST_F(MdpIntegrationTest, DrainFinishesOpenRequestsThenDisconnectsWorkers) {
  StartBroker();
  // A worker that holds its request until told to answer.
  std::mutex mu;
  std::vector<MdpWorker::Replier> held;
  AddWorker("slow", [&](Frames, MdpWorker::Replier r) {
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(std::move(r));
  });
  ASSERT_TRUE(WaitFor([&] { return Workers("slow") == 1; }));
  std::atomic<bool> first_ok{false};
  std::thread client_thread([&] {
    absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
        MdpClient::Create(endpoint_, Quick(0, 10000ms), &ctx_);
    ASSERT_TRUE(client_or.ok()) << client_or.status();
    MdpClient& client = **client_or;
    first_ok = client.Request("slow", MakeFrames({"a"})).ok();
  });
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size() == 1;
  }));
  std::atomic<bool> drained{false};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->Drain(10000ms, [&] { drained = true; });
    // A second Drain keeps the first deadline: the request below still
    // gets its answer (first_ok) although 1 ms passes long before it.
    broker_->Drain(1ms, nullptr);
  });
  // New requests are refused while draining.
  absl::StatusOr<std::unique_ptr<MdpClient>> late_or =
      MdpClient::Create(endpoint_, Quick(0, 1000ms), &ctx_);
  ASSERT_TRUE(late_or.ok()) << late_or.status();
  MdpClient& late = **late_or;
  EXPECT_EQ(late.Request("slow", MakeFrames({"b"})).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Stats().rejected_draining, 1u);
  EXPECT_FALSE(drained.load());
  {
    std::lock_guard<std::mutex> lock(mu);
    held[0].Reply(MakeFrames({"done"}));  // from this (foreign) thread
  }
  client_thread.join();
  EXPECT_TRUE(first_ok.load());
  ASSERT_TRUE(WaitFor([&] { return drained.load(); }));
  auto s = Stats();
  EXPECT_EQ(s.workers_disconnected, 1u);
  const auto ws =
      worker_thread_.Invoke([&](Reactor&) { return workers_[0]->stats(); });
  ASSERT_TRUE(WaitFor([&] {
    return worker_thread_.Invoke([&](Reactor&) {
      return workers_[0]->stats().disconnects_received;
    }) >= 1u;
  }));
  (void)ws;
}

TEST_F(MdpIntegrationTest, DrainGraceExpires) {
  StartBroker();
  // Never answers: keeps its Repliers (one dropped would give the request
  // back).  Worker thread only.
  std::vector<MdpWorker::Replier> held;
  AddWorker("never", [&](Frames, MdpWorker::Replier r) {
    held.push_back(std::move(r));
  });
  ASSERT_TRUE(WaitFor([&] { return Workers("never") == 1; }));
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(0, 1000ms), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  EXPECT_FALSE(client.Request("never", MakeFrames({"a"})).ok());
  std::atomic<bool> drained{false};
  broker_thread_.Invoke([&](Reactor&) {
    ASSERT_EQ(broker_->open_requests(), 1u);
    broker_->Drain(100ms, [&] { drained = true; });
  });
  ASSERT_TRUE(WaitFor([&] { return drained.load(); }));
  auto s = Stats();
  EXPECT_EQ(s.expired, 1u);  // the open request was given up
  EXPECT_EQ(s.workers_disconnected, 1u);
  worker_thread_.Invoke([&](Reactor&) { held.clear(); });
}

TEST_F(MdpIntegrationTest, HooksSeeWorkersAndLatency) {
  StartBroker();
  std::vector<std::string> events;
  std::atomic<int> latencies{0};
  broker_thread_.Invoke([&](Reactor&) {
    broker_->set_worker_event_hook([&](const MajordomoBroker::WorkerEvent& e) {
      events.push_back(std::string(e.service) + ":" +
                       std::to_string(static_cast<int>(e.kind)));
    });
    broker_->set_latency_hook(
        [&](std::string_view service, std::chrono::nanoseconds ns) {
          if (service == "echo" && ns.count() > 0) ++latencies;
        });
  });
  const std::size_t w = AddWorker("echo", Echo());
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 1; }));
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  ASSERT_TRUE(client.Request("echo", MakeFrames({"1"})).ok());
  ASSERT_TRUE(client.Request("echo", MakeFrames({"2"})).ok());
  worker_thread_.Invoke([&](Reactor&) { workers_[w]->Shutdown(); });
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 0; }));
  EXPECT_EQ(latencies.load(), 2);
  auto got = broker_thread_.Invoke([&](Reactor&) { return events; });
  EXPECT_THAT(got, ElementsAre("echo:0", "echo:1"));  // joined, left
}

// --- Prefetch (Options::worker_prefetch) -------------------------------------

// An invalid option is refused when the broker is made, not stored until
// the first Bind(): no broker exists that could be bound, and nothing of it
// stays registered with the reactor.
TEST_F(PrefetchTest, InvalidPrefetchFailsCreate) {
  for (int n : {0, -1, MajordomoBroker::kMaxWorkerPrefetch + 1}) {
    bool ok = broker_thread_.Invoke([&](Reactor& r) {
      const std::size_t timers = r.timer_count();
      absl::StatusOr<std::unique_ptr<MajordomoBroker>> b =
          MajordomoBroker::Create(r, ctx_, Prefetch(n));
      EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << n;
      EXPECT_THAT(std::string(b.status().message()),
                  ::testing::HasSubstr("worker_prefetch"));
      if (b.ok()) b->reset();
      EXPECT_EQ(r.timer_count(), timers) << n;
      return b.ok();
    });
    EXPECT_FALSE(ok) << n;
  }
  StartBroker(Prefetch(MajordomoBroker::kMaxWorkerPrefetch));  // the bound
}

// A negative linger (libzmq's "for ever") would let a broker block its
// context's termination for good; it is refused like worker_prefetch.
TEST_F(PrefetchTest, NegativeLingerFailsCreate) {
  auto o = FastBroker();
  o.linger = std::chrono::milliseconds(-1);
  absl::Status st = broker_thread_.Invoke(
      [&](Reactor& r) { return MajordomoBroker::Create(r, ctx_, o).status(); });
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("linger"));
  o.linger = std::chrono::milliseconds(0);  // allowed, as before
  StartBroker(o);
}

TEST_F(PrefetchTest, DefaultGivesABusyWorkerNoSecondRequest) {
  StartBroker(Prefetch(1));
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "r1"});
  c->Send({"", "MDPC01", "svc", "r2"});
  auto [addr, body] = Take(*w);
  EXPECT_EQ(body, "r1");
  EXPECT_TRUE(RecvCommand(*w, kRequest, 300ms).empty());
  EXPECT_EQ(Queued("svc"), 1u);
  w->Send({"", "MDPW01", kReply, addr, "", "a1"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "a1"));
  EXPECT_EQ(Take(*w).second, "r2");
}

TEST_F(PrefetchTest, WorkerGetsThreeRequestsBeforeReplying) {
  StartBroker(Prefetch(3));
  auto w = RawWorker("svc");
  auto c = RawClient();
  for (const char* r : {"r1", "r2", "r3", "r4"}) {
    c->Send({"", "MDPC01", "svc", r});
  }
  std::vector<std::string> addrs;
  for (const char* r : {"r1", "r2", "r3"}) {
    auto [addr, body] = Take(*w);
    EXPECT_EQ(body, r);
    addrs.push_back(addr);
  }
  EXPECT_TRUE(RecvCommand(*w, kRequest, 300ms).empty());  // no credit left
  EXPECT_EQ(Queued("svc"), 1u);
  broker_thread_.Invoke(
      [&](Reactor&) { EXPECT_EQ(broker_->open_requests(), 4u); });
  w->Send({"", "MDPW01", kReply, addrs[0], "", "a1"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "a1"));
  EXPECT_EQ(Take(*w).second, "r4");  // the freed credit
}

TEST_F(PrefetchTest, SpreadsOverWorkersBeforeAnyGetsASecond) {
  StartBroker(Prefetch(3));
  auto w1 = RawWorker("svc");
  auto w2 = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "r1"});
  c->Send({"", "MDPC01", "svc", "r2"});
  // One each, in least-recently-used order (w1 registered first).
  EXPECT_EQ(Take(*w1).second, "r1");
  EXPECT_EQ(Take(*w2).second, "r2");
  EXPECT_TRUE(RecvCommand(*w1, kRequest, 200ms).empty());
  c->Send({"", "MDPC01", "svc", "r3"});
  c->Send({"", "MDPC01", "svc", "r4"});
  EXPECT_EQ(Take(*w1).second, "r3");
  EXPECT_EQ(Take(*w2).second, "r4");
  EXPECT_TRUE(RecvCommand(*w1, kRequest, 200ms).empty());
  EXPECT_TRUE(RecvCommand(*w2, kRequest, 100ms).empty());
  auto s = Stats();
  EXPECT_EQ(s.services["svc"].idle_workers, 2u);  // one credit left each
}

TEST_F(PrefetchTest, RepliesOutOfOrderReachTheirClients) {
  StartBroker(Prefetch(3));
  auto w = RawWorker("svc");
  std::vector<std::unique_ptr<RawPeer>> clients;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(RawClient());
    const std::string body = "r" + std::to_string(i);
    clients[i]->Send({"", "MDPC01", "svc", body});
    // One at a time, so that request i is from client i.
    auto [addr, got] = Take(*w);
    EXPECT_EQ(got, body);
    addrs.push_back(addr);
  }
  for (int i = 2; i >= 0; --i) {
    w->Send({"", "MDPW01", kReply, addrs[i], "", "a" + std::to_string(i)});
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(clients[i]->Recv(),
                ElementsAre("", "MDPC01", "svc", "a" + std::to_string(i)));
  }
  auto s = Stats();
  EXPECT_EQ(s.replies, 3u);
  EXPECT_EQ(s.workers_disconnected, 0u);
  // A REPLY matching nothing outstanding is still unexpected.
  w->Send({"", "MDPW01", kReply, addrs[0], "", "again"});
  EXPECT_FALSE(RecvCommand(*w, kDisconnect).empty());
  EXPECT_EQ(Workers("svc"), 0u);
}

TEST_F(PrefetchTest, SameClientRepliesOutOfOrder) {
  StartBroker(Prefetch(2));
  auto w = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "r1"});
  c->Send({"", "MDPC01", "svc", "r2"});
  auto [a1, b1] = Take(*w);
  auto [a2, b2] = Take(*w);
  EXPECT_EQ(a1, a2);
  w->Send({"", "MDPW01", kReply, a2, "", "second"});
  w->Send({"", "MDPW01", kReply, a1, "", "first"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "second"));
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "first"));
  broker_thread_.Invoke(
      [&](Reactor&) { EXPECT_EQ(broker_->open_requests(), 0u); });
}

TEST_F(PrefetchTest, DeadWorkerHasEveryOutstandingRequestRedispatched) {
  StartBroker(Prefetch(3));  // max_redispatch 1
  auto dying = RawWorker("svc");
  auto c = RawClient();
  for (const char* r : {"r1", "r2", "r3"}) c->Send({"", "MDPC01", "svc", r});
  for (const char* r : {"r1", "r2", "r3"}) EXPECT_EQ(Take(*dying).second, r);
  auto heir = RawWorker("svc");
  dying->Send({"", "MDPW01", kDisconnect});
  // All three, oldest first, to the other worker.
  for (const char* r : {"r1", "r2", "r3"}) EXPECT_EQ(Take(*heir).second, r);
  auto s = Stats();
  EXPECT_EQ(s.redispatched, 3u);
  EXPECT_EQ(s.failures, 0u);
  // The heir dies too: the second failure is one too many for each.
  heir->Send({"", "MDPW01", kDisconnect});
  ASSERT_TRUE(WaitFor([&] { return Stats().failures == 3; }));
  s = Stats();
  EXPECT_EQ(s.redispatched, 3u);
  EXPECT_EQ(s.workers_left, 2u);
  broker_thread_.Invoke(
      [&](Reactor&) { EXPECT_EQ(broker_->open_requests(), 0u); });
}

TEST_F(PrefetchTest, DrainWaitsForEveryOutstandingRequest) {
  StartBroker(Prefetch(3));
  auto w = RawWorker("svc");
  auto c = RawClient();
  for (const char* r : {"r1", "r2", "r3"}) c->Send({"", "MDPC01", "svc", r});
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) addrs.push_back(Take(*w).first);
  std::atomic<bool> drained{false};
  broker_thread_.Invoke(
      [&](Reactor&) { broker_->Drain(10000ms, [&] { drained = true; }); });
  for (int i = 0; i < 2; ++i) {
    w->Send({"", "MDPW01", kReply, addrs[i], "", "a"});
    EXPECT_FALSE(c->Recv().empty());
  }
  EXPECT_FALSE(drained.load());
  broker_thread_.Invoke(
      [&](Reactor&) { EXPECT_EQ(broker_->open_requests(), 1u); });
  w->Send({"", "MDPW01", kReply, addrs[2], "", "a"});
  EXPECT_FALSE(c->Recv().empty());
  ASSERT_TRUE(WaitFor([&] { return drained.load(); }));
  auto s = Stats();
  EXPECT_EQ(s.replies, 3u);
  EXPECT_EQ(s.expired, 0u);
  EXPECT_FALSE(RecvCommand(*w, kDisconnect).empty());
}

// zb::MdpWorker takes a second REQUEST while its first reply is pending and
// answers each to its own client, in any order.  (Raw clients, one request
// each, so that the broker sees three clients.)
TEST_F(PrefetchTest, MdpWorkerHandlesRequestsWhileRepliesArePending) {
  auto o = FastBroker();
  o.worker_prefetch = 3;
  StartBroker(o);
  std::mutex mu;
  std::vector<std::pair<std::string, MdpWorker::Replier>> held;
  AddWorker("slow", [&](Frames body, MdpWorker::Replier r) {
    std::lock_guard<std::mutex> lock(mu);
    held.emplace_back(FramesToStrings(body)[0], std::move(r));
  });
  ASSERT_TRUE(WaitFor([&] { return Workers("slow") == 1; }));
  std::vector<std::unique_ptr<RawPeer>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(RawClient());
    clients[i]->Send({"", "MDPC01", "slow", std::to_string(i)});
  }
  // All three reach the handler before any reply.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size() == 3;
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    for (int i = 2; i >= 0; --i) {
      held[i].second.Reply(MakeFrames({"re" + held[i].first}));
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(clients[i]->Recv(),
                ElementsAre("", "MDPC01", "slow", "re" + std::to_string(i)));
  }
  const auto ws =
      worker_thread_.Invoke([&](Reactor&) { return workers_[0]->stats(); });
  EXPECT_EQ(ws.requests, 3u);
  EXPECT_EQ(ws.replies, 3u);
  EXPECT_EQ(ws.dropped_replies, 0u);
}

TEST_F(PrefetchTest, ManyOutstandingTwoWorkers) {
  auto o = FastBroker();
  o.worker_prefetch = 16;
  StartBroker(o);
  AddWorker("echo", Echo());
  AddWorker("echo", Echo());
  ASSERT_TRUE(WaitFor([&] { return Workers("echo") == 2; }));
  constexpr int kRequests = 2000;
  std::atomic<int> done{0}, failed{0};
  std::vector<int> bodies;  // worker thread only
  worker_thread_.Invoke([&](Reactor& r) {
    absl::StatusOr<std::unique_ptr<MdpAsyncClient>> created =
        MdpAsyncClient::Create(r, ctx_, endpoint_);
    ASSERT_TRUE(created.ok()) << created.status();
    async_clients_.push_back(*std::move(created));
    for (int i = 0; i < kRequests; ++i) {
      // Two workers may answer out of order; request tags match each reply
      // to its own request all the same.
      ASSERT_TRUE(async_clients_[0]
                      ->Request("echo", MakeFrames({std::to_string(i)}),
                                [&, i](absl::StatusOr<Frames> reply) {
                                  if (reply.ok()) {
                                    const int got =
                                        std::stoi(FramesToStrings(*reply)[0]);
                                    EXPECT_EQ(got, i);
                                    bodies.push_back(got);
                                    ++done;
                                  } else {
                                    ++failed;
                                  }
                                })
                      .ok());
    }
  });
  ASSERT_TRUE(
      WaitFor([&] { return done.load() + failed.load() == kRequests; }));
  EXPECT_EQ(failed.load(), 0);
  auto s = Stats();
  EXPECT_EQ(s.replies - s.mmi_requests, static_cast<std::uint64_t>(kRequests));
  worker_thread_.Invoke([&](Reactor&) {
    std::sort(bodies.begin(), bodies.end());
    for (int i = 0; i < kRequests; ++i) ASSERT_EQ(bodies[i], i);
  });
  ExpectBothWorkersServed();
}

// --- Service entries
// ----------------------------------------------------------

// A service is forgotten as soon as its last worker leaves with nothing
// queued, not at the next sweep (here a minute away).
TEST_F(PrefetchTest, ServiceForgottenWhenItsLastWorkerLeaves) {
  auto o = Prefetch(1);
  o.heartbeat_interval = 60000ms;
  StartBroker(o);
  auto w1 = RawWorker("svc");
  auto w2 = RawWorker("svc");
  w1->Send({"", "MDPW01", kDisconnect});
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  EXPECT_TRUE(Stats().services.contains("svc"));
  w2->Send({"", "MDPW01", kDisconnect});
  ASSERT_TRUE(WaitFor([&] { return !Stats().services.contains("svc"); }));
  // A busy worker that leaves has its request queued again...
  auto w3 = RawWorker("svc");
  auto c = RawClient();
  c->Send({"", "MDPC01", "svc", "r"});
  EXPECT_EQ(Take(*w3).second, "r");
  w3->Send({"", "MDPW01", kDisconnect});
  ASSERT_TRUE(WaitFor([&] { return Stats().redispatched == 1; }));
  // ...but not while a request is queued for it.
  EXPECT_EQ(Queued("svc"), 1u);
  EXPECT_TRUE(Stats().services.contains("svc"));
  auto w4 = RawWorker("svc");
  auto [addr, body] = Take(*w4);
  EXPECT_EQ(body, "r");
  w4->Send({"", "MDPW01", kReply, addr, "", "a"});
  EXPECT_THAT(c->Recv(), ElementsAre("", "MDPC01", "svc", "a"));
  w4->Send({"", "MDPW01", kDisconnect});
  ASSERT_TRUE(WaitFor([&] { return !Stats().services.contains("svc"); }));
  absl::StatusOr<std::unique_ptr<MdpClient>> mmi_or =
      MdpClient::Create(endpoint_, Quick(), &ctx_);
  ASSERT_TRUE(mmi_or.ok()) << mmi_or.status();
  MdpClient& mmi = **mmi_or;
  auto found = mmi.Request("mmi.service", MakeFrames({"svc"}));
  ASSERT_TRUE(found.ok());
  EXPECT_THAT(FramesToStrings(*found), ElementsAre("404"));
}

}  // namespace
}  // namespace zb
