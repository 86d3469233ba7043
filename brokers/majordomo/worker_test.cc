// Copyright 2026 The zbrokers Authors.
//
// zb::MdpWorker against a fake broker: a raw ROUTER socket driven by the test,
// so every frame the worker sends is checked exactly.

#include "zbrokers/majordomo/worker.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <zmq_addon.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/must.h"
#include "test/testing/raw_router.h"
#include "test/testing/wait.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;

const std::string kReady(1, '\x01');
const std::string kRequest(1, '\x02');
const std::string kReply(1, '\x03');
const std::string kHeartbeat(1, '\x04');
const std::string kDisconnect(1, '\x05');

class MdpWorkerTest : public ::testing::Test {
 protected:
  MdpWorkerTest() : router_(ctx_), endpoint_(router_.endpoint()) {}

  ~MdpWorkerTest() override {
    thread_.Invoke([&](Reactor&) { worker_.reset(); });
  }

  void StartWorker(MdpWorker::Handler handler, MdpWorker::Options o = Fast(),
                   std::string service = "svc") {
    thread_.Invoke([&](Reactor& r) {
      absl::StatusOr<std::unique_ptr<MdpWorker>> w =
          MdpWorker::Create(r, ctx_, endpoint_, service, std::move(handler), o);
      ASSERT_TRUE(w.ok()) << w.status();
      worker_ = *std::move(w);
    });
  }

 public:  // also used by MdpWorkerManyBrokersTest
  static MdpWorker::Options Fast() {
    MdpWorker::Options o;
    o.heartbeat_interval = 30ms;
    o.heartbeat_liveness = 10;  // 300 ms: tolerant of a loaded machine
    o.reconnect_delay = 10ms;
    return o;
  }

  // Next message from the worker (identity first), skipping HEARTBEATs
  // unless `keep_heartbeats`; empty when nothing came within `limit`.
  std::vector<std::string> Recv(bool keep_heartbeats = false,
                                std::chrono::milliseconds limit = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      std::vector<std::string> s = router_.Recv(left);
      if (s.empty()) return {};
      if (!keep_heartbeats && s.size() == 4 && s[3] == kHeartbeat) continue;
      return s;
    }
  }

  void Send(std::initializer_list<std::string_view> parts) {
    router_.Send(parts);
  }

  MdpWorker::Stats Stats() {
    return thread_.Invoke([&](Reactor&) { return worker_->stats(); });
  }

  static MdpWorker::Handler Echo() {
    return [](Frames b, MdpWorker::Replier r) { r.Reply(std::move(b)); };
  }

 protected:
  zmq::context_t ctx_;
  test::RawRouter router_;
  std::string endpoint_;
  ReactorThread thread_;
  std::unique_ptr<MdpWorker> worker_;
};

TEST_F(MdpWorkerTest, ReadyThenExactReply) {
  StartWorker(Echo());
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_THAT(std::vector<std::string>(ready.begin() + 1, ready.end()),
              ElementsAre("", "MDPW01", kReady, "svc"));
  const std::string id = ready[0];
  Send({id, "", "MDPW01", kRequest, "client-1", "", "a", "", "c"});
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "client-1", "", "a",
                                  "", "c"));
  EXPECT_EQ(Stats().requests, 1u);
  EXPECT_EQ(Stats().replies, 1u);
}

TEST_F(MdpWorkerTest, EmptyReplyIsOneEmptyFrame) {
  StartWorker([](Frames, MdpWorker::Replier r) { r.Reply({}); });
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "c", "", ""));
}

TEST_F(MdpWorkerTest, HeartbeatsWhileIdle) {
  StartWorker(Echo());
  const std::string id = Recv()[0];
  auto hb = Recv(/*keep_heartbeats=*/true);
  EXPECT_THAT(hb, ElementsAre(id, "", "MDPW01", kHeartbeat));
}

TEST_F(MdpWorkerTest, HeartbeatsWhileAHandlerIsBusy) {
  std::vector<MdpWorker::Replier> held;
  StartWorker([&](Frames, MdpWorker::Replier r) {
    held.push_back(std::move(r));  // reactor thread only
  });
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  // Keep the worker alive with our own heartbeats; it must heartbeat too.
  int heartbeats = 0;
  for (int i = 0; i < 20 && heartbeats < 2; ++i) {
    Send({id, "", "MDPW01", kHeartbeat});
    auto m = Recv(true, 200ms);
    if (m.size() == 4 && m[3] == kHeartbeat) ++heartbeats;
  }
  EXPECT_EQ(heartbeats, 2);
  thread_.Invoke([&](Reactor&) { held.clear(); });
}

