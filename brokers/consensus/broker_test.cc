// Copyright 2026 The zbrokers Authors.
//
// Tests of the consensus broker through raw DEALER sockets that speak CCp100
// frame by frame, so they depend only on the codec and the broker.

#include "zbrokers/consensus/broker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "test/testing/wait.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using ccp::MessageType;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr milliseconds kWait{5000};  // generous bound for every wait

std::string Byte(MessageType t) { return std::string(1, static_cast<char>(t)); }

std::string SeqBytes(std::uint64_t sequence, std::uint32_t client) {
  const auto b = ccp::EncodeSequenceId({sequence, client});
  return std::string(b.data(), b.size());
}

std::string Interval(std::uint32_t ms) {
  std::string s(4, '\0');
  s[0] = static_cast<char>(ms >> 24);
  s[1] = static_cast<char>(ms >> 16);
  s[2] = static_cast<char>(ms >> 8);
  s[3] = static_cast<char>(ms);
  return s;
}

const std::string kTagS(ccp::kTag);

// A decoded message body as the test sees it.
struct Msg {
  MessageType type;
  std::string service;
  ccp::SequenceId sequence;
  std::vector<std::string> payload;
  std::vector<std::string> raw;
};

// A raw DEALER speaking CCp100.
class Peer {
 public:
  Peer(zmq::context_t& ctx, const std::string& endpoint)
      : socket_(ctx, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  // Sends [""][body...].
  void Send(const std::vector<std::string>& body) {
    std::vector<std::string> frames = {""};
    frames.insert(frames.end(), body.begin(), body.end());
    SendRaw(frames);
  }
  // Sends exactly these frames (no delimiter added).
  void SendRaw(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      socket_.send(zmq::buffer(frames[i]), i + 1 < frames.size()
                                               ? zmq::send_flags::sndmore
                                               : zmq::send_flags::none);
    }
  }

  void Ready(const std::string& service, std::uint32_t interval_ms = 1000,
             std::uint8_t retries = 3) {
    Send({kTagS, Byte(MessageType::kReady), service, Interval(interval_ms),
          std::string(1, static_cast<char>(retries))});
  }
  void Request(const std::string& service, ccp::SequenceId id,
               std::vector<std::string> payload = {""}) {
    std::vector<std::string> body = {kTagS, Byte(MessageType::kRequest),
                                     service,
                                     SeqBytes(id.sequence, id.client_id)};
    body.insert(body.end(), payload.begin(), payload.end());
    Send(body);
  }
  void Reply(const Msg& request, bool success,
             std::vector<std::string> payload) {
    std::vector<std::string> body = {
        kTagS,
        Byte(success ? MessageType::kReplySuccess : MessageType::kReplyFailure),
        request.service,
        SeqBytes(request.sequence.sequence, request.sequence.client_id)};
    body.insert(body.end(), payload.begin(), payload.end());
    Send(body);
  }
  void Heartbeat() { Send({kTagS, Byte(MessageType::kHeartbeat)}); }
  void Disconnect(const std::string& service) {
    Send({kTagS, Byte(MessageType::kDisconnect), service});
  }

  // The next message, decoded; nullopt after `timeout`.  HEARTBEATs are
  // skipped unless asked for.
  std::optional<Msg> Recv(milliseconds timeout = kWait,
                          bool keep_heartbeats = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      const auto left = std::chrono::duration_cast<milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, left);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(socket_, std::back_inserter(frames))) continue;
      auto body = ccp::DealerBody(frames);
      EXPECT_TRUE(body.ok()) << body.status();
      if (!body.ok()) return std::nullopt;
      auto h = ccp::ParseHeader(*body);
      EXPECT_TRUE(h.ok()) << h.status();
      if (!h.ok()) return std::nullopt;
      if (h->type == MessageType::kHeartbeat && !keep_heartbeats) continue;
      Msg m;
      m.type = h->type;
      m.service = std::string(h->service);
      m.sequence = h->sequence;
      m.raw = FramesToStrings(*body);
      for (std::size_t i = h->payload_index; i < body->size(); ++i) {
        m.payload.emplace_back(View((*body)[i]));
      }
      return m;
    }
  }

  // True when nothing but heartbeats arrives within `quiet`.
  bool Silent(milliseconds quiet) { return !Recv(quiet).has_value(); }

  void Close() { socket_.close(); }

 private:
  zmq::socket_t socket_;
};

class ConsensusBrokerTest : public ::testing::Test {
 protected:
  static ConsensusBroker::Options TestOptions() {
    ConsensusBroker::Options o;
    // Long enough for a loaded machine; NoAnswerFailsAtTheDeadline sets a
    // short one.
    o.request_timeout = milliseconds(3000);
    o.sweep_interval = milliseconds(10);
    // The default linger (100 ms), not 0: libzmq 4.3 aborts ("Resource
    // temporarily unavailable (src/session_base.cpp:260)") when a socket
    // closed with linger 0 -- its pipes terminated at once -- then sees the
    // connection of a peer fail while a multipart message to that peer is
    // half written, which the tests whose workers or clients stop reading
    // leave behind (CI hit it once).  With a linger the pipe waits for its
    // delimiter and the rest of the message can still be read.
    // Tests use long expiries (many retries) so that a loaded machine never
    // expires a worker early; the default bound is tested on its own.
    o.max_heartbeat_liveness = 255;
    return o;
  }

  void Start(ConsensusBroker::Options options = TestOptions()) {
    thread_ = std::make_unique<ReactorThread>();
    endpoint_ = thread_->Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<ConsensusBroker>> created =
          ConsensusBroker::Create(r, ctx_, std::move(options));
      EXPECT_TRUE(created.ok()) << created.status();
      broker_ = *std::move(created);
      broker_->set_log_hook([this](LogLevel, std::string_view line) {
        std::lock_guard<std::mutex> lock(log_mu_);
        logs_.emplace_back(line);
      });
      const absl::Status s = broker_->Bind("tcp://127.0.0.1:*");
      EXPECT_TRUE(s.ok()) << s;
      return broker_->endpoints().at(0);
    });
  }

  void StopBroker() {
    if (!thread_) return;
    thread_->Invoke([&](Reactor&) { broker_.reset(); });
    thread_.reset();
  }

  void TearDown() override { StopBroker(); }

  template <typename F>
  auto OnBroker(F f) {
    return thread_->Invoke([&](Reactor&) { return f(*broker_); });
  }
  ConsensusBroker::Stats Stats() {
    return OnBroker([](ConsensusBroker& b) { return b.stats(); });
  }
  std::size_t Workers(const std::string& service) {
    return OnBroker(
        [&](ConsensusBroker& b) { return b.worker_count(service); });
  }
  // Polls `pred` until it holds or kWait passes.
  bool WaitFor(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return pred();
  }
  std::vector<std::string> Logs() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return logs_;
  }

  // The default heartbeat settings never expire a worker within a test.
  std::unique_ptr<Peer> NewWorker(const std::string& service,
                                  std::uint32_t interval_ms = 1000,
                                  std::uint8_t retries = 30) {
    const std::size_t before = Workers(service);
    auto w = std::make_unique<Peer>(ctx_, endpoint_);
    w->Ready(service, interval_ms, retries);
    EXPECT_TRUE(WaitFor([&] { return Workers(service) == before + 1; }));
    return w;
  }

  zmq::context_t ctx_;  // first member: outlives every socket
  std::unique_ptr<ReactorThread> thread_;
  std::unique_ptr<ConsensusBroker> broker_;
  std::string endpoint_;
  std::mutex log_mu_;
  std::vector<std::string> logs_;
};

