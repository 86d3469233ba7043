// Copyright 2026 The zbrokers Authors.
//
// Both brokers bound on an IPv6 loopback endpoint (tcp://[::1]:*), with the
// C++ client and worker libraries connecting to it.  libzmq resolves IPv6
// literals only on sockets with ZMQ_IPV6 set, so before the brokers, clients
// and workers set it (zbrokers/common/endpoint.h) every step here failed
// with "No such device".  Every test also binds an IPv4 endpoint on the same
// broker, to show that the two coexist.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "absl/cleanup/cleanup.h"
#include "test/testing/must.h"
#include "test/testing/wait.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Runs `reactor` until `done()` or ten seconds.
bool RunUntil(Reactor& reactor, const std::function<bool()>& done) {
  return test::RunUntil(reactor, done, 10s, 20ms);
}

TEST(Ipv6Test, ConsensusRoundTripOverIpv6Loopback) {
  zmq::context_t ctx;
  Reactor reactor;
  absl::StatusOr<std::unique_ptr<ConsensusBroker>> made =
      ConsensusBroker::Create(reactor, ctx, {});
  ASSERT_TRUE(made.ok()) << made.status();
  ConsensusBroker& broker = **made;
  ASSERT_TRUE(broker.Bind("tcp://127.0.0.1:*").ok());
  const absl::Status bound = broker.Bind("tcp://[::1]:*");
  ASSERT_TRUE(bound.ok()) << bound;
  const std::string endpoint = broker.endpoints().back();
  EXPECT_THAT(endpoint, HasSubstr("tcp://[::1]:"));
  // The IPv4 endpoint bound first stays IPv4.
  EXPECT_THAT(broker.endpoints().front(), HasSubstr("tcp://127.0.0.1:"));

  std::unique_ptr<ConsensusWorker> worker = test::Must(
      ConsensusWorker::Create(reactor, ctx, endpoint, "echo",
                              [](std::span<zmq::message_t> payload,
                                 ConsensusWorker::Responder responder) {
                                responder.Succeed(payload);
                              }));
  ASSERT_TRUE(RunUntil(reactor, [&] { return broker.worker_count("echo"); }));

  absl::StatusOr<std::unique_ptr<ConsensusClient>> client =
      ConsensusClient::Create(reactor, ctx, endpoint);
  ASSERT_TRUE(client.ok()) << client.status();
  std::optional<ConsensusClient::Result> result;
  (*client)->Request(
      "echo", MakeFrames({"over ipv6"}), {.timeout = 5s},
      [&](ConsensusClient::Result&& r) { result = std::move(r); });
  ASSERT_TRUE(RunUntil(reactor, [&] { return result.has_value(); }));
  ASSERT_TRUE(result->ok()) << result->reason;
  ASSERT_EQ(result->payload.size(), 1u);
  EXPECT_EQ(result->payload[0].to_string(), "over ipv6");
}

TEST(Ipv6Test, MajordomoRoundTripOverIpv6Loopback) {
  zmq::context_t ctx;
  ReactorThread thread;
  std::string endpoint;
  std::unique_ptr<MajordomoBroker> broker;
  std::unique_ptr<MdpWorker> worker;
  std::unique_ptr<MdpAsyncClient> async_client;
  std::optional<absl::StatusOr<Frames>> async_reply;
  // Whatever happens, the reactor's objects die on the reactor's thread.
  absl::Cleanup cleanup = [&] {
    thread.Invoke([&](Reactor&) {
      async_client.reset();
      worker.reset();
      broker.reset();
    });
  };
  ASSERT_TRUE(thread
                  .Invoke([&](Reactor& reactor) -> absl::Status {
                    absl::StatusOr<std::unique_ptr<MajordomoBroker>> b =
                        MajordomoBroker::Create(reactor, ctx, {});
                    if (!b.ok()) return b.status();
                    broker = *std::move(b);
                    if (absl::Status s = broker->Bind("tcp://[::1]:*");
                        !s.ok()) {
                      return s;
                    }
                    endpoint = broker->endpoints().back();
                    return broker->Bind("tcp://127.0.0.1:*");
                  })
                  .ok());
  EXPECT_THAT(endpoint, HasSubstr("tcp://[::1]:"));

  ASSERT_TRUE(
      thread
          .Invoke([&](Reactor& reactor) -> absl::Status {
            absl::StatusOr<std::unique_ptr<MdpWorker>> w =
                MdpWorker::Create(reactor, ctx, endpoint, "echo",
                                  [](Frames body, MdpWorker::Replier r) {
                                    r.Reply(std::move(body));
                                  });
            if (!w.ok()) return w.status();
            worker = *std::move(w);
            absl::StatusOr<std::unique_ptr<MdpAsyncClient>> c =
                MdpAsyncClient::Create(reactor, ctx, endpoint,
                                       MdpAsyncClientOptions{.timeout = 5s});
            if (!c.ok()) return c.status();
            async_client = *std::move(c);
            return async_client->Request(
                "echo", MakeFrames({"async over ipv6"}),
                [&](absl::StatusOr<Frames> r) { async_reply = std::move(r); });
          })
          .ok());

  // The synchronous client, on this thread.
  absl::StatusOr<std::unique_ptr<MdpClient>> client_or =
      MdpClient::Create(endpoint, {.timeout = 5s, .retries = 0}, &ctx);
  ASSERT_TRUE(client_or.ok()) << client_or.status();
  MdpClient& client = **client_or;
  absl::StatusOr<Frames> reply =
      client.Request("echo", MakeFrames({"sync over ipv6"}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->size(), 1u);
  EXPECT_EQ((*reply)[0].to_string(), "sync over ipv6");

  const auto deadline = std::chrono::steady_clock::now() + 10s;
  bool got = false;
  while (!got && std::chrono::steady_clock::now() < deadline) {
    got = thread.Invoke([&](Reactor&) { return async_reply.has_value(); });
    if (!got) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(got);
  thread.Invoke([&](Reactor&) {
    ASSERT_TRUE(async_reply->ok()) << async_reply->status();
    ASSERT_EQ((*async_reply)->size(), 1u);
    EXPECT_EQ((**async_reply)[0].to_string(), "async over ipv6");
  });
}

}  // namespace
}  // namespace zb