TEST_F(MdpWorkerTest, ReconnectsWithNewSocketOnDisconnect) {
  StartWorker(Echo());
  const std::string id1 = Recv()[0];
  Send({id1, "", "MDPW01", kDisconnect});
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  EXPECT_NE(ready[0], id1);  // a new socket, a new identity
  EXPECT_EQ(Stats().disconnects_received, 1u);
  EXPECT_EQ(Stats().reconnects, 1u);
}

TEST_F(MdpWorkerTest, ReconnectsWhenTheBrokerIsSilent) {
  StartWorker(Echo());
  const std::string id1 = Recv()[0];
  // Say nothing: after liveness intervals the worker starts over.
  auto ready = Recv(false, 5000ms);
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  EXPECT_NE(ready[0], id1);
  EXPECT_GE(Stats().reconnects, 1u);
}

TEST_F(MdpWorkerTest, ReplyLaterFromAnotherThread) {
  std::mutex mu;
  std::vector<MdpWorker::Replier> held;
  StartWorker([&](Frames, MdpWorker::Replier r) {
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(std::move(r));
  });
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!held.empty()) break;
    }
    std::this_thread::sleep_for(2ms);
  }
  std::thread other([&] {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(held.size(), 1u);
    EXPECT_TRUE(held[0].Reply(MakeFrames({"later"})));
    EXPECT_FALSE(held[0].Reply(MakeFrames({"twice"})));
  });
  other.join();
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "c", "", "later"));
}

TEST_F(MdpWorkerTest, ReplyForAClosedConnectionIsDropped) {
  std::vector<MdpWorker::Replier> held;
  StartWorker(
      [&](Frames, MdpWorker::Replier r) { held.push_back(std::move(r)); });
  const std::string id1 = Recv()[0];
  Send({id1, "", "MDPW01", kRequest, "c", "", "x"});
  Send({id1, "", "MDPW01", kDisconnect});
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  thread_.Invoke([&](Reactor&) {
    ASSERT_EQ(held.size(), 1u);
    held[0].Reply(MakeFrames({"stale"}));
  });
  EXPECT_EQ(Stats().dropped_replies, 1u);
  // Only READYs (the silent fake broker makes the worker reconnect), never
  // the stale REPLY.
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    auto m = Recv(false, 50ms);
    if (m.empty()) continue;
    ASSERT_GE(m.size(), 4u);
    EXPECT_EQ(m[3], kReady);
  }
}

// A Replier may outlive its worker and then its reactor: a reply, or a drop,
// made afterwards on another thread is dropped without touching either.  (It
// used to post to the destroyed reactor: a use-after-free that ASan reports
// as a heap-use-after-free in Reactor::on_owner_thread.)
TEST(MdpWorkerLifetimeTest, ReplierOutlivingTheWorkerAndTheReactorIsHarmless) {
  zmq::context_t ctx;
  test::RawRouter router(ctx);
  std::vector<MdpWorker::Replier> held;  // reactor thread, then this one
  auto thread = std::make_unique<ReactorThread>();
  std::unique_ptr<MdpWorker> worker;
  thread->Invoke([&](Reactor& r) {
    worker = test::Must(MdpWorker::Create(
        r, ctx, router.endpoint(), "svc",
        [&](Frames, MdpWorker::Replier rep) { held.push_back(std::move(rep)); },
        {.heartbeat_interval = 1000ms}));
  });
  std::vector<std::string> ready = router.Recv(5000ms);
  ASSERT_EQ(ready.size(), 5u);
  router.Send({ready[0], "", "MDPW01", kRequest, "c1", "", "x"});
  router.Send({ready[0], "", "MDPW01", kRequest, "c2", "", "y"});
  for (int i = 0; i < 2500; ++i) {
    if (thread->Invoke([&](Reactor&) { return held.size(); }) == 2) break;
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(thread->Invoke([&](Reactor&) { return held.size(); }), 2u);
  thread->Invoke([&](Reactor&) { worker.reset(); });
  thread.reset();  // the reactor is gone too
  std::thread([&] {
    EXPECT_FALSE(held[0].valid());
    EXPECT_TRUE(held[0].Reply(MakeFrames({"late"})));  // taken, dropped
    EXPECT_FALSE(held[0].Reply(MakeFrames({"twice"})));
    held[1] = MdpWorker::Replier();  // unanswered: nothing left to tell
  }).join();
  held.clear();
  // Nothing reached the broker after the worker's DISCONNECT.
  std::vector<std::string> last;
  for (std::vector<std::string> m; !(m = router.Recv(100ms)).empty();) {
    last = m;
  }
  ASSERT_GE(last.size(), 4u);
  EXPECT_EQ(last[3], kDisconnect);
}

TEST_F(MdpWorkerTest, StopSendsDisconnect) {
  StartWorker(Echo());
  const std::string id = Recv()[0];
  thread_.Invoke([&](Reactor&) { worker_->Shutdown(); });
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kDisconnect));
}