TEST_F(ConsensusBrokerTest, FanOutToOneThroughSixteenWorkers) {
  Start();
  Peer client(ctx_, endpoint_);
  std::vector<std::unique_ptr<Peer>> workers;
  for (int n = 1; n <= 16; ++n) {
    SCOPED_TRACE(n);
    workers.push_back(NewWorker("echo"));
    client.Request("echo", {static_cast<std::uint64_t>(n), 7},
                   {"ask", std::to_string(n)});
    std::vector<Msg> requests;
    for (auto& w : workers) {
      auto m = w->Recv();
      ASSERT_TRUE(m.has_value());
      EXPECT_EQ(m->type, MessageType::kRequest);
      EXPECT_EQ(m->service, "echo");
      EXPECT_EQ(m->sequence,
                (ccp::SequenceId{static_cast<std::uint64_t>(n), 7}));
      EXPECT_THAT(m->payload, ElementsAre("ask", std::to_string(n)));
      requests.push_back(*m);
    }
    // Answer in reverse registration order: the reply must still list the
    // payloads in registration order.
    for (int i = n - 1; i >= 0; --i) {
      workers[i]->Reply(requests[i], true,
                        {"w" + std::to_string(i), "x" + std::to_string(i)});
    }
    auto reply = client.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, MessageType::kReplySuccess);
    EXPECT_EQ(reply->service, "echo");
    EXPECT_EQ(reply->sequence.sequence, static_cast<std::uint64_t>(n));
    std::vector<std::string> expected;
    for (int i = 0; i < n; ++i) {
      expected.push_back("w" + std::to_string(i));
      expected.push_back("x" + std::to_string(i));
    }
    EXPECT_THAT(reply->payload, ElementsAreArray(expected));
  }
  const auto stats = Stats();
  EXPECT_EQ(stats.requests, 16u);
  EXPECT_EQ(stats.replies_success, 16u);
  EXPECT_EQ(stats.replies_failure, 0u);
  EXPECT_EQ(stats.workers_joined, 16u);
}

TEST_F(ConsensusBrokerTest, OneWorkerFailureFailsTheRequest) {
  Start();
  auto w1 = NewWorker("svc");
  auto w2 = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 1}, {"p"});
  auto r1 = w1->Recv();
  auto r2 = w2->Recv();
  ASSERT_TRUE(r1 && r2);
  w2->Reply(*r2, false, {"disk full", "details"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  EXPECT_EQ(reply->sequence, (ccp::SequenceId{1, 1}));
  // The worker's failure payload is forwarded unchanged.
  EXPECT_THAT(reply->payload, ElementsAre("disk full", "details"));
  // The other worker's late success is dropped, not sent.
  w1->Reply(*r1, true, {"ok"});
  EXPECT_TRUE(WaitFor([&] { return Stats().late_replies == 1; }));
  EXPECT_TRUE(client.Silent(milliseconds(50)));
  EXPECT_EQ(Stats().worker_failures, 1u);
}

TEST_F(ConsensusBrokerTest, FailureWithoutPayloadGetsAReason) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 2});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  w->Reply(*r, false, {});  // the 2011 broker's style: no payload at all
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  ASSERT_EQ(reply->payload.size(), 2u);
  EXPECT_EQ(reply->payload[0], ccp::kReasonWorkerFailed);
}

TEST_F(ConsensusBrokerTest, NoAnswerFailsAtTheDeadline) {
  auto options = TestOptions();
  options.request_timeout = milliseconds(300);
  Start(options);
  auto w1 = NewWorker("slow");
  auto w2 = NewWorker("slow");
  Peer client(ctx_, endpoint_);
  const auto start = std::chrono::steady_clock::now();
  client.Request("slow", {1, 3});
  auto r1 = w1->Recv();
  ASSERT_TRUE(r1.has_value());
  w1->Reply(*r1, true, {"fine"});  // w2 never answers
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  ASSERT_EQ(reply->payload.size(), 2u);
  EXPECT_EQ(reply->payload[0], ccp::kReasonTimeout);
  EXPECT_THAT(reply->payload[1], HasSubstr("1 of 2"));
  EXPECT_EQ(Stats().timeouts, 1u);
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.open_requests(); }), 0u);
}

TEST_F(ConsensusBrokerTest, NoWorkersFailsAtOnce) {
  Start();
  Peer client(ctx_, endpoint_);
  client.Request("nobody", {1, 4}, {"x"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  EXPECT_EQ(reply->service, "nobody");
  EXPECT_EQ(reply->sequence, (ccp::SequenceId{1, 4}));
  ASSERT_EQ(reply->payload.size(), 2u);
  EXPECT_EQ(reply->payload[0], ccp::kReasonNoWorkers);
  EXPECT_EQ(Stats().no_workers, 1u);
}

// Issue 10.1: a 2011 client whose message encodes to no frames sends
// [CCp100][0x03][service][sequence id].  It was dropped as malformed and its
// sequence number spent, so every later request failed with bad-sequence.
TEST_F(ConsensusBrokerTest, RequestWithoutPayloadFramesIsServedAsSent) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 40}, {});  // no payload frame at all
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->sequence, (ccp::SequenceId{1, 40}));
  // The worker sees it as sent: four body frames, no payload.
  EXPECT_EQ(r->raw.size(), 4u);
  EXPECT_TRUE(r->payload.empty());
  w->Reply(*r, true, {"done"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("done"));

  // The next number is accepted: nothing was spent behind the client's back.
  client.Request("svc", {2, 40}, {"next"});
  r = w->Recv();
  ASSERT_TRUE(r.has_value());
  w->Reply(*r, true, {});
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  const auto stats = Stats();
  EXPECT_EQ(stats.malformed, 0u);
  EXPECT_EQ(stats.rejected_sequence, 0u);
  EXPECT_EQ(stats.replies_success, 2u);
}

// Issue 10.1: a malformed REQUEST whose sender and sequence id can be read is
// answered (never dropped in silence) and uses up its sequence number.
TEST_F(ConsensusBrokerTest, MalformedRequestWithReadableSequenceIsAnswered) {
  auto options = TestOptions();
  options.max_frames = 16;
  Start(options);
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  // The answer parses for any client: a service name no client could parse
  // is replaced by "zb:malformed".
  auto expect_malformed = [&](std::uint64_t seq, std::string_view why,
                              std::string_view service = "zb:malformed") {
    auto reply = client.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, MessageType::kReplyFailure);
    EXPECT_EQ(reply->service, service);
    EXPECT_EQ(reply->sequence, (ccp::SequenceId{seq, 41}));
    ASSERT_EQ(reply->payload.size(), 2u);
    EXPECT_EQ(reply->payload[0], ccp::kReasonMalformed);
    EXPECT_THAT(reply->payload[1], HasSubstr(why));
  };
  client.Request(std::string(256, 's'), {1, 41});  // service name too long
  expect_malformed(1, "service name is 256 bytes, limit is 255");
  client.Request("", {2, 41});  // empty service name
  expect_malformed(2, "empty service name");
  client.Request("svc", {3, 41}, std::vector<std::string>(40, "x"));
  expect_malformed(3, "44 frames, limit is 16", "svc");

  // Each used up its number: number 4 is the next one, and it is served.
  client.Request("svc", {4, 41}, {"fine"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  EXPECT_THAT(r->payload, ElementsAre("fine"));
  w->Reply(*r, true, {"ok"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_TRUE(w->Silent(milliseconds(30)));  // the bad ones never reached it
  const auto stats = Stats();
  EXPECT_EQ(stats.malformed, 3u);
  EXPECT_EQ(stats.malformed_requests, 3u);
  EXPECT_EQ(stats.requests, 4u);  // every answered one
  EXPECT_EQ(stats.rejected_sequence, 0u);
  EXPECT_EQ(stats.replies_failure, 3u);

  // A malformed request that breaks the sequence rules is answered with
  // bad-sequence and does not move the record.
  client.Request("", {9, 41});
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonBadSequence);
  client.Request("", {5, 41});
  expect_malformed(5, "empty service name");
}

// A worker whose socket closes without DISCONNECT is dropped (unroutable or
// expired); the request completes with the workers that remain.
TEST_F(ConsensusBrokerTest, WorkerSocketClosedMidRequest) {
  auto options = TestOptions();
  options.request_timeout = milliseconds(10000);  // must not be what ends it
  Start(options);
  // Frequent heartbeats find a closed socket fast (unroutable); expiry
  // (5 s) is far away, so a slow machine cannot expire w1 early.
  auto w1 = NewWorker("svc", 50, 100);
  auto w2 = NewWorker("svc", 50, 100);
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 5}, {"q"});
  auto r1 = w1->Recv();
  auto r2 = w2->Recv();
  ASSERT_TRUE(r1 && r2);
  w1->Reply(*r1, true, {"from-w1"});
  w2->Close();
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("from-w1"));
  const auto stats = Stats();
  EXPECT_EQ(stats.workers_left + stats.workers_expired, 1u);

  // The only worker closes: the request fails with worker-left.
  client.Request("svc", {2, 5}, {"q"});
  ASSERT_TRUE(w1->Recv().has_value());
  w1->Close();
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  ASSERT_FALSE(reply->payload.empty());
  EXPECT_EQ(reply->payload[0], ccp::kReasonWorkerLeft);
  EXPECT_EQ(Workers("svc"), 0u);
}

