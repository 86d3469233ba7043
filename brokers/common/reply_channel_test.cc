// Copyright 2026 The zbrokers Authors.
//
// zb::ReplyChannel: answers reach a live target on its reactor thread, at
// once there and posted from elsewhere; every other answer is dropped,
// counted exactly once, and never touches the target or the reactor after
// they are gone.  The races (answers from many threads while the target and
// then the reactor are destroyed) are meant to run under TSan and ASan too.

#include "zbrokers/common/reply_channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using namespace std::chrono_literals;

// A target that records what reached it.  Lives on one reactor's thread.
struct Target {
  int answers = 0;
  std::thread::id ran_on;
};

using Channel = ReplyChannel<Target>;

// Runs the reactor until `done` or 5 s.
template <typename Done>
bool RunUntil(Reactor& reactor, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    reactor.RunOnce(10ms).IgnoreError();
  }
  return true;
}

// Sends from a thread of its own, as an application's worker thread would;
// returns what Send() returned.
template <typename Fn>
bool SendFromAnotherThread(Channel& channel, Fn fn) {
  bool sent = false;
  std::thread([&] { sent = channel.Send(std::move(fn)); }).join();
  return sent;
}

// One reactor (on the test's thread), one target, its channel and a
// reference to it, as an answer object holds.
class ReplyChannelTest : public ::testing::Test {
 protected:
  Reactor reactor;
  Target target;
  Channel::Binding binding = Channel::Open(reactor, target);
  std::shared_ptr<Channel> ref = binding.channel();
};

TEST_F(ReplyChannelTest, SendOnTheReactorThreadRunsAtOnce) {
  ASSERT_NE(binding.channel(), nullptr);
  EXPECT_TRUE(binding.channel()->open());
  EXPECT_TRUE(binding.channel()->Send([](Target& t) { ++t.answers; }));
  EXPECT_EQ(target.answers, 1);  // before the reactor ran at all
  EXPECT_EQ(binding.channel()->dropped(), 0u);
}

TEST_F(ReplyChannelTest, SendAfterCloseIsDroppedCountedAndReleased) {
  binding.Close();
  EXPECT_EQ(binding.channel(), nullptr);
  EXPECT_FALSE(ref->open());
  auto held = std::make_shared<int>(0);  // what the answer owns
  EXPECT_FALSE(ref->Send([held](Target& t) { ++t.answers; }));
  EXPECT_EQ(target.answers, 0);
  EXPECT_EQ(ref->dropped(), 1u);
  EXPECT_EQ(held.use_count(), 1);  // the answer was destroyed
}

TEST(ReplyChannelLifetimeTest, DestroyingTheBindingCloses) {
  Reactor reactor;
  Target target;
  std::shared_ptr<Channel> ref;
  {
    Channel::Binding binding = Channel::Open(reactor, target);
    ref = binding.channel();
  }
  EXPECT_FALSE(ref->open());
  EXPECT_FALSE(ref->Send([](Target& t) { ++t.answers; }));
  EXPECT_EQ(ref->dropped(), 1u);
}

TEST(ReplyChannelLifetimeTest, MoveAssigningOverABindingClosesItsChannel) {
  Reactor reactor;
  Target a, b;
  Channel::Binding binding = Channel::Open(reactor, a);
  std::shared_ptr<Channel> first = binding.channel();
  binding = Channel::Open(reactor, b);
  EXPECT_FALSE(first->open());
  EXPECT_TRUE(binding.channel()->open());
  binding.channel()->Send([](Target& t) { ++t.answers; });
  EXPECT_EQ(a.answers, 0);
  EXPECT_EQ(b.answers, 1);
}