TEST_F(MdpWorkerTest, MalformedFromBrokerIsCounted) {
  StartWorker(Echo());
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c"});  // no delimiter, no body
  Send({id, "junk"});
  Send({id, "", "MDPW01", kReady, "svc"});  // not a broker command
  for (int i = 0; i < 500 && Stats().malformed < 3; ++i) {
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(Stats().malformed, 3u);
  EXPECT_EQ(Stats().requests, 0u);
}

// Issue 10 item 6: a Replier dropped without a reply (the handler kept
// nothing) makes the worker give the request back: DISCONNECT, then a new
// socket and READY, so the broker redispatches it.  Before the fix the
// worker stayed registered and heartbeating, and never got work again.
TEST_F(MdpWorkerTest, DroppedReplierGivesTheRequestBack) {
  StartWorker([](Frames, MdpWorker::Replier) {});
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kDisconnect));
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  EXPECT_NE(ready[0], id);
  auto s = Stats();
  EXPECT_EQ(s.abandoned, 1u);
  EXPECT_EQ(s.replies, 0u);
}

// The same for a handler that throws (the reactor reports the exception).
TEST_F(MdpWorkerTest, ThrowingHandlerGivesTheRequestBack) {
  std::atomic<int> reported{0};
  thread_.Invoke([&](Reactor& r) {
    r.SetErrorHandler(
        [&](std::exception_ptr, std::string_view) { ++reported; });
  });
  StartWorker([](Frames, MdpWorker::Replier) {
    throw std::runtime_error("handler bug");
  });
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kDisconnect));
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  EXPECT_EQ(reported.load(), 1);
  EXPECT_EQ(Stats().abandoned, 1u);
}

// A Replier dropped on another thread, and one moved-over, give back too; a
// moved-from Replier and one for an old connection do nothing.
TEST_F(MdpWorkerTest, ReplierDroppedElsewhereOrOverwrittenGivesBack) {
  std::mutex mu;
  std::vector<MdpWorker::Replier> held;
  StartWorker([&](Frames, MdpWorker::Replier r) {
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(std::move(r));
  });
  std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "x"});
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!held.empty()) break;
    }
    std::this_thread::sleep_for(2ms);
  }
  std::thread([&] {
    std::lock_guard<std::mutex> lock(mu);
    MdpWorker::Replier moved = std::move(held[0]);  // held[0]: moved-from
    held.clear();                                   // nothing to give back
  }).join();  // `moved` dropped here, on this thread
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kDisconnect));
  auto ready = Recv();
  ASSERT_EQ(ready.size(), 5u);
  id = ready[0];
  EXPECT_EQ(Stats().abandoned, 1u);
  // Move-assigning over an unanswered Replier gives that one back.
  Send({id, "", "MDPW01", kRequest, "c", "", "y"});
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!held.empty()) break;
    }
    std::this_thread::sleep_for(2ms);
  }
  thread_.Invoke([&](Reactor&) {
    std::lock_guard<std::mutex> lock(mu);
    held[0] = MdpWorker::Replier();
  });
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kDisconnect));
  EXPECT_EQ(Stats().abandoned, 2u);
}