TEST_F(ConsensusBrokerTest, DisconnectMidRequest) {
  Start();
  auto w1 = NewWorker("svc");
  auto w2 = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 6});
  auto r1 = w1->Recv();
  ASSERT_TRUE(r1 && w2->Recv());
  w2->Disconnect("svc");
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  w1->Reply(*r1, true, {"only-w1"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("only-w1"));

  client.Request("svc", {2, 6});
  ASSERT_TRUE(w1->Recv().has_value());
  w1->Disconnect("svc");
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonWorkerLeft);
  EXPECT_EQ(Stats().workers_left, 2u);
}

TEST_F(ConsensusBrokerTest, HeartbeatsAndExpiry) {
  Start();
  auto silent = NewWorker("hb", 50, 2);   // expires after 100 ms
  auto alive = NewWorker("hb", 200, 10);  // would need 2 s of silence
  // The broker heartbeats a worker it has nothing else to send.
  auto hb = alive->Recv(kWait, /*keep_heartbeats=*/true);
  ASSERT_TRUE(hb.has_value());
  EXPECT_EQ(hb->type, MessageType::kHeartbeat);
  // `alive` keeps heartbeating, `silent` does not: only `silent` expires.
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (Workers("hb") != 1 && std::chrono::steady_clock::now() < deadline) {
    alive->Heartbeat();
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Workers("hb"), 1u);
  for (int i = 0; i < 15; ++i) {  // 300 ms: several expiry periods
    alive->Heartbeat();
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Workers("hb"), 1u);
  EXPECT_EQ(Stats().workers_expired, 1u);
  EXPECT_GE(Stats().heartbeats_sent, 1u);
  // The expired worker was told to go away.
  std::optional<Msg> m;
  do {
    m = silent->Recv(kWait, /*keep_heartbeats=*/true);
  } while (m && m->type == MessageType::kHeartbeat);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);
  EXPECT_EQ(m->service, "hb");
  // The log says who left and why.
  bool logged = false;
  for (const auto& line : Logs()) {
    logged = logged || line.find("expired") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

// An accepted READY is answered with a HEARTBEAT at once, not after an
// interval of silence.  A worker counts its silence from the moment it
// opened its socket, connecting included; when the first heartbeat came an
// interval after the READY, a worker that connected late (a broker
// restarted while it retried every 100 ms) gave up on the registration it
// had just made and registered again on a new socket, and requests fanned
// out to the abandoned registration failed with "zb:worker-left"
// (ConsensusRestartTest, 3 registrations for 2 workers in 7 restarts of
// 10).  Before: no HEARTBEAT within 2 s of a READY announcing 10 s.
TEST_F(ConsensusBrokerTest, AcceptedReadyIsAnsweredWithAHeartbeatAtOnce) {
  Start();
  constexpr std::uint32_t kInterval = 10000;  // the periodic one: 10 s away
  Peer w(ctx_, endpoint_);
  w.Ready("ack", kInterval, 3);
  std::optional<Msg> ack = w.Recv(milliseconds(2000), /*keep_heartbeats=*/true);
  ASSERT_TRUE(ack.has_value()) << "no answer to READY within 2 s";
  EXPECT_EQ(ack->type, MessageType::kHeartbeat);
  EXPECT_EQ(Workers("ack"), 1u);
  // A repeated READY (new heartbeat settings) is acknowledged the same way.
  w.Ready("ack", kInterval, 4);
  ack = w.Recv(milliseconds(2000), /*keep_heartbeats=*/true);
  ASSERT_TRUE(ack.has_value()) << "no answer to the repeated READY";
  EXPECT_EQ(ack->type, MessageType::kHeartbeat);
  EXPECT_EQ(Workers("ack"), 1u);
  // A refused READY gets DISCONNECT, no HEARTBEAT.
  Peer absurd(ctx_, endpoint_);
  absurd.Ready("ack", 0xffffffffu, 3);
  std::optional<Msg> no = absurd.Recv(milliseconds(2000), true);
  ASSERT_TRUE(no.has_value());
  EXPECT_EQ(no->type, MessageType::kDisconnect);
  EXPECT_EQ(Workers("ack"), 1u);
}

TEST_F(ConsensusBrokerTest, SeveralRequestsInFlightPerService) {
  Start();
  auto w1 = NewWorker("svc");
  auto w2 = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  constexpr int kN = 5;
  for (int i = 1; i <= kN; ++i) {
    client.Request("svc", {static_cast<std::uint64_t>(i), 9},
                   {"req" + std::to_string(i)});
  }
  std::vector<Msg> q1, q2;
  for (int i = 0; i < kN; ++i) {
    auto a = w1->Recv();
    auto b = w2->Recv();
    ASSERT_TRUE(a && b);
    q1.push_back(*a);
    q2.push_back(*b);
  }
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.open_requests(); }),
            static_cast<std::size_t>(kN));
  // Answer in reverse order, w2 before w1.
  for (int i = kN - 1; i >= 0; --i) {
    w2->Reply(q2[i], true, {"w2:" + q2[i].payload[0]});
    w1->Reply(q1[i], true, {"w1:" + q1[i].payload[0]});
  }
  std::vector<bool> seen(kN + 1, false);
  for (int i = 0; i < kN; ++i) {
    auto reply = client.Recv();
    ASSERT_TRUE(reply.has_value());
    ASSERT_EQ(reply->type, MessageType::kReplySuccess);
    const auto seq = reply->sequence.sequence;
    ASSERT_GE(seq, 1u);
    ASSERT_LE(seq, static_cast<std::uint64_t>(kN));
    EXPECT_FALSE(seen[seq]);
    seen[seq] = true;
    const std::string req = "req" + std::to_string(seq);
    EXPECT_THAT(reply->payload, ElementsAre("w1:" + req, "w2:" + req));
  }
}

TEST_F(ConsensusBrokerTest, SequenceRules) {
  Start();
  auto w = NewWorker("svc");
  // Answers every request it gets.
  auto serve_one = [&] {
    auto r = w->Recv();
    ASSERT_TRUE(r.has_value());
    w->Reply(*r, true, {"ok"});
  };
  auto expect_reply = [](Peer& p, MessageType type, std::uint64_t seq) {
    auto reply = p.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, type);
    EXPECT_EQ(reply->sequence.sequence, seq);
    if (type == MessageType::kReplyFailure) {
      EXPECT_EQ(reply->payload.at(0), ccp::kReasonBadSequence);
    }
  };
  Peer a(ctx_, endpoint_);
  Peer b(ctx_, endpoint_);

  a.Request("svc", {1, 100});
  serve_one();
  expect_reply(a, MessageType::kReplySuccess, 1);

  a.Request("svc", {3, 100});  // a gap
  expect_reply(a, MessageType::kReplyFailure, 3);

  a.Request("svc", {2, 100});  // the rejection did not move the record
  serve_one();
  expect_reply(a, MessageType::kReplySuccess, 2);

  a.Request("svc", {2, 100});  // a repeat
  expect_reply(a, MessageType::kReplyFailure, 2);

  b.Request("svc", {3, 100});  // a's client id from another socket
  expect_reply(b, MessageType::kReplyFailure, 3);
  EXPECT_TRUE(a.Silent(milliseconds(30)));  // the owner hears nothing

  a.Request("svc", {3, 100});  // the owner carries on
  serve_one();
  expect_reply(a, MessageType::kReplySuccess, 3);

  EXPECT_TRUE(w->Silent(milliseconds(30)));  // rejected ones never reached it
  const auto stats = Stats();
  EXPECT_EQ(stats.rejected_sequence, 3u);
  EXPECT_EQ(stats.replies_success, 3u);
}

