// Copyright 2026 The zbrokers Authors.
//
// A program written as a user outside the project writes one: built by
// install_test.py with nothing but `pkg-config --cflags --libs zbrokers-cpp`
// against an installed tree (never the source tree), it runs a consensus
// broker with two workers and a Majordomo broker with one worker on a
// zb::ReactorThread, and makes one request to each from the main thread
// (zb::BlockingConsensusClient, zb::MdpClient).  Prints what it got and
// exits 0 when both answers are right, 1 otherwise; alarm() bounds it.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "zbrokers/consensus/blocking_client.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace {

int Fail(const std::string& why) {
  std::fprintf(stderr, "external_app: %s\n", why.c_str());
  return 1;
}

std::vector<std::string> Strings(const zb::Frames& frames) {
  std::vector<std::string> out;
  for (const zmq::message_t& f : frames) out.push_back(f.to_string());
  return out;
}

// A consensus worker that answers PREFIX + each payload frame.
absl::StatusOr<std::unique_ptr<zb::ConsensusWorker>> PrefixWorker(
    zb::Reactor& reactor, zmq::context_t& ctx, const std::string& endpoint,
    std::string prefix) {
  zb::ConsensusWorker::Options options;
  options.heartbeat_interval = std::chrono::milliseconds(200);
  return zb::ConsensusWorker::Create(
      reactor, ctx, endpoint, "echo",
      [prefix](std::span<zmq::message_t> payload,
               zb::ConsensusWorker::Responder responder) {
        zb::Frames answer;
        for (const zmq::message_t& f : payload) {
          answer.emplace_back(prefix + f.to_string());
        }
        responder.Succeed(std::move(answer));
      },
      options);
}

}  // namespace

int main() {
  alarm(60);  // a hang is a failure, never a stuck test
  zmq::context_t ctx;
  zb::ReactorThread thread;

  std::unique_ptr<zb::ConsensusBroker> ccp_broker;
  std::unique_ptr<zb::ConsensusWorker> worker_a, worker_b;
  std::unique_ptr<zb::MajordomoBroker> mdp_broker;
  std::unique_ptr<zb::MdpWorker> mdp_worker;
  std::string ccp_endpoint, mdp_endpoint, setup_error;
  thread.Invoke([&](zb::Reactor& reactor) {
    absl::StatusOr<std::unique_ptr<zb::ConsensusBroker>> made =
        zb::ConsensusBroker::Create(reactor, ctx, {});
    if (!made.ok()) {
      setup_error = "consensus broker: " + made.status().ToString();
      return;
    }
    ccp_broker = *std::move(made);
    if (absl::Status s = ccp_broker->Bind("tcp://127.0.0.1:*"); !s.ok()) {
      setup_error = "consensus bind: " + s.ToString();
      return;
    }
    ccp_endpoint = ccp_broker->endpoints().front();
    for (auto [worker, prefix] :
         {std::pair{&worker_a, "a:"}, std::pair{&worker_b, "b:"}}) {
      auto w = PrefixWorker(reactor, ctx, ccp_endpoint, prefix);
      if (!w.ok()) {
        setup_error = "consensus worker: " + w.status().ToString();
        return;
      }
      *worker = *std::move(w);
    }

    absl::StatusOr<std::unique_ptr<zb::MajordomoBroker>> created =
        zb::MajordomoBroker::Create(reactor, ctx,
                                    zb::MajordomoBroker::Options{});
    if (!created.ok()) {
      setup_error = "majordomo create: " + created.status().ToString();
      return;
    }
    mdp_broker = *std::move(created);
    if (absl::Status s = mdp_broker->Bind("tcp://127.0.0.1:*"); !s.ok()) {
      setup_error = "majordomo bind: " + s.ToString();
      return;
    }
    mdp_endpoint = mdp_broker->endpoints().front();
    auto w = zb::MdpWorker::Create(
        reactor, ctx, mdp_endpoint, "echo",
        [](zb::Frames body, zb::MdpWorker::Replier replier) {
          replier.Reply(std::move(body));
        });
    if (!w.ok()) {
      setup_error = "mdp worker: " + w.status().ToString();
      return;
    }
    mdp_worker = *std::move(w);
  });
  int rc = 0;
  if (!setup_error.empty()) rc = Fail(setup_error);

  // Both consensus workers registered, so that the request needs both.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (rc == 0 && thread.Invoke([&](zb::Reactor&) {
    return ccp_broker->worker_count("echo");
  }) < 2) {
    if (std::chrono::steady_clock::now() > deadline) {
      rc = Fail("the consensus workers never registered");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  absl::StatusOr<std::unique_ptr<zb::BlockingConsensusClient>> client =
      zb::BlockingConsensusClient::Create(ctx, ccp_endpoint);
  if (rc == 0 && !client.ok()) {
    rc = Fail("consensus client: " + client.status().ToString());
  }
  if (rc == 0) {
    zb::ConsensusClient::RequestOptions options;
    options.timeout = std::chrono::seconds(10);
    zb::ConsensusClient::Result r =
        (*client)->Request("echo", zb::MakeFrames({"hello"}), options);
    std::vector<std::string> got = Strings(r.payload);
    std::sort(got.begin(), got.end());
    if (!r.ok() || got != std::vector<std::string>{"a:hello", "b:hello"}) {
      rc = Fail("consensus request: ok=" + std::to_string(r.ok()) + " reason=" +
                r.reason + " frames=" + std::to_string(got.size()));
    } else {
      std::printf("consensus: %s %s\n", got[0].c_str(), got[1].c_str());
    }
  }

  if (rc == 0) {
    zb::MdpClient::Options options;
    options.timeout = std::chrono::seconds(5);
    options.retries = 1;
    absl::StatusOr<std::unique_ptr<zb::MdpClient>> client =
        zb::MdpClient::Create(mdp_endpoint, options, &ctx);
    absl::StatusOr<zb::Frames> reply =
        client.ok()
            ? (*client)->Request("echo", zb::MakeFrames({"hello", "mdp"}))
            : absl::StatusOr<zb::Frames>(client.status());
    if (!reply.ok()) {
      rc = Fail("mdp request: " + reply.status().ToString());
    } else if (Strings(*reply) != std::vector<std::string>{"hello", "mdp"}) {
      rc = Fail("mdp request: wrong reply");
    } else {
      std::printf("majordomo: hello mdp\n");
    }
  }

  // Everything that lives on the reactor goes on its thread, before the
  // thread and the context go.
  thread.Invoke([&](zb::Reactor&) {
    mdp_worker.reset();
    mdp_broker.reset();
    worker_a.reset();
    worker_b.reset();
    ccp_broker.reset();
  });
  if (rc == 0) std::printf("external C++ program: ok\n");
  return rc;
}