// With several requests outstanding (broker prefetch), the replies to one
// client leave in the order its requests came, whatever order the handler
// answers in: the broker settles a REPLY with that client's oldest request
// at this worker.  Replies to other clients are not held up.
TEST_F(MdpWorkerTest, RepliesToOneClientLeaveInArrivalOrder) {
  std::vector<MdpWorker::Replier> held;
  MdpWorker::Options o = Fast();
  o.heartbeat_liveness = 100;  // the fake broker sends no heartbeats
  StartWorker(
      [&](Frames, MdpWorker::Replier r) { held.push_back(std::move(r)); }, o);
  const std::string id = Recv()[0];
  Send({id, "", "MDPW01", kRequest, "c", "", "c1"});
  Send({id, "", "MDPW01", kRequest, "c", "", "c2"});
  Send({id, "", "MDPW01", kRequest, "d", "", "d1"});
  for (int i = 0; i < 500 && Stats().requests < 3; ++i) {
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(Stats().requests, 3u);
  thread_.Invoke([&](Reactor&) { held[1].Reply(MakeFrames({"a2"})); });
  EXPECT_TRUE(Recv(false, 200ms).empty());  // held back behind c1
  thread_.Invoke([&](Reactor&) { held[2].Reply(MakeFrames({"b1"})); });
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "d", "", "b1"));
  thread_.Invoke([&](Reactor&) { held[0].Reply(MakeFrames({"a1"})); });
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "c", "", "a1"));
  EXPECT_THAT(Recv(), ElementsAre(id, "", "MDPW01", kReply, "c", "", "a2"));
  EXPECT_EQ(Stats().replies, 3u);
}

// Issue 11 item 3: a REQUEST frame over max_message_size never reaches the
// handler (libzmq drops the connection); one within the limit does.
TEST_F(MdpWorkerTest, RequestOverMaxMessageSizeNeverReachesTheHandler) {
  std::atomic<int> handled{0};
  MdpWorker::Options o = Fast();
  o.max_message_size = 1 << 20;
  StartWorker(
      [&](Frames b, MdpWorker::Replier r) {
        ++handled;
        r.Reply(std::move(b));
      },
      o);
  const std::string id = Recv()[0];
  Frames big = MakeFrames({id, "", "MDPW01", kRequest, "c", ""});
  big.push_back(Frame(std::string((1 << 20) + 1, 'b')));
  ASSERT_TRUE(SendFrames(router_.socket(), big).ok());
  // The worker starts over (its broker went silent or said DISCONNECT).
  auto m = Recv();
  for (int i = 0; i < 10 && !(m.size() == 5 && m[3] == kReady); ++i) {
    m = Recv();
  }
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[3], kReady);
  EXPECT_EQ(handled.load(), 0);
  Frames ok = MakeFrames({m[0], "", "MDPW01", kRequest, "c", ""});
  ok.push_back(Frame(std::string(1 << 20, 'b')));
  ASSERT_TRUE(SendFrames(router_.socket(), ok).ok());
  auto reply = Recv();
  ASSERT_EQ(reply.size(), 7u);
  EXPECT_EQ(reply[3], kReply);
  EXPECT_EQ(handled.load(), 1);
}

// --- One worker, many brokers (issue 14) ------------------------------------

// Two raw ROUTERs polled by the test thread play two brokers; the worker,
// on its own reactor thread, is given both as a list.
class MdpWorkerManyBrokersTest : public ::testing::Test {
 protected:
  MdpWorkerManyBrokersTest() : a_(ctx_), b_(ctx_) {}
  ~MdpWorkerManyBrokersTest() override {
    thread_.Invoke([&](Reactor&) { worker_.reset(); });
  }

  void StartWorker(MdpWorker::Handler handler) {
    thread_.Invoke([&](Reactor& r) {
      worker_ = test::Must(
          MdpWorker::Create(r, ctx_, a_.endpoint() + "," + b_.endpoint(), "svc",
                            std::move(handler), TestOptions()));
    });
  }

  // Fast heartbeats, but a liveness (3 s) no step of these tests reaches,
  // so that the silent fake brokers do not make a session start over.
  static MdpWorker::Options TestOptions() {
    MdpWorker::Options o = MdpWorkerTest::Fast();
    o.heartbeat_liveness = 100;
    return o;
  }