// Issue 10.2: after a restart the broker knows nobody, and a 2011 client only
// starts again at 1 after timeouts, so a client id the broker does not know
// is adopted at the number it presents.  From then on the usual rules hold.
TEST_F(ConsensusBrokerTest, UnknownClientIdIsAdoptedAtItsSequenceNumber) {
  Start();
  auto w = NewWorker("svc");
  auto serve = [&](Peer& client, ccp::SequenceId id) {
    client.Request("svc", id, {"p"});
    auto r = w->Recv();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->sequence, id);
    w->Reply(*r, true, {"ok"});
    auto reply = client.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, MessageType::kReplySuccess);
    EXPECT_EQ(reply->sequence, id);
  };
  auto expect_rejected = [](Peer& p, std::uint64_t seq) {
    auto reply = p.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, MessageType::kReplyFailure);
    EXPECT_EQ(reply->sequence.sequence, seq);
    EXPECT_EQ(reply->payload.at(0), ccp::kReasonBadSequence);
  };
  Peer a(ctx_, endpoint_);
  Peer b(ctx_, endpoint_);
  serve(a, {4, 0x1fb2297a});          // unknown, at 4: adopted
  serve(a, {5, 0x1fb2297a});          // then exactly +1
  a.Request("svc", {7, 0x1fb2297a});  // a gap is still refused
  expect_rejected(a, 7);
  a.Request("svc", {5, 0x1fb2297a});  // and so is a repeat
  expect_rejected(a, 5);
  b.Request("svc", {6, 0x1fb2297a});  // the adopted id from another socket
  expect_rejected(b, 6);
  EXPECT_TRUE(a.Silent(milliseconds(30)));
  serve(a, {6, 0x1fb2297a});         // the owner is undisturbed
  serve(b, {(1ull << 40) + 9, 77});  // any number, even above 2^32
  const auto stats = Stats();
  EXPECT_EQ(stats.rejected_sequence, 3u);
  EXPECT_EQ(stats.clients_adopted, 2u);
  EXPECT_EQ(stats.replies_success, 4u);
}

TEST_F(ConsensusBrokerTest, IdleClientRecordsExpire) {
  auto options = TestOptions();
  options.client_idle_timeout = milliseconds(50);
  Start(options);
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 11});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  w->Reply(*r, true, {});
  ASSERT_TRUE(client.Recv().has_value());
  EXPECT_TRUE(WaitFor([&] {
    return OnBroker([](ConsensusBroker& b) { return b.client_count(); }) == 0;
  }));
  EXPECT_EQ(Stats().clients_expired, 1u);
  // Forgotten, as after a broker restart: its next number is adopted.
  client.Request("svc", {2, 11});
  r = w->Recv();
  ASSERT_TRUE(r.has_value());
  w->Reply(*r, true, {});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_EQ(Stats().clients_adopted, 1u);
}

TEST_F(ConsensusBrokerTest, PingIsEchoed) {
  Start();
  Peer client(ctx_, endpoint_);
  client.Send({kTagS, Byte(MessageType::kPing)});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kPing);
  EXPECT_THAT(reply->raw, ElementsAre(kTagS, Byte(MessageType::kPing)));
  EXPECT_EQ(Stats().pings, 1u);
}

TEST_F(ConsensusBrokerTest, MalformedMessagesAreCountedAndOthersServed) {
  auto options = TestOptions();
  options.max_frames = 64;
  Start(options);
  auto w = NewWorker("svc");
  Peer bad(ctx_, endpoint_);
  bad.Send({"MDPC01", Byte(MessageType::kPing)});                  // wrong tag
  bad.Send({kTagS, Byte(MessageType::kRequest), "svc", "short"});  // truncated
  bad.Send({kTagS, "\x09"});                                       // unknown
  std::vector<std::string> many = {kTagS, Byte(MessageType::kRequest), "svc",
                                   SeqBytes(1, 300)};
  many.resize(1000, "x");  // far more frames than allowed
  bad.Send(many);
  bad.SendRaw({kTagS, Byte(MessageType::kPing)});             // no delimiter
  bad.Send({kTagS, Byte(MessageType::kHeartbeat), "extra"});  // trailing
  bad.Send({kTagS, Byte(MessageType::kReady), "svc", "\x01", "\x01"});
  ASSERT_TRUE(WaitFor([&] { return Stats().malformed == 7; }));
  // Only the REQUEST whose sequence id can be read is answered; the others
  // give nothing to answer to.
  auto answer = bad.Recv();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->type, MessageType::kReplyFailure);
  EXPECT_EQ(answer->sequence, (ccp::SequenceId{1, 300}));
  EXPECT_EQ(answer->payload.at(0), ccp::kReasonMalformed);
  EXPECT_TRUE(bad.Silent(milliseconds(30)));

  // Everyone else is still served.
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 12}, {"still"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  EXPECT_THAT(r->payload, ElementsAre("still"));
  w->Reply(*r, true, {"served"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("served"));
  EXPECT_EQ(Stats().malformed, 7u);
  EXPECT_EQ(Stats().requests, 2u);  // the answered malformed one, and this
  // Rate-limited log: five at once, the rest in one later summary line.
  ASSERT_TRUE(WaitFor([&] {
    int lines = 0;
    for (const auto& l : Logs()) {
      lines += l.find("malformed message line(s) not logged") != l.npos;
    }
    return lines == 1;
  }));
  int lines = 0;
  for (const auto& l : Logs()) lines += l.find("malformed") != l.npos;
  EXPECT_LE(lines, 6);  // 5 at once, then one line with the rest
  bool detailed = false;
  for (const auto& l : Logs()) {
    detailed = detailed || l.find("wrong protocol tag") != l.npos;
  }
  EXPECT_TRUE(detailed);
}

TEST_F(ConsensusBrokerTest, UnroutableClientIsCounted) {
  Start();
  auto w = NewWorker("svc");
  auto client = std::make_unique<Peer>(ctx_, endpoint_);
  client->Request("svc", {1, 13});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  client->Close();
  // Give the broker time to see the client go; the reply then cannot be
  // routed (ZMQ_ROUTER_MANDATORY makes that an error, not a silent loss).
  std::this_thread::sleep_for(milliseconds(300));
  w->Reply(*r, true, {"nobody listens"});
  ASSERT_TRUE(WaitFor([&] { return Stats().unroutable >= 1; }));
  EXPECT_EQ(Stats().replies_success, 1u);
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.open_requests(); }), 0u);
}

TEST_F(ConsensusBrokerTest, UnroutableWorkerIsDroppedOnFanOut) {
  Start();
  // Expiry far away.  The fan-out normally finds `gone` unroutable; should
  // the broker not have seen the socket go yet, the next heartbeat (200 ms)
  // does, and the request still completes through the same removal.
  auto gone = NewWorker("svc", 200, 100);
  auto stays = NewWorker("svc", 10000, 10);
  gone->Close();
  std::this_thread::sleep_for(milliseconds(100));  // let the broker see it
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 14}, {"q"});
  auto r = stays->Recv();
  ASSERT_TRUE(r.has_value());
  stays->Reply(*r, true, {"a"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("a"));
  const auto stats = Stats();
  EXPECT_GE(stats.unroutable, 1u);
  EXPECT_EQ(stats.workers_left, 1u);
  EXPECT_EQ(stats.workers_expired, 0u);
  EXPECT_EQ(Workers("svc"), 1u);
}

TEST_F(ConsensusBrokerTest, RepliesMatchingNothingAreDropped) {
  Start();
  auto w = NewWorker("svc");
  Peer stranger(ctx_, endpoint_);
  Msg fake;
  fake.service = "svc";
  fake.sequence = {1, 15};
  stranger.Reply(fake, true, {"who am I"});  // not a worker
  w->Reply(fake, true, {"no such request"});
  ASSERT_TRUE(WaitFor([&] { return Stats().late_replies == 2; }));
  EXPECT_TRUE(stranger.Silent(milliseconds(20)));
}

// Issue 11.2: READY with 0xffffffff ms x 255 retries, then the socket closes:
// such workers were never removed (4,027 of 4,028 stayed).  A READY outside
// the bounds is refused with DISCONNECT and counted.
TEST_F(ConsensusBrokerTest, ReadyWithAbsurdHeartbeatIsRefused) {
  auto options = TestOptions();
  options.max_heartbeat_liveness =
      ConsensusBroker::Options{}.max_heartbeat_liveness;
  Start(options);  // the default bounds: 60 s x 10
  std::vector<std::unique_ptr<Peer>> gone;
  for (int i = 0; i < 20; ++i) {
    gone.push_back(std::make_unique<Peer>(ctx_, endpoint_));
    gone.back()->Ready("svc", 0xffffffff, 255);
  }
  for (auto& p : gone) {
    auto m = p->Recv();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->type, MessageType::kDisconnect);
    EXPECT_EQ(m->service, "svc");
    p->Close();
  }
  EXPECT_EQ(Workers("svc"), 0u);
  Peer too_many_retries(ctx_, endpoint_);
  too_many_retries.Ready("svc", 1000, 11);
  auto m = too_many_retries.Recv();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);
  Peer too_long(ctx_, endpoint_);
  too_long.Ready("svc", 60001, 1);
  m = too_long.Recv();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);

  // At the bounds: accepted.
  auto ok = NewWorker("svc", 60000, 10);
  EXPECT_EQ(Workers("svc"), 1u);
  // A registered worker that announces absurd settings is dropped too.
  ok->Ready("svc", 0xffffffff, 255);
  m = ok->Recv();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);
  EXPECT_TRUE(WaitFor([&] { return Workers("svc") == 0; }));
  const auto stats = Stats();
  EXPECT_EQ(stats.refused_heartbeat, 23u);
  EXPECT_EQ(stats.workers_joined, 1u);
  EXPECT_EQ(stats.workers_left, 1u);
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) {
              return b.workers_per_service().size();
            }),
            0u);  // no service kept for the refused ones
}

