// Copyright 2026 The zbrokers Authors.
//
// Shared pieces of the Majordomo integration tests: a broker on its own
// reactor thread with workers and asynchronous clients on another
// (MdpIntegrationTest), raw DEALER peers that speak MDP by hand (RawPeer),
// and bounded waits.  Heartbeats are short (50 ms) so that expiry paths run
// in well under a second; every wait is bounded generously and nothing
// asserts on timing.

#ifndef BROKERS_MAJORDOMO_TEST_UTIL_H_
#define BROKERS_MAJORDOMO_TEST_UTIL_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "gtest/gtest.h"
#include "test/testing/must.h"
#include "test/testing/wait.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb::mdp_test {

using namespace std::chrono_literals;

inline constexpr auto kWait = std::chrono::seconds(10);

// WaitFor(pred, limit = kWait): polls pred() until it holds.
using test::WaitFor;

inline MajordomoBroker::Options FastBroker() {
  MajordomoBroker::Options o;
  o.heartbeat_interval = 50ms;
  o.heartbeat_liveness = 5;  // tolerant of a loaded machine
  o.queue_expiry = 5000ms;
  return o;
}

inline MdpWorker::Options FastWorker() {
  MdpWorker::Options o;
  o.heartbeat_interval = 50ms;
  o.heartbeat_liveness = 5;  // tolerant of a loaded machine
  o.reconnect_delay = 20ms;
  return o;
}

// A broker on its own reactor thread and a second reactor thread for the
// workers and asynchronous clients.
class MdpIntegrationTest : public ::testing::Test {
 protected:
  void StartBroker(MajordomoBroker::Options options = FastBroker(),
                   std::string endpoint = "tcp://127.0.0.1:*") {
    // A restarted broker binds the port its predecessor had; libzmq closes
    // the old listener asynchronously, so the port may be busy for a moment.
    bool bound = false;
    for (int attempt = 0; attempt < 250 && !bound; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(20ms);
      bound = broker_thread_.Invoke([&](Reactor& r) {
        absl::StatusOr<std::unique_ptr<MajordomoBroker>> b =
            MajordomoBroker::Create(r, ctx_, options);
        EXPECT_TRUE(b.ok()) << b.status();
        if (!b.ok()) return false;
        broker_ = *std::move(b);
        if (broker_->Bind(endpoint).ok()) return true;
        broker_.reset();
        return false;
      });
    }
    ASSERT_TRUE(bound) << endpoint;
    broker_thread_.Invoke([&](Reactor&) {
      endpoint_ = broker_->endpoints().back();
      broker_->set_log_hook(
          [this](LogLevel, std::string_view) { ++log_lines_; });
    });
  }

  void StopBroker() {
    broker_thread_.Invoke([&](Reactor&) { broker_.reset(); });
  }

  MajordomoBroker::Stats Stats() {
    return broker_thread_.Invoke([&](Reactor&) { return broker_->stats(); });
  }

  // workers_[0] and workers_[1] both handled requests.
  void ExpectBothWorkersServed() {
    const auto counts = worker_thread_.Invoke([&](Reactor&) {
      return std::make_pair(workers_[0]->stats().requests,
                            workers_[1]->stats().requests);
    });
    EXPECT_GT(counts.first, 0u);
    EXPECT_GT(counts.second, 0u);
  }

  std::size_t Workers(const std::string& service) {
    auto s = Stats();
    auto it = s.services.find(service);
    return it == s.services.end() ? 0 : it->second.workers;
  }

  // Starts a worker on the worker thread; returns its index.
  std::size_t AddWorker(const std::string& service, MdpWorker::Handler h,
                        MdpWorker::Options o = FastWorker()) {
    return worker_thread_.Invoke([&](Reactor& r) {
      workers_.push_back(test::Must(
          MdpWorker::Create(r, ctx_, endpoint_, service, std::move(h), o)));
      return workers_.size() - 1;
    });
  }

  static MdpWorker::Handler Echo() {
    return [](Frames body, MdpWorker::Replier r) { r.Reply(std::move(body)); };
  }

  // A handler that answers with a fixed name.
  static MdpWorker::Handler Named(std::string name) {
    return
        [name](Frames, MdpWorker::Replier r) { r.Reply(MakeFrames({name})); };
  }

  void TearDown() override {
    worker_thread_.Invoke([&](Reactor&) {
      async_clients_.clear();
      workers_.clear();
    });
    StopBroker();
  }

  zmq::context_t ctx_;
  ReactorThread broker_thread_;
  ReactorThread worker_thread_;
  std::unique_ptr<MajordomoBroker> broker_;
  std::string endpoint_;
  std::vector<std::unique_ptr<MdpWorker>> workers_;
  std::vector<std::unique_ptr<MdpAsyncClient>> async_clients_;
  std::atomic<int> log_lines_{0};
};