  // The next message `router` got that is not a HEARTBEAT (empty if none
  // within 5 s).
  std::vector<std::string> Recv(test::RawRouter& router) {
    const auto deadline = std::chrono::steady_clock::now() + 5000ms;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      std::vector<std::string> m = router.Recv(left);
      if (m.size() == 4 && m[3] == kHeartbeat) continue;
      return m;
    }
  }

  MdpWorker::Stats Stats() {
    return thread_.Invoke([&](Reactor&) { return worker_->stats(); });
  }

  zmq::context_t ctx_;
  test::RawRouter a_;
  test::RawRouter b_;
  ReactorThread thread_;
  std::unique_ptr<MdpWorker> worker_;
};

TEST_F(MdpWorkerManyBrokersTest, EveryBrokerGetsReadyAndHeartbeats) {
  StartWorker(MdpWorkerTest::Echo());
  EXPECT_EQ(Stats().brokers, 2u);
  for (test::RawRouter* r : {&a_, &b_}) {
    auto ready = Recv(*r);
    ASSERT_EQ(ready.size(), 5u);
    EXPECT_THAT(std::vector<std::string>(ready.begin() + 1, ready.end()),
                ElementsAre("", "MDPW01", kReady, "svc"));
    // Then heartbeats, and nothing else.
    for (int i = 0; i < 2; ++i) {
      EXPECT_THAT(r->Recv(), ElementsAre(ready[0], "", "MDPW01", kHeartbeat));
    }
  }
  // Not connected until a broker says something.
  EXPECT_EQ(Stats().brokers_connected, 0u);
  thread_.Invoke([&](Reactor&) { worker_.reset(); });
  // Shutdown says goodbye to both.
  EXPECT_THAT(Recv(a_), ElementsAre(::testing::_, "", "MDPW01", kDisconnect));
  EXPECT_THAT(Recv(b_), ElementsAre(::testing::_, "", "MDPW01", kDisconnect));
}

// RFC 7's one request at a time is per broker: with two brokers the handler
// holds one of each at once, and each reply, made in the other order and
// from another thread, reaches the broker its request came from.
TEST_F(MdpWorkerManyBrokersTest, EachReplyGoesToItsOwnBroker) {
  std::mutex mu;
  std::vector<MdpWorker::Replier> held;
  std::vector<std::string> bodies;
  StartWorker([&](Frames body, MdpWorker::Replier r) {
    std::lock_guard<std::mutex> lock(mu);
    bodies.emplace_back(View(body[0]));
    held.push_back(std::move(r));
  });
  const std::string ida = Recv(a_)[0];
  const std::string idb = Recv(b_)[0];
  a_.Send({ida, "", "MDPW01", kRequest, "client", "", "from-a"});
  b_.Send({idb, "", "MDPW01", kRequest, "client", "", "from-b"});
  ASSERT_TRUE(test::WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size() == 2;
  }));
  EXPECT_EQ(Stats().brokers_connected, 2u);
  std::thread other([&] {
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t i = held.size(); i-- > 0;) {
      EXPECT_TRUE(held[i].Reply(MakeFrames({"re:" + bodies[i]})));
    }
  });
  other.join();
  EXPECT_THAT(Recv(a_), ElementsAre(ida, "", "MDPW01", kReply, "client", "",
                                    "re:from-a"));
  EXPECT_THAT(Recv(b_), ElementsAre(idb, "", "MDPW01", kReply, "client", "",
                                    "re:from-b"));
  auto s = Stats();
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.replies, 2u);
  EXPECT_EQ(s.dropped_replies, 0u);
}