TEST_F(ConsensusBrokerTest, MaxWorkersAndMaxServicesRefuseReady) {
  auto options = TestOptions();
  options.max_workers = 4;
  options.max_services = 2;
  Start(options);
  auto a1 = NewWorker("a");
  auto a2 = NewWorker("a");
  auto b1 = NewWorker("b");
  Peer c1(ctx_, endpoint_);  // a third service: refused
  c1.Ready("c", 1000, 3);
  auto m = c1.Recv();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);
  auto b2 = NewWorker("b");  // the fourth worker: fine
  Peer b3(ctx_, endpoint_);  // a fifth: refused
  b3.Ready("b", 1000, 3);
  m = b3.Recv();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MessageType::kDisconnect);
  EXPECT_EQ(Workers("a"), 2u);
  EXPECT_EQ(Workers("b"), 2u);
  EXPECT_EQ(Workers("c"), 0u);
  auto stats = Stats();
  EXPECT_EQ(stats.workers_refused, 1u);
  EXPECT_EQ(stats.refused_services, 1u);
  b2->Disconnect("b");
  // Room again once one leaves; the registered ones keep serving.
  b1->Disconnect("b");
  ASSERT_TRUE(WaitFor([&] { return Workers("b") == 0; }));
  auto c = NewWorker("c");
  EXPECT_EQ(Workers("c"), 1u);
  Peer client(ctx_, endpoint_);
  client.Request("a", {1, 90}, {"x"});
  for (auto* w : {a1.get(), a2.get()}) {
    auto r = w->Recv();
    ASSERT_TRUE(r.has_value());
    w->Reply(*r, true, {"y"});
  }
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  // Refusals are logged (rate-limited).
  bool logged = false;
  for (const auto& line : Logs()) {
    logged = logged || line.find("refused READY") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

// Issue 11.8: a join flood wrote 1.27 MB of log in 140 s.  Joins and leaves
// are rate-limited; what was held back is summed up in one line.
TEST_F(ConsensusBrokerTest, JoinAndLeaveLogsAreRateLimited) {
  Start();
  std::vector<std::unique_ptr<Peer>> flood;
  for (int i = 0; i < 200; ++i) {
    flood.push_back(std::make_unique<Peer>(ctx_, endpoint_));
    flood.back()->Ready("flood", 1000, 3);
  }
  ASSERT_TRUE(WaitFor([&] { return Workers("flood") == 200; }));
  for (auto& p : flood) p->Disconnect("flood");
  ASSERT_TRUE(WaitFor([&] { return Workers("flood") == 0; }));
  auto count = [&](std::string_view what) {
    int n = 0;
    for (const auto& line : Logs()) n += line.find(what) != line.npos;
    return n;
  };
  // The summary comes from the sweep once a second has passed.
  ASSERT_TRUE(WaitFor([&] {
    return count("worker join line(s) not logged") >= 1 &&
           count("worker leave line(s) not logged") >= 1;
  }));
  EXPECT_LE(count(" joined service flood"), 30);  // ~10 a second
  EXPECT_LE(count(" disconnected; service flood"), 30);
  EXPECT_EQ(Stats().workers_joined, 200u);
  EXPECT_EQ(Stats().workers_left, 200u);
}

// Issue 11.7: dropped_replies also counted requests that could not be fanned
// out to a worker with a full queue.  That is worker_busy now.
TEST_F(ConsensusBrokerTest, WorkerBusyIsCountedApartFromDroppedReplies) {
  Start();
  // A worker that reads nothing: its queue fills up.
  auto stuck = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  int failures_busy = 0, answers = 0;
  // 10 KiB requests: the queue is counted in messages (high-water mark
  // 1000 at each end) but tcp's buffers between them in bytes; with small
  // ones the kernel could take all of them and nothing was ever refused.
  for (std::uint64_t seq = 1; seq <= 10000 && failures_busy == 0; ++seq) {
    client.Request("svc", {seq, 91}, {std::string(10240, 'x')});
    // Read what has come back so far, without waiting.
    while (auto reply = client.Recv(milliseconds(0))) {
      ++answers;
      if (reply->payload.at(0) == ccp::kReasonWorkerBusy) ++failures_busy;
    }
  }
  ASSERT_TRUE(WaitFor([&] { return Stats().worker_busy >= 1; }));
  while (auto reply = client.Recv(milliseconds(100))) {
    ++answers;
    if (reply->payload.at(0) == ccp::kReasonWorkerBusy) ++failures_busy;
  }
  EXPECT_GE(failures_busy, 1);
  const auto stats = Stats();
  // Every busy refusal was answered: it reached the client, or (when the
  // client, which reads only between its sends, had let its own queue fill)
  // it is one of the dropped replies -- seen once in a loaded run: 7,999
  // received and 1 dropped of 8,000.  Before worker_busy existed, all
  // 8,000 were counted in dropped_replies and none apart.
  EXPECT_EQ(stats.worker_busy,
            static_cast<std::uint64_t>(failures_busy) + stats.dropped_replies);
  EXPECT_LT(stats.dropped_replies, static_cast<std::uint64_t>(failures_busy));
}

// Issue 11.3: nothing set ZMQ_MAXMSGSIZE; one client pushed the broker to
// 1.7 GB with 512 MiB frames.  A frame over max_message_size makes libzmq
// drop that peer's connection before the frame is read; others are served.
TEST_F(ConsensusBrokerTest, FrameOverMaxMessageSizeDropsOnlyThatPeer) {
  auto options = TestOptions();
  options.max_message_size = 1 << 20;
  Start(options);  // tcp: libzmq checks the limit in its decoder
  auto w = NewWorker("svc");
  Peer big(ctx_, endpoint_);
  big.Request("svc", {1, 60}, {std::string((1 << 20) + 1, 'x')});
  Peer fine(ctx_, endpoint_);
  fine.Request("svc", {1, 61}, {std::string(1 << 20, 'y')});  // at the limit
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->sequence, (ccp::SequenceId{1, 61}));
  w->Reply(*r, true, {"ok"});
  auto reply = fine.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  // The oversized one never reached the broker's code, let alone a worker.
  EXPECT_TRUE(w->Silent(milliseconds(200)));
  EXPECT_TRUE(big.Silent(milliseconds(10)));
  const auto stats = Stats();
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.malformed, 0u);
  // The dropped peer reconnects by itself and may go on, within the limit.
  big.Request("svc", {2, 60}, {"small"});
  r = w->Recv();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->sequence, (ccp::SequenceId{2, 60}));
}

// Issue 11.4: one socket could create a record for any of 2^32 client ids
// (200,000 ids = +18 MB).  max_clients caps them: the least recently used
// record without open requests makes room; one with open requests is kept.
TEST_F(ConsensusBrokerTest, ClientRecordsAreCappedLeastRecentlyUsedIdleFirst) {
  auto options = TestOptions();
  options.max_clients = 10;
  Start(options);
  auto w = NewWorker("svc");
  Peer a(ctx_, endpoint_);
  a.Request("svc", {1, 0xA000});  // stays open until `w` answers
  auto held = w->Recv();
  ASSERT_TRUE(held.has_value());
  // Many ids from one socket, each answered (no workers for "none").
  Peer flood(ctx_, endpoint_);
  for (std::uint32_t id = 1; id <= 1000; ++id) {
    flood.Request("none", {1, id});
    auto reply = flood.Recv();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->payload.at(0), ccp::kReasonNoWorkers);
  }
  auto stats = Stats();
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.client_count(); }), 10u);
  EXPECT_EQ(stats.clients_evicted, 1001u - 10u);
  // `a` kept its record (its request is open): the sequence rules still
  // apply to it, so a gap is refused rather than adopted.
  w->Reply(*held, true, {"ok"});
  auto reply = a.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  a.Request("svc", {5, 0xA000});
  reply = a.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonBadSequence);

  // Least recently used first: the flood's records left are 992..1000 (all
  // idle); 992 is used again, so a new id evicts 993.
  flood.Request("none", {2, 992});
  ASSERT_TRUE(flood.Recv().has_value());
  flood.Request("none", {1, 5000});
  ASSERT_TRUE(flood.Recv().has_value());
  const std::uint64_t adopted = Stats().clients_adopted;
  flood.Request("none", {9, 992});  // known: a gap is refused
  reply = flood.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonBadSequence);
  flood.Request("none", {9, 993});  // evicted: adopted like a new client
  reply = flood.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonNoWorkers);
  EXPECT_EQ(Stats().clients_adopted, adopted + 1);
}