TEST_F(ReplyChannelTest, SendFromAnotherThreadRunsOnTheReactorThread) {
  EXPECT_TRUE(SendFromAnotherThread(*ref, [](Target& t) {
    ++t.answers;
    t.ran_on = std::this_thread::get_id();
  }));
  EXPECT_EQ(target.answers, 0);  // posted, not run on the sender
  ASSERT_TRUE(RunUntil(reactor, [&] { return target.answers == 1; }));
  EXPECT_EQ(target.ran_on, std::this_thread::get_id());
  EXPECT_EQ(ref->dropped(), 0u);
}

TEST_F(ReplyChannelTest, PostedAnswerIsDroppedWhenTheChannelClosesFirst) {
  auto held = std::make_shared<int>(0);
  EXPECT_TRUE(SendFromAnotherThread(*ref, [held](Target& t) { ++t.answers; }));
  binding.Close();  // the target goes before its answer's task runs
  int ran = 0;
  reactor.Post([&] { ++ran; });  // runs after the answer's task
  ASSERT_TRUE(RunUntil(reactor, [&] { return ran == 1; }));
  EXPECT_EQ(target.answers, 0);
  EXPECT_EQ(ref->dropped(), 1u);
  EXPECT_EQ(held.use_count(), 1);
}

TEST(ReplyChannelLifetimeTest,
     AnswerQueuedWhenTheReactorIsDestroyedIsCountedOnce) {
  auto reactor = std::make_unique<Reactor>();
  Target target;
  Channel::Binding binding = Channel::Open(*reactor, target);
  std::shared_ptr<Channel> ref = binding.channel();
  EXPECT_TRUE(SendFromAnotherThread(*ref, [](Target& t) { ++t.answers; }));
  binding.Close();
  reactor.reset();  // destroys the queued task unrun
  EXPECT_EQ(target.answers, 0);
  EXPECT_EQ(ref->dropped(), 1u);
}

TEST_F(ReplyChannelTest, AnswerRefusedByAClosedPostQueueIsCounted) {
  reactor.ClosePostQueue();
  EXPECT_FALSE(SendFromAnotherThread(*ref, [](Target& t) { ++t.answers; }));
  EXPECT_EQ(ref->dropped(), 1u);
  EXPECT_EQ(target.answers, 0);
}

// Answers from several threads while the target, and then its reactor, are
// destroyed: every answer either reaches the live target or is counted as
// dropped, exactly once, and nothing touches freed memory (ASan, TSan).
TEST(ReplyChannelLifetimeTest,
     AnswersRacingTheTargetAndReactorDestructionAllEndOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    auto thread = std::make_unique<ReactorThread>();
    // The target lives on the reactor thread; `delivered` outlives both.
    auto delivered = std::make_shared<std::atomic<int>>(0);
    std::optional<Target> target;
    std::optional<Channel::Binding> binding;
    std::shared_ptr<Channel> ref = thread->Invoke([&](Reactor& r) {
      target.emplace();
      binding.emplace(Channel::Open(r, *target));
      return binding->channel();
    });
    std::atomic<bool> go{false};
    std::atomic<int> sends{0};
    std::vector<std::thread> senders;
    for (int i = 0; i < kThreads; ++i) {
      senders.emplace_back([&, ref] {
        while (!go.load()) std::this_thread::yield();
        for (int n = 0; n < 200; ++n) {
          ref->Send([delivered](Target& t) {
            ++t.answers;  // a freed target here is a use-after-free
            delivered->fetch_add(1);
          });
          sends.fetch_add(1);
        }
      });
    }
    go.store(true);
    // Let some answers through, then destroy the target (its binding
    // first), then the reactor, while the senders keep going.
    while (sends.load() < 50) std::this_thread::yield();
    thread->Invoke([&](Reactor&) {
      binding.reset();
      target.reset();
    });
    thread.reset();
    for (std::thread& s : senders) s.join();
    EXPECT_EQ(static_cast<std::uint64_t>(delivered->load()) + ref->dropped(),
              static_cast<std::uint64_t>(kThreads * 200))
        << "round " << round;
  }
}

}  // namespace
}  // namespace zb