// A raw DEALER peer speaking MDP by hand, for the cases the libraries never
// produce.
class RawPeer {
 public:
  // `identity`, when not empty, is the socket's ZMQ_ROUTING_ID (the
  // identity the broker's ROUTER sees); otherwise the ROUTER makes one.
  RawPeer(zmq::context_t& ctx, const std::string& endpoint,
          const std::string& identity = "")
      : socket_(ctx, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    if (!identity.empty()) socket_.set(zmq::sockopt::routing_id, identity);
    socket_.connect(endpoint);
  }
  void Send(std::initializer_list<std::string_view> parts) {
    Frames f = MakeFrames(parts);
    // Blocking, so that a flood waits for the high-water mark to clear.
    ASSERT_TRUE(zmq::send_multipart(socket_, f).has_value());
  }
  // Receives one message, or nothing within `limit`.
  std::vector<std::string> Recv(std::chrono::milliseconds limit = kWait) {
    zmq_pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, limit) <= 0) return {};
    Frames f;
    (void)zmq::recv_multipart(socket_, std::back_inserter(f));
    return FramesToStrings(f);
  }
  zmq::socket_t& socket() { return socket_; }

 private:
  zmq::socket_t socket_;
};

inline const std::string kReady(1, '\x01');
inline const std::string kRequest(1, '\x02');
inline const std::string kReply(1, '\x03');
inline const std::string kHeartbeat(1, '\x04');
inline const std::string kDisconnect(1, '\x05');

inline MdpClient::Options Quick(int retries = 0,
                                std::chrono::milliseconds timeout = 5000ms) {
  MdpClient::Options o;
  o.retries = retries;
  o.timeout = timeout;
  return o;
}

// Slow heartbeats, so that raw workers that never heartbeat stay registered
// for the whole test.
inline MajordomoBroker::Options Prefetch(int n) {
  MajordomoBroker::Options o;
  o.heartbeat_interval = 1000ms;
  o.heartbeat_liveness = 10;
  o.worker_prefetch = n;
  return o;
}

// The next message with MDP command `command` (heartbeats skipped), or {}.
inline std::vector<std::string> RecvCommand(
    RawPeer& peer, const std::string& command,
    std::chrono::milliseconds limit = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    std::vector<std::string> got = peer.Recv(left);
    if (got.empty()) return {};
    if (got.size() >= 3 && got[2] == command) return got;
  }
}

// A raw worker: READY for `service`, registered before returning.
class PrefetchTest : public MdpIntegrationTest {
 protected:
  std::unique_ptr<RawPeer> RawWorker(const std::string& service) {
    const std::size_t before = Workers(service);
    auto w = std::make_unique<RawPeer>(ctx_, endpoint_);
    w->Send({"", "MDPW01", kReady, service});
    EXPECT_TRUE(WaitFor([&] { return Workers(service) == before + 1; }));
    return w;
  }
  std::unique_ptr<RawPeer> RawClient() {
    return std::make_unique<RawPeer>(ctx_, endpoint_);
  }
  // A REQUEST's client address and first body frame.
  static std::pair<std::string, std::string> Take(RawPeer& worker) {
    std::vector<std::string> got = RecvCommand(worker, kRequest);
    EXPECT_EQ(got.size(), 6u);
    if (got.size() != 6) return {};
    return {got[3], got[5]};
  }
  std::size_t Queued(const std::string& service) {
    auto s = Stats();
    auto it = s.services.find(service);
    return it == s.services.end() ? 0 : it->second.queued;
  }
};

// Outcomes of requests whose workers echo their (unique) bodies.
struct MatchCounts {
  int ok = 0;
  int wrong = 0;   // completed with another request's reply
  int failed = 0;  // timeout or another error
  int done() const { return ok + wrong + failed; }
};

// Sends `total` requests with `window` outstanding through `client` (on its
// reactor's thread); each body is unique and the workers echo it, so a
// reply must equal its own request.
inline void RunMatched(MdpAsyncClient& client, int total, int window,
                       MatchCounts& counts, std::atomic<bool>& finished) {
  struct State {
    MdpAsyncClient* client;
    int total;
    int sent = 0;
    MatchCounts* counts;
    std::atomic<bool>* finished;
    std::function<void()> send_one;
  };
  auto st = std::make_shared<State>();
  st->client = &client;
  st->total = total;
  st->counts = &counts;
  st->finished = &finished;
  st->send_one = [st] {
    const std::string body = "request-" + std::to_string(st->sent++);
    absl::Status s = st->client->Request(
        "echo", MakeFrames({body}), [st, body](absl::StatusOr<Frames> reply) {
          if (!reply.ok()) {
            ++st->counts->failed;
          } else if (FramesToStrings(*reply) ==
                     std::vector<std::string>{body}) {
            ++st->counts->ok;
          } else {
            ++st->counts->wrong;
          }
          if (st->sent < st->total) st->send_one();
          if (st->counts->done() == st->total) {
            *st->finished = true;
            st->send_one = nullptr;  // breaks the cycle
          }
        });
    EXPECT_TRUE(s.ok()) << s;
  };
  for (int i = 0; i < window && st->sent < total; ++i) st->send_one();
}

}  // namespace zb::mdp_test

#endif  // BROKERS_MAJORDOMO_TEST_UTIL_H_