// Issue 11.4: when every record has an open request, a new client id is
// answered "zb:busy" (nothing to evict) and counted.
TEST_F(ConsensusBrokerTest, NewClientIsBusyWhenEveryRecordHasOpenRequests) {
  auto options = TestOptions();
  options.max_clients = 2;
  Start(options);
  auto w = NewWorker("svc");
  Peer c(ctx_, endpoint_);
  c.Request("svc", {1, 1});
  c.Request("svc", {1, 2});
  ASSERT_TRUE(w->Recv().has_value());
  ASSERT_TRUE(w->Recv().has_value());
  c.Request("svc", {1, 3});
  auto reply = c.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  EXPECT_EQ(reply->sequence, (ccp::SequenceId{1, 3}));
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonBusy);
  EXPECT_TRUE(w->Silent(milliseconds(50)));  // it never reached the worker
  const auto stats = Stats();
  EXPECT_EQ(stats.refused_clients, 1u);
  EXPECT_EQ(stats.clients_evicted, 0u);
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.client_count(); }), 2u);
}

// Issue 11.5: one client with ~1.6 million requests outstanding left a
// well-behaved client with 1,995 failures out of 2,000.  A greedy client
// now gets "zb:busy" beyond max_requests_per_client, so the worker's
// backlog stays short and the other client's requests all succeed.
TEST_F(ConsensusBrokerTest, GreedyClientCannotMakeAnotherClientFail) {
  auto options = TestOptions();
  options.max_requests_per_client = 100;
  options.request_timeout = milliseconds(2000);
  Start(options);
  // A worker that takes 1 ms per request, answering in arrival order.
  auto w = NewWorker("svc");
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop) {
      auto r = w->Recv(milliseconds(20));
      if (!r) continue;
      std::this_thread::sleep_for(milliseconds(1));
      w->Reply(*r, true, {"ok"});
    }
  });
  // The greedy client floods 20,000 requests and never reads its answers.
  std::atomic<int> sent{0};
  std::thread greedy([&] {
    Peer g(ctx_, endpoint_);
    for (std::uint64_t seq = 1; seq <= 20000 && !stop; ++seq) {
      g.Request("svc", {seq, 0x6eed});
      ++sent;
    }
    while (!stop) std::this_thread::sleep_for(milliseconds(5));
  });
  ASSERT_TRUE(WaitFor([&] { return sent >= 2000; }));
  // The well-behaved client: 20 requests at once.
  Peer fine(ctx_, endpoint_);
  for (std::uint64_t seq = 1; seq <= 20; ++seq) {
    fine.Request("svc", {seq, 0xf1e});
  }
  int success = 0, failure = 0;
  while (success + failure < 20) {
    auto reply = fine.Recv();
    if (!reply) break;
    (reply->type == MessageType::kReplySuccess ? success : failure)++;
  }
  stop = true;
  greedy.join();
  worker.join();
  EXPECT_EQ(success, 20);
  EXPECT_EQ(failure, 0);
  EXPECT_GT(Stats().client_busy, 0u);
}

// A broker closed while a worker that stopped reading drops its connection
// must finish, not take the process down.  libzmq 4.3 aborts in
// session_base_t::clean_pipes() ("Resource temporarily unavailable") when a
// socket closed with linger 0 sees the connection of a peer fail while a
// multipart message to that peer is half written; with a linger, as the
// broker's default, the pipe waits for its delimiter and the rest of the
// message is still read.  A race, so many rounds.
TEST_F(ConsensusBrokerTest, ClosingWhileAStalledWorkerDisconnectsFinishes) {
  const std::string mib(1 << 20, 'x');
  for (int round = 0; round < 100; ++round) {
    SCOPED_TRACE(round);
    Start();
    // The worker in a context of its own, so that its close and the
    // broker's run on different I/O threads at the same time.
    zmq::context_t worker_ctx;
    auto stuck = std::make_unique<Peer>(worker_ctx, endpoint_);
    stuck->Ready("svc");
    ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
    Peer client(ctx_, endpoint_);
    for (std::uint64_t seq = 1; seq <= 20; ++seq) {
      client.Request("svc", {seq, 77}, {mib, "end"});
    }
    // Fanned out, and more than the connection holds: the broker's side
    // stalls in the middle of a message (a large frame that is not the
    // last one ends the engine's write batch inside the message).
    ASSERT_TRUE(WaitFor([&] { return Stats().requests == 20; }));
    test::RunBothAtOnce(
        round,
        [&] {
          stuck.reset();
          worker_ctx.close();
        },
        [&] { StopBroker(); });
  }
}

TEST_F(ConsensusBrokerTest, ReadyForAnotherServiceMovesTheWorker) {
  Start();
  auto w = NewWorker("a");
  w->Ready("b");
  ASSERT_TRUE(WaitFor([&] { return Workers("b") == 1; }));
  EXPECT_EQ(Workers("a"), 0u);
  auto services =
      OnBroker([](ConsensusBroker& b) { return b.workers_per_service(); });
  ASSERT_EQ(services.size(), 1u);
  EXPECT_EQ(services[0].first, "b");
}

TEST_F(ConsensusBrokerTest, ShutdownAnswersOpenRequestsAndDisconnectsWorkers) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 16});
  ASSERT_TRUE(w->Recv().has_value());
  ASSERT_TRUE(WaitFor([&] {
    return OnBroker([](ConsensusBroker& b) { return b.open_requests(); }) == 1;
  }));
  // Give the broker some linger so the last messages get out.
  thread_->Invoke([&](Reactor&) { broker_.reset(); });
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplyFailure);
  EXPECT_EQ(reply->payload.at(0), ccp::kReasonShutdown);
  auto bye = w->Recv();
  ASSERT_TRUE(bye.has_value());
  EXPECT_EQ(bye->type, MessageType::kDisconnect);
  thread_.reset();
}

TEST_F(ConsensusBrokerTest, DrainRefusesNewRequestsAndFinishesOpenOnes) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 17}, {"open"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  OnBroker([](ConsensusBroker& b) {
    b.Drain(std::chrono::hours(1), nullptr);
    return b.draining();
  });
  client.Request("svc", {2, 17}, {"new"});
  auto refused = client.Recv();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->type, MessageType::kReplyFailure);
  EXPECT_EQ(refused->sequence.sequence, 2u);
  EXPECT_EQ(refused->payload.at(0), ccp::kReasonShutdown);
  EXPECT_TRUE(w->Silent(milliseconds(30)));  // never forwarded
  w->Reply(*r, true, {"done"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_EQ(reply->sequence.sequence, 1u);
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.open_requests(); }), 0u);
  EXPECT_EQ(Stats().refused_draining, 1u);
}

TEST_F(ConsensusBrokerTest, DrainCallbackRunsOnceWhenTheLastRequestEnds) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 19}, {"a"});
  client.Request("svc", {2, 19}, {"b"});
  auto r1 = w->Recv();
  auto r2 = w->Recv();
  ASSERT_TRUE(r1 && r2);
  std::atomic<int> drained{0};
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(std::chrono::hours(1), [&] { ++drained; });
    return 0;
  });
  w->Reply(*r1, true, {"a!"});
  ASSERT_TRUE(client.Recv().has_value());
  // One request is still open.
  EXPECT_EQ(OnBroker([&](ConsensusBroker& b) { return b.open_requests(); }),
            1u);
  EXPECT_EQ(drained.load(), 0);
  w->Reply(*r2, true, {"b!"});
  auto last = client.Recv();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->sequence.sequence, 2u);
  // The callback is posted after the last answer was sent; one more
  // invoke() round trip lets it run.
  OnBroker([](ConsensusBroker&) { return 0; });
  EXPECT_EQ(drained.load(), 1);
  OnBroker([](ConsensusBroker&) { return 0; });
  EXPECT_EQ(drained.load(), 1);
}