// One broker's DISCONNECT re-registers that session only; a reply held for
// its old connection is dropped, the other broker's reply still goes out.
TEST_F(MdpWorkerManyBrokersTest, DisconnectFromOneLeavesTheOtherAlone) {
  std::vector<MdpWorker::Replier> held;  // reactor thread only
  StartWorker(
      [&](Frames, MdpWorker::Replier r) { held.push_back(std::move(r)); });
  const std::string ida = Recv(a_)[0];
  const std::string idb = Recv(b_)[0];
  a_.Send({ida, "", "MDPW01", kRequest, "ca", "", "x"});
  ASSERT_TRUE(test::WaitFor([&] {
    return thread_.Invoke([&](Reactor&) { return held.size() == 1; });
  }));
  b_.Send({idb, "", "MDPW01", kRequest, "cb", "", "y"});
  ASSERT_TRUE(test::WaitFor([&] {
    return thread_.Invoke([&](Reactor&) { return held.size() == 2; });
  }));
  a_.Send({ida, "", "MDPW01", kDisconnect});
  auto ready = Recv(a_);
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  EXPECT_NE(ready[0], ida);
  thread_.Invoke([&](Reactor&) {
    held[0].Reply(MakeFrames({"stale"}));
    held[1].Reply(MakeFrames({"fresh"}));
  });
  EXPECT_THAT(Recv(b_),
              ElementsAre(idb, "", "MDPW01", kReply, "cb", "", "fresh"));
  auto s = Stats();
  EXPECT_EQ(s.dropped_replies, 1u);
  EXPECT_EQ(s.disconnects_received, 1u);
  EXPECT_EQ(s.reconnects, 1u);
  EXPECT_EQ(s.replies, 1u);
  // a's new connection serves; b never re-registered.
  a_.Send({ready[0], "", "MDPW01", kRequest, "ca", "", "z"});
  ASSERT_TRUE(test::WaitFor([&] {
    return thread_.Invoke([&](Reactor&) { return held.size() == 3; });
  }));
  thread_.Invoke([&](Reactor&) { held[2].Reply(MakeFrames({"again"})); });
  EXPECT_THAT(Recv(a_),
              ElementsAre(ready[0], "", "MDPW01", kReply, "ca", "", "again"));
  EXPECT_EQ(Stats().requests, 3u);
  EXPECT_EQ(Stats().reconnects, 1u);
}

// A Replier dropped unanswered gives back only its own broker's requests:
// DISCONNECT and a new READY there, nothing at the other broker.
TEST_F(MdpWorkerManyBrokersTest, AbandonedRequestReconnectsOnlyItsSession) {
  std::vector<MdpWorker::Replier> held;  // reactor thread only
  StartWorker([&](Frames body, MdpWorker::Replier r) {
    if (View(body[0]) == "keep") held.push_back(std::move(r));
  });
  const std::string ida = Recv(a_)[0];
  const std::string idb = Recv(b_)[0];
  b_.Send({idb, "", "MDPW01", kRequest, "cb", "", "keep"});
  ASSERT_TRUE(test::WaitFor([&] {
    return thread_.Invoke([&](Reactor&) { return held.size() == 1; });
  }));
  a_.Send({ida, "", "MDPW01", kRequest, "ca", "", "drop"});
  EXPECT_THAT(Recv(a_), ElementsAre(ida, "", "MDPW01", kDisconnect));
  auto ready = Recv(a_);
  ASSERT_EQ(ready.size(), 5u);
  EXPECT_EQ(ready[3], kReady);
  thread_.Invoke([&](Reactor&) { held[0].Reply(MakeFrames({"kept"})); });
  EXPECT_THAT(Recv(b_),
              ElementsAre(idb, "", "MDPW01", kReply, "cb", "", "kept"));
  EXPECT_EQ(Stats().abandoned, 1u);
}

TEST(MdpWorkerManyBrokersStartTest, BadListsAreRefused) {
  zmq::context_t ctx;
  ReactorThread thread;
  thread.Invoke([&](Reactor& r) {
    for (const char* list :
         {"", "tcp://127.0.0.1:5555,", "tcp://127.0.0.1:5555,,tcp://b:1",
          "tcp://127.0.0.1:5555,tcp://127.0.0.1:5555",
          "tcp://127.0.0.1:5555,tcp://127.0.0.1:99999"}) {
      absl::StatusOr<std::unique_ptr<MdpWorker>> w = MdpWorker::Create(
          r, ctx, list, "svc",
          [](Frames b, MdpWorker::Replier p) { p.Reply(std::move(b)); });
      EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << list;
    }
  });
}

TEST(MdpWorkerStartTest, RejectsReservedAndEmptyServices) {
  zmq::context_t ctx;
  Reactor reactor;
  EXPECT_EQ(MdpWorker::Create(reactor, ctx, "tcp://127.0.0.1:1", "mmi.service",
                              [](Frames, MdpWorker::Replier) {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MdpWorker::Create(reactor, ctx, "tcp://127.0.0.1:1", "",
                              [](Frames, MdpWorker::Replier) {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MdpWorker::Create(reactor, ctx, "nonsense://x", "svc",
                              [](Frames, MdpWorker::Replier) {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zb