TEST_F(ConsensusBrokerTest, DrainWithNothingOpenCallsBackButNotInline) {
  Start();
  bool inline_call = true;
  std::atomic<int> drained{0};
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(std::chrono::hours(1), [&] { ++drained; });
    inline_call = drained.load() != 0;
    return 0;
  });
  EXPECT_FALSE(inline_call);
  OnBroker([](ConsensusBroker&) { return 0; });
  EXPECT_EQ(drained.load(), 1);
}

// Issue 12: Drain(grace, done) has one contract in both brokers.  A request
// still open when the grace period ends is failed "zb:shutdown" (before,
// the consensus broker had no grace: it ran to its own deadline).
TEST_F(ConsensusBrokerTest, DrainFailsWhatIsStillOpenWhenTheGraceEnds) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 23}, {"slow"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  std::atomic<int> drained{0};
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(milliseconds(100), [&] { ++drained; });
    return 0;
  });
  // Well before request_timeout (3 s): the grace ended it.
  auto failed = client.Recv(milliseconds(2000));
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->type, MessageType::kReplyFailure);
  EXPECT_EQ(failed->sequence.sequence, 1u);
  EXPECT_EQ(failed->payload.at(0), ccp::kReasonShutdown);
  ASSERT_TRUE(WaitFor([&] { return drained.load() == 1; }));
  // The worker's answer now matches nothing; the client hears no more.
  w->Reply(*r, true, {"too late"});
  ASSERT_TRUE(WaitFor([&] { return Stats().late_replies == 1; }));
  EXPECT_TRUE(client.Silent(milliseconds(30)));
  EXPECT_EQ(Stats().timeouts, 0u);
  EXPECT_EQ(drained.load(), 1);
}

// An answer inside the grace period goes to the client as usual, and only
// then is `done` posted.
TEST_F(ConsensusBrokerTest, DrainAnswersWhatFinishesWithinTheGrace) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 24}, {"quick"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  std::atomic<int> drained{0};
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(milliseconds(10000), [&] { ++drained; });
    return 0;
  });
  EXPECT_EQ(drained.load(), 0);
  w->Reply(*r, true, {"in time"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  ASSERT_TRUE(WaitFor([&] { return drained.load() == 1; }));
  OnBroker([](ConsensusBroker&) { return 0; });
  EXPECT_EQ(drained.load(), 1);
}

// A second Drain keeps the first deadline; each `done` is posted once, and
// a Drain after the drain finished posts its `done` too (never inline).
TEST_F(ConsensusBrokerTest, EveryDrainCallbackIsPostedExactlyOnce) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 25}, {"x"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  std::atomic<int> first{0}, second{0}, third{0};
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(milliseconds(10000), [&] { ++first; });
    b.Drain(milliseconds(1), [&] { ++second; });
    return 0;
  });
  // The 1 ms of the second call did not cut the first grace short.
  EXPECT_TRUE(client.Silent(milliseconds(100)));
  w->Reply(*r, true, {"y"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  ASSERT_TRUE(WaitFor([&] { return first.load() == 1 && second.load() == 1; }));
  bool inline_call = true;
  OnBroker([&](ConsensusBroker& b) {
    b.Drain(milliseconds(10000), [&] { ++third; });
    inline_call = third.load() != 0;
    return 0;
  });
  EXPECT_FALSE(inline_call);
  ASSERT_TRUE(WaitFor([&] { return third.load() == 1; }));
  OnBroker([](ConsensusBroker&) { return 0; });
  EXPECT_EQ(first.load(), 1);
  EXPECT_EQ(second.load(), 1);
  EXPECT_EQ(third.load(), 1);
}

// Destroying a draining broker ends the drain: `done` is still posted once.
TEST_F(ConsensusBrokerTest, DestroyingADrainingBrokerPostsDone) {
  Start();
  auto w = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 26}, {"x"});
  ASSERT_TRUE(w->Recv().has_value());
  std::atomic<int> drained{0};
  thread_->Invoke([&](Reactor&) {
    broker_->Drain(milliseconds(10000), [&] { ++drained; });
    broker_.reset();
    EXPECT_EQ(drained.load(), 0);  // posted, not called by the destructor
  });
  thread_->Invoke([](Reactor&) {});
  EXPECT_EQ(drained.load(), 1);
  thread_.reset();
  EXPECT_EQ(drained.load(), 1);
}

TEST_F(ConsensusBrokerTest, WorkerCountCountsEveryService) {
  Start();
  auto a = NewWorker("a");
  auto b = NewWorker("b");
  auto c = NewWorker("b");
  ASSERT_TRUE(WaitFor([&] { return Workers("b") == 2; }));
  EXPECT_EQ(Workers("a"), 1u);
  EXPECT_EQ(Workers("none"), 0u);
  EXPECT_EQ(
      OnBroker([](ConsensusBroker& broker) { return broker.worker_count(); }),
      3u);
}

TEST_F(ConsensusBrokerTest, LatencyHookSeesAnsweredRequestsOnly) {
  Start();
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> seen;
  OnBroker([&](ConsensusBroker& b) {
    b.set_latency_hook([&](std::string_view svc, std::chrono::nanoseconds d) {
      seen.emplace_back(std::string(svc), d);
    });
    return 0;
  });
  Peer client(ctx_, endpoint_);
  client.Request("nobody", {1, 20});  // zb:no-workers: the broker's own
  ASSERT_TRUE(client.Recv().has_value());
  auto w = NewWorker("svc");
  client.Request("svc", {2, 20}, {"x"});
  auto r = w->Recv();
  ASSERT_TRUE(r.has_value());
  std::this_thread::sleep_for(milliseconds(20));
  w->Reply(*r, true, {"y"});
  ASSERT_TRUE(client.Recv().has_value());
  client.Request("svc", {3, 20}, {"x"});
  r = w->Recv();
  ASSERT_TRUE(r.has_value());
  w->Reply(*r, false, {"worker says no"});  // forwarded worker failure
  ASSERT_TRUE(client.Recv().has_value());
  const auto got = OnBroker([&](ConsensusBroker&) { return seen; });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, "svc");
  EXPECT_GE(got[0].second, milliseconds(20));
  EXPECT_LT(got[0].second, kWait);
  EXPECT_EQ(got[1].first, "svc");
}

// A worker that answered success and then left still counts: its answer
// stands, and the request completes once the others answer.
TEST_F(ConsensusBrokerTest, AnswerOfAWorkerThatLeftStillCounts) {
  Start();
  auto w1 = NewWorker("svc");
  auto w2 = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 18});
  auto r1 = w1->Recv();
  auto r2 = w2->Recv();
  ASSERT_TRUE(r1 && r2);
  w1->Reply(*r1, true, {"w1 said yes"});
  w1->Disconnect("svc");
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 1; }));
  w2->Reply(*r2, true, {"w2 said yes"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("w1 said yes", "w2 said yes"));
}

// A reply finds its slot by the worker's position in the service; a worker
// leaving shifts the positions of the workers after it, so requests that
// were open at that moment, the requests after it, a newcomer's reply to a
// request it never got, and later removals must all still line up.
TEST_F(ConsensusBrokerTest, RepliesFindTheirSlotAfterAWorkerLeft) {
  Start();
  auto w1 = NewWorker("svc");
  auto w2 = NewWorker("svc");
  auto w3 = NewWorker("svc");
  Peer client(ctx_, endpoint_);
  client.Request("svc", {1, 19});
  auto a2 = w2->Recv();
  auto a3 = w3->Recv();
  ASSERT_TRUE(w1->Recv() && a2 && a3);
  w1->Disconnect("svc");  // leaves without answering request 1
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 2; }));
  auto w4 = NewWorker("svc");  // takes the last position; not in request 1
  const std::uint64_t late_before = Stats().late_replies;
  w4->Reply(*a3, true, {"w4 was never asked"});
  ASSERT_TRUE(WaitFor([&] { return Stats().late_replies == late_before + 1; }));
  w3->Reply(*a3, true, {"w3:1"});
  w2->Reply(*a2, true, {"w2:1"});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("w2:1", "w3:1"));

  // A request after the change goes to w2, w3, w4, in that order.
  client.Request("svc", {2, 19});
  auto b2 = w2->Recv();
  auto b3 = w3->Recv();
  auto b4 = w4->Recv();
  ASSERT_TRUE(b2 && b3 && b4);
  w4->Reply(*b4, true, {"w4:2"});
  w2->Reply(*b2, true, {"w2:2"});
  w3->Reply(*b3, true, {"w3:2"});
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("w2:2", "w3:2", "w4:2"));

  // Removing the first of them removes exactly that one.
  w2->Disconnect("svc");
  ASSERT_TRUE(WaitFor([&] { return Workers("svc") == 2; }));
  client.Request("svc", {3, 19});
  auto c3 = w3->Recv();
  auto c4 = w4->Recv();
  ASSERT_TRUE(c3 && c4);
  EXPECT_TRUE(w2->Silent(milliseconds(100)));
  w3->Reply(*c3, true, {"w3:3"});
  w4->Reply(*c4, true, {"w4:3"});
  reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kReplySuccess);
  EXPECT_THAT(reply->payload, ElementsAre("w3:3", "w4:3"));
}

TEST_F(ConsensusBrokerTest, BindsSeveralEndpoints) {
  Start();
  const std::string ipc =
      "ipc:///tmp/zb-ccpb-test-" + std::to_string(::getpid()) + ".sock";
  ASSERT_TRUE(OnBroker([&](ConsensusBroker& b) { return b.Bind(ipc); }).ok());
  EXPECT_EQ(OnBroker([](ConsensusBroker& b) { return b.endpoints().size(); }),
            2u);
  EXPECT_FALSE(
      OnBroker([](ConsensusBroker& b) { return b.Bind("bogus://x"); }).ok());
  Peer client(ctx_, ipc);
  client.Send({kTagS, Byte(MessageType::kPing)});
  auto reply = client.Recv();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->type, MessageType::kPing);
  StopBroker();
  // The broker removes the socket file it created.
  EXPECT_NE(access(ipc.substr(6).c_str(), F_OK), 0);
  unlink(ipc.substr(6).c_str());
}

// Create() checks every option it is given before it touches a socket, and
// says which one is wrong: a broker that cannot work (a sweep period of 0
// would spin the reactor, a liveness bound of 0 refuses every worker) is
// never built.
TEST(ConsensusBrokerCreateTest, InvalidOptionsAreRejectedNamingTheOption) {
  struct Case {
    const char* option;
    std::function<void(ConsensusBroker::Options&)> set;
  };
  const Case cases[] = {
      {"sweep_interval",
       [](ConsensusBroker::Options& o) { o.sweep_interval = milliseconds(0); }},
      {"request_timeout",
       [](ConsensusBroker::Options& o) {
         o.request_timeout = milliseconds(-1);
       }},
      {"client_idle_timeout",
       [](ConsensusBroker::Options& o) {
         o.client_idle_timeout = milliseconds(-5);
       }},
      {"max_heartbeat_interval",
       [](ConsensusBroker::Options& o) {
         o.max_heartbeat_interval = milliseconds(0);
       }},
      {"max_heartbeat_liveness",
       [](ConsensusBroker::Options& o) { o.max_heartbeat_liveness = 0; }},
      {"max_service_size",
       [](ConsensusBroker::Options& o) { o.max_service_size = 0; }},
      {"max_message_size",
       [](ConsensusBroker::Options& o) { o.max_message_size = -2; }},
      {"linger",
       [](ConsensusBroker::Options& o) { o.linger = milliseconds(-1); }},
  };
  zmq::context_t ctx;
  Reactor reactor;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.option);
    ConsensusBroker::Options options;
    c.set(options);
    absl::StatusOr<std::unique_ptr<ConsensusBroker>> broker =
        ConsensusBroker::Create(reactor, ctx, std::move(options));
    ASSERT_FALSE(broker.ok());
    EXPECT_EQ(broker.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(broker.status().message(), HasSubstr(c.option));
  }
  // The edges that are meaningful stay accepted: a request timeout and an
  // idle timeout of 0 (everything expires at the next sweep; the fuzzer
  // uses them), and 0 for the message size (no limit).
  ConsensusBroker::Options edges;
  edges.request_timeout = milliseconds(0);
  edges.client_idle_timeout = milliseconds(0);
  edges.max_message_size = 0;
  absl::StatusOr<std::unique_ptr<ConsensusBroker>> broker =
      ConsensusBroker::Create(reactor, ctx, std::move(edges));
  EXPECT_TRUE(broker.ok()) << broker.status();
}

// A context that is already shut down (the program is exiting) is an error
// from Create(), never an exception out of it.
TEST(ConsensusBrokerCreateTest, ShutDownContextIsAnErrorNotAnException) {
  zmq::context_t ctx;
  ctx.shutdown();
  Reactor reactor;
  absl::StatusOr<std::unique_ptr<ConsensusBroker>> broker;
  EXPECT_NO_THROW(broker = ConsensusBroker::Create(reactor, ctx, {}));
  ASSERT_FALSE(broker.ok());
  EXPECT_THAT(broker.status().message(), HasSubstr("socket"));
}

// The fail-over pair's request gate (set_request_gate(),
// zbrokers/ha/node.h): while it says no, REQUESTs, readable malformed
// REQUESTs and PINGs are dropped without an answer and counted; workers
// register and stay.
TEST_F(ConsensusBrokerTest, ARefusingGateDropsRequestsAndPingsButKeepsWorkers) {
  Start();
  std::atomic<bool> open{false};
  std::atomic<int> asked{0};
  OnBroker([&](ConsensusBroker& b) {
    b.set_request_gate([&] {
      ++asked;
      return open.load();
    });
    return 0;
  });
  auto worker = NewWorker("echo");  // a passive broker takes workers
  Peer client(ctx_, endpoint_);
  client.Request("echo", {1, 9}, {"first"});
  client.Send({kTagS, Byte(MessageType::kPing)});
  // Malformed (no service) but with a readable sequence id: answered
  // "zb:malformed" by an active broker, dropped by a passive one.
  client.Send({kTagS, Byte(MessageType::kRequest), "", SeqBytes(2, 9), ""});
  EXPECT_TRUE(client.Silent(milliseconds(300)));
  EXPECT_TRUE(worker->Silent(milliseconds(50)));
  ConsensusBroker::Stats s = Stats();
  EXPECT_EQ(s.requests_refused_passive, 3u);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.pings, 0u);
  EXPECT_EQ(Workers("echo"), 1u);
  EXPECT_EQ(asked.load(), 3);
  // The gate opens: the client's next request is served (its id is new to
  // the broker, which adopts it).
  open = true;
  client.Send({kTagS, Byte(MessageType::kPing)});
  auto pong = client.Recv();
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->type, MessageType::kPing);
  client.Request("echo", {3, 9}, {"second"});
  auto req = worker->Recv();
  ASSERT_TRUE(req.has_value());
  EXPECT_THAT(req->payload, ElementsAre("second"));
  worker->Reply(*req, true, {"answer"});
  auto rep = client.Recv();
  ASSERT_TRUE(rep.has_value());
  EXPECT_EQ(rep->type, MessageType::kReplySuccess);
  EXPECT_THAT(rep->payload, ElementsAre("answer"));
  EXPECT_EQ(Stats().requests_refused_passive, 3u);
  EXPECT_EQ(asked.load(), 5);
  OnBroker([](ConsensusBroker& b) {
    b.set_request_gate({});
    return 0;
  });
}

// A draining broker answers "zb:shutdown" as before, without asking the
// gate: asking could make a broker that is going away take over.
TEST_F(ConsensusBrokerTest, ADrainingBrokerDoesNotAskTheGate) {
  Start();
  std::atomic<int> asked{0};
  OnBroker([&](ConsensusBroker& b) {
    b.set_request_gate([&] {
      ++asked;
      return false;
    });
    b.Drain(milliseconds(10000), {});
    return 0;
  });
  Peer client(ctx_, endpoint_);
  client.Request("echo", {1, 9}, {"late"});
  auto rep = client.Recv();
  ASSERT_TRUE(rep.has_value());
  EXPECT_EQ(rep->type, MessageType::kReplyFailure);
  EXPECT_EQ(asked.load(), 0);
  EXPECT_EQ(Stats().refused_draining, 1u);
  OnBroker([](ConsensusBroker& b) {
    b.set_request_gate({});
    return 0;
  });
}

}  // namespace
}  // namespace zb
