// Copyright 2026 The zbrokers Authors.
//
// zb::Reactor and zb::ReactorThread.  Waits are bounded generously and no
// test asserts a latency; the exact timer rules are tested without a clock in
// timer_queue_test.cc.

#include "zbrokers/reactor/reactor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ElementsAre;
using Clock = Reactor::Clock;

// Generous bound for anything that should happen "soon".
constexpr auto kPatience = seconds(10);

// Runs the reactor until `done()` or kPatience; returns done().
bool RunUntil(Reactor& reactor, const std::function<bool()>& done) {
  const auto give_up = Clock::now() + kPatience;
  while (!done() && Clock::now() < give_up) {
    EXPECT_TRUE(reactor.RunOnce(milliseconds(10)).ok());
  }
  return done();
}

// A connected pair of PAIR sockets over inproc.
struct SocketPair {
  SocketPair(zmq::context_t& ctx, const std::string& name)
      : a(ctx, zmq::socket_type::pair), b(ctx, zmq::socket_type::pair) {
    a.set(zmq::sockopt::linger, 0);
    b.set(zmq::sockopt::linger, 0);
    a.bind("inproc://" + name);
    b.connect("inproc://" + name);
  }
  zmq::socket_t a;
  zmq::socket_t b;
};

void Send(zmq::socket_t& s, std::initializer_list<std::string_view> parts) {
  Frames frames = MakeFrames(parts);
  ASSERT_TRUE(SendFrames(s, frames).ok());
}

class ReactorTest : public testing::Test {
 protected:
  zmq::context_t ctx_;
  Reactor reactor_;
};

// --- Timers ------------------------------------------------------------------

TEST_F(ReactorTest, TimersFireInDeadlineOrderAndTiesInAddOrder) {
  std::vector<std::string> log;
  const auto base = Clock::now() + milliseconds(20);
  Reactor::Timer tie1 =
      reactor_.At(base + milliseconds(10), [&] { log.push_back("tie1"); })
          .value();
  Reactor::Timer last =
      reactor_.At(base + milliseconds(20), [&] { log.push_back("last"); })
          .value();
  Reactor::Timer tie2 =
      reactor_.At(base + milliseconds(10), [&] { log.push_back("tie2"); })
          .value();
  Reactor::Timer first =
      reactor_.At(base, [&] { log.push_back("first"); }).value();
  Reactor::Timer tie3 =
      reactor_.At(base + milliseconds(10), [&] { log.push_back("tie3"); })
          .value();
  EXPECT_EQ(reactor_.timer_count(), 5u);
  ASSERT_TRUE(RunUntil(reactor_, [&] { return log.size() == 5; }));
  EXPECT_THAT(log, ElementsAre("first", "tie1", "tie2", "tie3", "last"));
  EXPECT_EQ(reactor_.timer_count(), 0u);
}

TEST_F(ReactorTest, AfterFiresOnceNotEarly) {
  const auto start = Clock::now();
  Clock::time_point fired_at;
  int calls = 0;
  Reactor::Timer timer = reactor_
                             .After(milliseconds(30),
                                    [&] {
                                      fired_at = Clock::now();
                                      ++calls;
                                    })
                             .value();
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls == 1; }));
  EXPECT_GE(fired_at - start, milliseconds(30));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(calls, 1);
}

TEST_F(ReactorTest, CancelledTimerNeverFires) {
  int a = 0, b = 0;
  // Cancel() takes the plain id of a released timer.
  const TimerId id =
      reactor_.After(milliseconds(5), [&] { ++a; }).value().Release();
  Reactor::Timer other = reactor_.After(milliseconds(20), [&] { ++b; }).value();
  EXPECT_TRUE(reactor_.Cancel(id));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return b == 1; }));
  EXPECT_EQ(a, 0);
}

TEST_F(ReactorTest, CancelSelfSiblingFiredAndUnknown) {
  // Two timers due in the same round: the first cancels the second.
  const auto when = Clock::now() + milliseconds(5);
  TimerId sibling = 0;
  int sibling_calls = 0;
  bool cancel_sibling = false;
  Reactor::Timer canceller =
      reactor_.At(when, [&] { cancel_sibling = reactor_.Cancel(sibling); })
          .value();
  sibling = reactor_.At(when, [&] { ++sibling_calls; }).value().Release();

  // A periodic timer that cancels itself on its second call.
  TimerId self = 0;
  int self_calls = 0;
  self = reactor_
             .Every(milliseconds(2),
                    [&] {
                      if (++self_calls == 2) {
                        EXPECT_TRUE(reactor_.Cancel(self));
                      }
                    })
             .value()
             .Release();

  ASSERT_TRUE(RunUntil(reactor_, [&] { return self_calls >= 2; }));
  ASSERT_TRUE(RunUntil(reactor_, [&] { return reactor_.timer_count() == 0; }));
  EXPECT_TRUE(cancel_sibling);
  EXPECT_EQ(sibling_calls, 0);
  EXPECT_EQ(self_calls, 2);
  EXPECT_FALSE(reactor_.Cancel(self));  // cancelled already

  // Already fired, and never issued.
  int fired = 0;
  const TimerId once = reactor_.After(Clock::duration::zero(), [&] { ++fired; })
                           .value()
                           .Release();
  ASSERT_TRUE(RunUntil(reactor_, [&] { return fired == 1; }));
  EXPECT_FALSE(reactor_.Cancel(once));
  EXPECT_FALSE(reactor_.Cancel(0));
  EXPECT_FALSE(reactor_.Cancel(0xdead'beef'0000'0007ull));
}

TEST_F(ReactorTest, PeriodicTimerKeepsFiring) {
  int calls = 0;
  const TimerId id =
      reactor_.Every(milliseconds(3), [&] { ++calls; }).value().Release();
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls >= 5; }));
  EXPECT_EQ(reactor_.timer_count(), 1u);
  EXPECT_TRUE(reactor_.Cancel(id));
  const int seen = calls;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(calls, seen);
}

TEST_F(ReactorTest, PeriodicTimerSkipsMissedPeriods) {
  // The reactor is kept away from its loop for ~10 periods.  When it comes
  // back, a burst rule would fire once per iteration until caught up (five
  // here); the skip rule fires once and moves on to a future grid point.
  // (The exact grid is checked with a fake clock in timer_queue_test.cc.)
  int calls = 0;
  Reactor::Timer timer =
      reactor_.Every(milliseconds(20), [&] { ++calls; }).value();
  std::this_thread::sleep_for(milliseconds(210));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(reactor_.RunOnce(Clock::duration::zero()).ok());
  }
  EXPECT_GE(calls, 1);
  EXPECT_LE(calls, 2);  // 2 only if these iterations straddled a grid point
}

TEST_F(ReactorTest, AtInThePastFiresOnTheNextIteration) {
  int calls = 0;
  Reactor::Timer timer =
      reactor_.At(Clock::now() - seconds(1), [&] { ++calls; }).value();
  // No waiting: the overdue timer makes the poll return at once.
  absl::StatusOr<int> handled = reactor_.RunOnce(seconds(5));
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 1);
  EXPECT_EQ(calls, 1);
}

TEST_F(ReactorTest, PastTimerAddedByACallbackFiresInTheNextIteration) {
  int inner = 0;
  Reactor::Timer inner_timer;
  Reactor::Timer outer =
      reactor_
          .At(Clock::now() - milliseconds(1),
              [&] {
                inner_timer =
                    reactor_.At(Clock::now() - seconds(1), [&] { ++inner; })
                        .value();
              })
          .value();
  ASSERT_TRUE(reactor_.RunOnce(Clock::duration::zero()).ok());
  EXPECT_EQ(inner, 0);
  ASSERT_TRUE(reactor_.RunOnce(seconds(5)).ok());
  EXPECT_EQ(inner, 1);
}

TEST_F(ReactorTest, RunOnceWaitsForTheEarliestTimerNotLonger) {
  int calls = 0;
  Reactor::Timer timer =
      reactor_.After(milliseconds(20), [&] { ++calls; }).value();
  const auto start = Clock::now();
  // max_wait is long; the timer must end the wait.
  while (calls == 0 && Clock::now() - start < kPatience) {
    ASSERT_TRUE(reactor_.RunOnce(seconds(30)).ok());
  }
  EXPECT_EQ(calls, 1);
  EXPECT_LT(Clock::now() - start, kPatience);
}

// --- post / stop
// ---------------------------------------------------------------

TEST_F(ReactorTest, PostsFromEightThreadsRunOnceEachInPerThreadOrder) {
  constexpr int kThreads = 8;
  constexpr int kPosts = 10'000;
  // Only touched on the reactor (this) thread.
  std::array<std::vector<int>, kThreads> seen;
  int total = 0;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPosts; ++i) {
        reactor_.Post([&, t, i] {
          seen[t].push_back(i);
          ++total;
        });
      }
    });
  }
  const bool all =
      RunUntil(reactor_, [&] { return total == kThreads * kPosts; });
  for (auto& p : producers) p.join();
  // Anything still queued would show up here as an excess.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(1)).ok());
  ASSERT_TRUE(all);
  EXPECT_EQ(total, kThreads * kPosts);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<std::size_t>(kPosts))
        << "thread " << t;
    for (int i = 0; i < kPosts; ++i) {
      ASSERT_EQ(seen[t][i], i) << "thread " << t;
    }
  }
}

TEST_F(ReactorTest, PostWakesARunOnceBlockedInPoll) {
  bool ran = false;
  std::thread poster([&] {
    std::this_thread::sleep_for(milliseconds(100));  // let it block first
    reactor_.Post([&] { ran = true; });
  });
  const auto start = Clock::now();
  absl::StatusOr<int> handled = reactor_.RunOnce(seconds(10));
  const auto waited = Clock::now() - start;
  poster.join();
  ASSERT_TRUE(handled.ok());
  EXPECT_TRUE(ran);
  EXPECT_EQ(*handled, 1);
  EXPECT_LT(waited, seconds(5));
}

TEST_F(ReactorTest, TaskPostedByATaskRunsInTheNextIteration) {
  std::vector<int> log;
  reactor_.Post([&] {
    log.push_back(1);
    reactor_.Post([&] { log.push_back(2); });
  });
  ASSERT_TRUE(reactor_.RunOnce(seconds(5)).ok());
  EXPECT_THAT(log, ElementsAre(1));
  ASSERT_TRUE(reactor_.RunOnce(seconds(5)).ok());
  EXPECT_THAT(log, ElementsAre(1, 2));
}

TEST_F(ReactorTest, StopFromAnotherThreadEndsRun) {
  std::atomic<bool> running{false};
  reactor_.Post([&] { running = true; });
  std::thread stopper([&] {
    const auto give_up = Clock::now() + kPatience;
    while (!running && Clock::now() < give_up) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(50));  // let it block in poll
    reactor_.Stop();
  });
  const auto start = Clock::now();
  const absl::Status status = reactor_.Run();
  stopper.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(running);
  EXPECT_LT(Clock::now() - start, kPatience);
}

TEST_F(ReactorTest, StopBeforeRunMakesRunReturnAtOnce) {
  reactor_.Stop();
  EXPECT_TRUE(reactor_.Run().ok());
  // The stop was consumed: a stop from a timer ends the next run.
  int calls = 0;
  Reactor::Timer timer = reactor_
                             .Every(milliseconds(1),
                                    [&] {
                                      if (++calls == 3) reactor_.Stop();
                                    })
                             .value();
  EXPECT_TRUE(reactor_.Run().ok());
  EXPECT_EQ(calls, 3);
}

// --- Sockets and file descriptors
// -------------------------------------------------

TEST_F(ReactorTest, SocketHandlerGetsEveryMultipartMessage) {
  SocketPair p(ctx_, "multipart");
  std::vector<std::vector<std::string>> got;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t> frames) {
        got.push_back(FramesToStrings(frames));
      });
  ASSERT_TRUE(watch.ok());
  Send(p.b, {"one"});
  Send(p.b, {"a", "", "ccc", "dddd", "eeeee", "ffffff"});  // > 4 frames
  Send(p.b, {"x", "y"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return got.size() == 3; }));
  EXPECT_THAT(got[0], ElementsAre("one"));
  EXPECT_THAT(got[1], ElementsAre("a", "", "ccc", "dddd", "eeeee", "ffffff"));
  EXPECT_THAT(got[2], ElementsAre("x", "y"));
}

TEST_F(ReactorTest, FrameBufferIsReusedAndSurvivesFramesBeingMovedOut) {
  SocketPair p(ctx_, "reuse");
  std::vector<Frames> kept;
  std::vector<const zmq::message_t*> buffers;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t> frames) {
        buffers.push_back(frames.data());
        Frames mine;
        // Move-construct some frames out, move-assign others.
        for (std::size_t i = 0; i < frames.size(); ++i) {
          if (i % 2 == 0) {
            mine.push_back(std::move(frames[i]));
          } else {
            mine.emplace_back();
            mine.back() = std::move(frames[i]);
          }
        }
        kept.push_back(std::move(mine));
      });
  ASSERT_TRUE(watch.ok());
  constexpr int kMessages = 50;
  for (int i = 0; i < kMessages; ++i) {
    const std::string n = std::to_string(i);
    // Large frames are heap-allocated by libzmq, small ones inline; use both.
    Send(p.b, {"id-" + n, std::string(100 + i, 'x'), "tail-" + n});
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] { return kept.size() == kMessages; }));
  for (int i = 0; i < kMessages; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_THAT(FramesToStrings(kept[i]),
                ElementsAre("id-" + n, std::string(100 + i, 'x'), "tail-" + n));
  }
  // Every message was received into the same buffer.
  for (const auto* b : buffers) EXPECT_EQ(b, buffers.front());
}

TEST_F(ReactorTest, BatchCapIsHonoured) {
  Reactor reactor(Reactor::Options{.batch_cap = 8});
  SocketPair p(ctx_, "batch");
  int calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(p.a, [&](std::span<zmq::message_t>) { ++calls; });
  ASSERT_TRUE(watch.ok());
  for (int i = 0; i < 20; ++i) Send(p.b, {std::to_string(i)});
  // inproc delivery is synchronous: all 20 are queued before we poll.
  absl::StatusOr<int> handled = reactor.RunOnce(seconds(5));
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 8);
  EXPECT_EQ(calls, 8);
  ASSERT_TRUE(reactor.RunOnce(seconds(5)).ok());
  EXPECT_EQ(calls, 16);
  handled = reactor.RunOnce(seconds(5));
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 4);
  EXPECT_EQ(calls, 20);
}

TEST_F(ReactorTest, BatchDrainsEverythingBelowTheCapInOneIteration) {
  SocketPair p(ctx_, "drain");
  int calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++calls; });
  ASSERT_TRUE(watch.ok());
  for (int i = 0; i < 100; ++i) Send(p.b, {"m"});
  absl::StatusOr<int> handled = reactor_.RunOnce(seconds(5));
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 100);
  EXPECT_EQ(calls, 100);
}

TEST_F(ReactorTest, RemovingASocketInsideAnotherSocketsHandler) {
  SocketPair p1(ctx_, "remove1");
  SocketPair p2(ctx_, "remove2");
  int calls1 = 0, calls2 = 0;
  bool removed_one = false;
  // Whichever handler runs first removes the other socket; the other handler
  // must then never run, not even later in the same round.
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p1.a, [&](std::span<zmq::message_t>) {
        ++calls1;
        if (!removed_one) {
          removed_one = true;
          EXPECT_TRUE(reactor_.Remove(p2.a).ok());
        }
      });
  ASSERT_TRUE(watch.ok());
  absl::StatusOr<Reactor::SocketWatch> watch2 =
      reactor_.Add(p2.a, [&](std::span<zmq::message_t>) {
        ++calls2;
        if (!removed_one) {
          removed_one = true;
          EXPECT_TRUE(reactor_.Remove(p1.a).ok());
        }
      });
  ASSERT_TRUE(watch2.ok());
  for (int i = 0; i < 3; ++i) {
    Send(p1.b, {"x"});
    Send(p2.b, {"y"});
  }
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls1 + calls2 > 0; }));
  // More traffic for both; only the survivor's handler may see it.
  Send(p1.b, {"x"});
  Send(p2.b, {"y"});
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_TRUE((calls1 == 0) != (calls2 == 0))
      << "calls1=" << calls1 << " calls2=" << calls2;
  EXPECT_EQ(calls1 + calls2, 4);  // the survivor got all of its messages
  // The removed socket is no longer registered.
  EXPECT_TRUE(absl::IsNotFound(reactor_.Remove(calls1 == 0 ? p1.a : p2.a)));
}

TEST_F(ReactorTest, RemovingItsOwnSocketStopsTheBatch) {
  SocketPair p(ctx_, "self-remove");
  int calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) {
        ++calls;
        EXPECT_TRUE(reactor_.Remove(p.a).ok());
      });
  ASSERT_TRUE(watch.ok());
  for (int i = 0; i < 5; ++i) Send(p.b, {"m"});
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(calls, 1);
  // And it can be added again, to get the rest.
  int later = 0;
  absl::StatusOr<Reactor::SocketWatch> watch2 =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++later; });
  ASSERT_TRUE(watch2.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return later == 4; }));
}

TEST_F(ReactorTest, AddAndRemoveReportMisuse) {
  SocketPair p(ctx_, "misuse");
  auto noop = [](std::span<zmq::message_t>) {};
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(p.a, noop);
  EXPECT_TRUE(watch.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(reactor_.Add(p.a, noop).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(reactor_.Add(p.b, nullptr).status()));
  EXPECT_TRUE(reactor_.Remove(p.a).ok());
  EXPECT_TRUE(absl::IsNotFound(reactor_.Remove(p.a)));
  EXPECT_TRUE(absl::IsNotFound(reactor_.RemoveFd(12345)));
  EXPECT_TRUE(absl::IsInvalidArgument(reactor_.AddFd(-1, [] {}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(reactor_.AddFd(0, nullptr, nullptr).status()));
}

TEST_F(ReactorTest, RawFileDescriptorsBecomeReadable) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::string from_pipe;
  int eventfd_calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.AddFd(fds[0], [&] {
    char c;
    if (::read(fds[0], &c, 1) == 1) from_pipe += c;
  });
  ASSERT_TRUE(watch.ok());
  absl::StatusOr<Reactor::SocketWatch> watch2 = reactor_.AddFd(efd, [&] {
    std::uint64_t v;
    if (::read(efd, &v, sizeof v) == sizeof v) {
      eventfd_calls += static_cast<int>(v);
    }
  });
  ASSERT_TRUE(watch2.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(reactor_.AddFd(efd, [] {}).status()));
  ASSERT_EQ(::write(fds[1], "hi", 2), 2);
  const std::uint64_t three = 3;
  ASSERT_EQ(::write(efd, &three, sizeof three), 8);
  ASSERT_TRUE(RunUntil(
      reactor_, [&] { return from_pipe == "hi" && eventfd_calls == 3; }));
  // Removed: further data is not read.
  ASSERT_TRUE(reactor_.RemoveFd(fds[0]).ok());
  ASSERT_EQ(::write(fds[1], "!", 1), 1);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(from_pipe, "hi");
  ASSERT_TRUE(reactor_.RemoveFd(efd).ok());
  ::close(fds[0]);
  ::close(fds[1]);
  ::close(efd);
}

TEST_F(ReactorTest, HangUpOfARawFdReachesTheReadableHandler) {
  // The write end closes with nothing written: poll reports only POLLHUP.
  // The handler must be told (and see EOF), not the loop spin silently.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[1]);
  int calls = 0;
  bool saw_eof = false;
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.AddFd(fds[0], [&] {
    ++calls;
    char c;
    saw_eof = ::read(fds[0], &c, 1) == 0;
    EXPECT_TRUE(reactor_.RemoveFd(fds[0]).ok());
  });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls > 0; }));
  EXPECT_TRUE(saw_eof);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(1)).ok());
  }
  EXPECT_EQ(calls, 1);
  ::close(fds[0]);
}

TEST_F(ReactorTest, HangUpOfAWriteOnlyFdReachesTheWritableHandler) {
  // The read end closes: poll reports POLLERR on the write end.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  int calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.AddFd(fds[1], nullptr, [&] {
        ++calls;
        EXPECT_TRUE(reactor_.RemoveFd(fds[1]).ok());
      });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls > 0; }));
  EXPECT_EQ(calls, 1);
  ::close(fds[1]);
}

TEST_F(ReactorTest, WritableHandlerIsCalled) {
  SocketPair p(ctx_, "writable");
  int writable = 0;
  absl::StatusOr<Reactor::SocketWatch> watch = reactor_.Add(
      p.a, [](std::span<zmq::message_t>) {},
      [&] {
        ++writable;
        Send(p.a, {"hello"});
      });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return writable > 0; }));
  zmq::message_t m;
  ASSERT_TRUE(p.b.recv(m, zmq::recv_flags::dontwait));
  EXPECT_EQ(View(m), "hello");
}

// --- Errors ------------------------------------------------------------------

TEST_F(ReactorTest, ExceptionsFromCallbacksReachTheErrorHandler) {
  std::vector<std::string> errors;
  reactor_.SetErrorHandler([&](std::exception_ptr e, std::string_view where) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      errors.push_back(std::string(where) + ": " + ex.what());
    }
  });
  SocketPair p(ctx_, "errors");
  int messages = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t> frames) {
        ++messages;
        if (View(frames[0]) == "bad") {
          throw std::runtime_error("socket boom");
        }
      });
  ASSERT_TRUE(watch.ok());
  int timers = 0, posts = 0;
  Reactor::Timer boom =
      reactor_
          .After(Clock::duration::zero(),
                 [] { throw std::runtime_error("timer boom"); })
          .value();
  Reactor::Timer count =
      reactor_.After(Clock::duration::zero(), [&] { ++timers; }).value();
  reactor_.Post([] { throw std::runtime_error("post boom"); });
  reactor_.Post([&] { ++posts; });
  Send(p.b, {"bad"});
  Send(p.b, {"good"});
  ASSERT_TRUE(RunUntil(reactor_, [&] {
    return errors.size() == 3 && timers == 1 && posts == 1 && messages == 2;
  }));
  EXPECT_THAT(errors, testing::UnorderedElementsAre("timer: timer boom",
                                                    "socket: socket boom",
                                                    "post: post boom"));
  // The loop is still healthy.
  int after = 0;
  Reactor::Timer later =
      reactor_.After(milliseconds(1), [&] { ++after; }).value();
  EXPECT_TRUE(RunUntil(reactor_, [&] { return after == 1; }));
}

TEST_F(ReactorTest, AThrowingErrorHandlerDoesNotEndTheLoop) {
  reactor_.SetErrorHandler([](std::exception_ptr, std::string_view) {
    throw std::logic_error("handler boom");
  });
  int ran = 0;
  reactor_.Post([] { throw std::runtime_error("boom"); });
  reactor_.Post([&] { ++ran; });
  testing::internal::CaptureStderr();
  ASSERT_TRUE(reactor_.RunOnce(seconds(5)).ok());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(ran, 1);
  EXPECT_THAT(err, testing::HasSubstr("handler boom"));
}

TEST_F(ReactorTest, DefaultErrorHandlerReportsOnStderr) {
  reactor_.Post([] { throw std::runtime_error("reported boom"); });
  testing::internal::CaptureStderr();
  ASSERT_TRUE(reactor_.RunOnce(seconds(5)).ok());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, testing::HasSubstr("reported boom"));
  EXPECT_THAT(err, testing::HasSubstr("post"));
}

// The reactor polls the sockets' ZMQ_FDs itself.  A ZMQ_FD only signals new
// commands: once anything has processed them (a send may, and so does
// reading ZMQ_EVENTS), a message already queued no longer makes the fd
// readable.  The reactor must find it anyway, at once.
TEST_F(ReactorTest, FindsAQueuedMessageWhoseSignalWasAlreadyConsumed) {
  SocketPair p(ctx_, "consumed-signal");
  int got = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++got; });
  ASSERT_TRUE(watch.ok());
  Send(p.b, {"queued"});
  // Wait until the message is in a's pipe, consuming the fd signal.
  const auto give_up = Clock::now() + kPatience;
  while (!(p.a.get(zmq::sockopt::events) & ZMQ_POLLIN) &&
         Clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  const auto before = Clock::now();
  auto handled = reactor_.RunOnce(kPatience);
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 1);
  EXPECT_EQ(got, 1);
  EXPECT_LT(Clock::now() - before, kPatience / 2) << "slept on a ready socket";
}

// With a socket ready and no raw fd the reactor skips poll() and learns of
// posted tasks from a flag; they must still run in the same iteration.
TEST_F(ReactorTest, PostedTaskRunsAlongsideAReadySocket) {
  SocketPair p(ctx_, "ready-and-posted");
  int got = 0;
  bool posted_ran = false;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++got; });
  ASSERT_TRUE(watch.ok());
  Send(p.b, {"one"});
  std::thread([&] { reactor_.Post([&] { posted_ran = true; }); }).join();
  ASSERT_TRUE(RunUntil(reactor_, [&] { return got == 1 && posted_ran; }));
  // Nothing left: a further round with a short wait handles nothing.
  auto handled = reactor_.RunOnce(milliseconds(5));
  ASSERT_TRUE(handled.ok());
  EXPECT_EQ(*handled, 0);
}

// --- Batch scheduling (batch_scheduling.h has the policy switch itself) ----

// Runs a reactor with `options` on a thread of its own until one posted task
// has looked at that thread's policy; returns what it saw, the reactor's
// status and the thread's policy once Run() has returned.
struct BatchRun {
  int policy_in_run = -1;
  absl::Status status_in_run;
  int policy_after_run = -1;
};
BatchRun RunWithOptions(Reactor::Options options) {
  BatchRun r;
  std::thread t([&] {
    Reactor reactor(options);
    reactor.Post([&] {
      r.policy_in_run = ::sched_getscheduler(0);
      r.status_in_run = reactor.batch_scheduling_status();
      reactor.Stop();
    });
    EXPECT_TRUE(reactor.Run().ok());
    r.policy_after_run = ::sched_getscheduler(0);
  });
  t.join();
  return r;
}

TEST(ReactorBatchSchedulingTest, RunMakesItsThreadABatchThreadForItsDuration) {
  BatchRun r = RunWithOptions({.batch_scheduling = true});
  EXPECT_EQ(r.policy_in_run, SCHED_BATCH);
  EXPECT_TRUE(r.status_in_run.ok()) << r.status_in_run;
  EXPECT_EQ(r.policy_after_run, SCHED_OTHER);
}

TEST(ReactorBatchSchedulingTest, OffByDefault) {
  BatchRun r = RunWithOptions({});
  EXPECT_EQ(r.policy_in_run, SCHED_OTHER);
  EXPECT_TRUE(r.status_in_run.ok());
}

TEST(ReactorBatchSchedulingTest, ReactorThreadPassesTheOptionOn) {
  ReactorThread thread({.batch_scheduling = true});
  EXPECT_EQ(thread.Invoke([](Reactor&) { return ::sched_getscheduler(0); }),
            SCHED_BATCH);
}

// --- Yield before sleep (idle_yield.h has the rule itself) -----------------

TEST(ReactorYieldTest, YieldsBeforeASleepOnlyWhenItFollowsWork) {
  zmq::context_t ctx;
  Reactor reactor({.yield_before_sleep = true});
  SocketPair p(ctx, "yield-after-work");
  int got = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(p.a, [&](std::span<zmq::message_t>) { ++got; });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(reactor.RunOnce(milliseconds(2)).ok());  // nothing, sleeps
  EXPECT_EQ(reactor.idle_yield_stats().yields, 0u);
  Send(p.b, {"one"});
  ASSERT_TRUE(RunUntil(reactor, [&] { return got == 1; }));
  // The round after the work has nothing: it yields, looks again, sleeps.
  const std::uint64_t before = reactor.idle_yield_stats().yields;
  ASSERT_TRUE(reactor.RunOnce(milliseconds(2)).ok());
  EXPECT_EQ(reactor.idle_yield_stats().yields, before + 1);
  // And the next one, after no work, sleeps at once.
  ASSERT_TRUE(reactor.RunOnce(milliseconds(2)).ok());
  EXPECT_EQ(reactor.idle_yield_stats().yields, before + 1);
  // A round that does not wait (max_wait 0) never yields.
  Send(p.b, {"two"});
  ASSERT_TRUE(RunUntil(reactor, [&] { return got == 2; }));
  ASSERT_TRUE(reactor.RunOnce(Clock::duration::zero()).ok());
  EXPECT_EQ(reactor.idle_yield_stats().yields, before + 1);
}

TEST(ReactorYieldTest, OffByDefault) {
  zmq::context_t ctx;
  Reactor reactor;
  SocketPair p(ctx, "yield-off");
  int got = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(p.a, [&](std::span<zmq::message_t>) { ++got; });
  ASSERT_TRUE(watch.ok());
  for (int i = 0; i < 20; ++i) {
    Send(p.b, {"m"});
    ASSERT_TRUE(RunUntil(reactor, [&] { return got == i + 1; }));
    ASSERT_TRUE(reactor.RunOnce(milliseconds(1)).ok());
  }
  EXPECT_EQ(reactor.idle_yield_stats().yields, 0u);
}

// The case the yield is for: the thread that answers shares the reactor's
// core.  The reactor sends one "go" per round to a peer thread on the same
// CPU, which answers with a burst of kBurst messages.  A reactor that slept
// at once would be woken by the first of them; one that yields lets the
// peer run first and finds the burst waiting: productive yields.
TEST(ReactorYieldTest, APeerOnTheSameCoreMakesTheYieldsProductive) {
  const int cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  zmq::context_t ctx;
  constexpr int kBurst = 16;
  constexpr int kRounds = 500;
  {
    Reactor reactor({.yield_before_sleep = true});
    SocketPair p(ctx, "yield-same-core");
    std::thread peer([&] {
      // The thread inherits the one-CPU affinity.
      for (int round = 0; round < kRounds; ++round) {
        zmq::message_t go;
        if (!p.b.recv(go)) return;
        for (int i = 0; i < kBurst; ++i) {
          p.b.send(zmq::str_buffer("r"), zmq::send_flags::none);
        }
      }
    });
    int got = 0;
    int round = 0;
    absl::StatusOr<Reactor::SocketWatch> watch =
        reactor.Add(p.a, [&](std::span<zmq::message_t>) {
          if (++got % kBurst == 0 && ++round < kRounds) {
            p.a.send(zmq::str_buffer("go"), zmq::send_flags::none);
          }
        });
    ASSERT_TRUE(watch.ok());
    p.a.send(zmq::str_buffer("go"), zmq::send_flags::none);
    EXPECT_TRUE(RunUntil(reactor, [&] { return got == kBurst * kRounds; }))
        << got;
    peer.join();
    const IdleYield::Stats& stats = reactor.idle_yield_stats();
    EXPECT_GT(stats.yields, 0u);
    // Most rounds find the burst waiting; on a loaded machine another
    // process may take the core now and then, so only some are required.
    EXPECT_GT(stats.productive, 0u) << "yields " << stats.yields;
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
}

TEST_F(ReactorTest, RunReportsAFailingPoll) {
  // Terminating the context makes polling the socket fail with ETERM.
  auto ctx = std::make_unique<zmq::context_t>();
  auto s = std::make_unique<zmq::socket_t>(*ctx, zmq::socket_type::pair);
  s->set(zmq::sockopt::linger, 0);
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(*s, [](std::span<zmq::message_t>) {});
  ASSERT_TRUE(watch.ok());
  ctx->shutdown();
  const absl::Status status = reactor_.Run();
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(reactor_.Remove(*s).ok());
  s.reset();
  ctx.reset();
}

// --- Re-entrancy and null callbacks
// --------------------------------------------------

TEST_F(ReactorTest, RunOnceInsideATimerIsRefused) {
  absl::Status nested_once = absl::OkStatus();
  absl::Status nested_run = absl::OkStatus();
  bool fired = false;
  Reactor::Timer timer = *reactor_.After(Clock::duration::zero(), [&] {
    fired = true;
    nested_once = reactor_.RunOnce(Clock::duration::zero()).status();
    nested_run = reactor_.Run();
  });
  ASSERT_TRUE(RunUntil(reactor_, [&] { return fired; }));
  EXPECT_TRUE(absl::IsFailedPrecondition(nested_once)) << nested_once;
  EXPECT_THAT(std::string(nested_once.message()),
              testing::HasSubstr("inside one of its callbacks"));
  EXPECT_TRUE(absl::IsFailedPrecondition(nested_run)) << nested_run;
  // The outer loop is unharmed and the reactor runs normally afterwards.
  EXPECT_TRUE(reactor_.RunOnce(Clock::duration::zero()).ok());
}

TEST_F(ReactorTest, RunOnceInsideASocketHandlerKeepsTheOuterFrames) {
  SocketPair p(ctx_, "reenter");
  Send(p.b, {"first", "1"});
  Send(p.b, {"second", "2"});
  std::vector<std::string> seen;
  absl::Status nested = absl::OkStatus();
  bool nested_done = false;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t> frames) {
        if (!nested_done) {
          nested_done = true;
          // A nested iteration would receive "second" into
          // the buffer `frames` points into.
          nested = reactor_.RunOnce(Clock::duration::zero()).status();
        }
        std::string all;
        for (auto& f : frames) all += std::string(View(f));
        seen.push_back(all);
      });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return seen.size() >= 2; }));
  EXPECT_TRUE(absl::IsFailedPrecondition(nested)) << nested;
  EXPECT_THAT(seen, ElementsAre("first1", "second2"));
}

// Issue 11 item 6: a large message that its handler leaves in the span
// (e.g. dropped as malformed) stayed allocated until the next message.
TEST_F(ReactorTest, LargeFramesLeftInTheBufferAreReleasedAfterTheBatch) {
  SocketPair p(ctx_, "release");
  static std::atomic<int> freed{0};
  freed = 0;
  constexpr std::size_t kBig = 1 << 20;
  auto* big = new char[kBig]();
  // inproc hands the same buffer over; its free function runs when the
  // receiving side's last reference is closed.
  zmq::message_t m(
      big, kBig,
      [](void* data, void*) {
        delete[] static_cast<char*>(data);
        ++freed;
      },
      nullptr);
  ASSERT_TRUE(p.b.send(zmq::buffer(std::string_view("head")),
                       zmq::send_flags::sndmore));
  ASSERT_TRUE(p.b.send(m, zmq::send_flags::none));
  int seen = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t> frames) {
        ++seen;
        EXPECT_EQ(frames.size(), 2u);
        EXPECT_EQ(frames[1].size(), kBig);
        // Leaves the frames where they are.
      });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return seen == 1; }));
  EXPECT_EQ(freed.load(), 1) << "the 1 MiB frame is still held";
}

TEST_F(ReactorTest, NullCallbacksAreRefused) {
  auto after = reactor_.After(milliseconds(1), nullptr);
  auto every = reactor_.Every(milliseconds(1), nullptr);
  auto at = reactor_.At(Clock::now(), nullptr);
  Reactor::Callback empty;
  auto after_empty = reactor_.After(milliseconds(1), std::move(empty));
  EXPECT_TRUE(absl::IsInvalidArgument(after.status())) << after.status();
  EXPECT_THAT(std::string(after.status().message()),
              testing::HasSubstr("After: "));
  EXPECT_TRUE(absl::IsInvalidArgument(every.status()));
  EXPECT_TRUE(absl::IsInvalidArgument(at.status()));
  EXPECT_TRUE(absl::IsInvalidArgument(after_empty.status()));
  EXPECT_EQ(reactor_.timer_count(), 0u);
  // Nothing was queued that could call an empty function later.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(2)).ok());
  }
  // A null task is refused too.
  EXPECT_FALSE(reactor_.Post(nullptr));
  EXPECT_EQ(*reactor_.RunOnce(Clock::duration::zero()), 0);
}

// --- Registrations that clean up after themselves ----------------------------

TEST_F(ReactorTest, SocketWatchRemovesTheWatchWhenDestroyed) {
  SocketPair p(ctx_, "watch-handle");
  int calls = 0;
  {
    absl::StatusOr<Reactor::SocketWatch> w =
        reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++calls; });
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_TRUE(static_cast<bool>(*w));
    Send(p.b, {"one"});
    ASSERT_TRUE(RunUntil(reactor_, [&] { return calls == 1; }));
    // The registration is live: a second add of the same socket is refused.
    EXPECT_TRUE(absl::IsAlreadyExists(
        reactor_.Add(p.a, [](std::span<zmq::message_t>) {}).status()));
  }
  // Gone with the handle: nothing more is delivered, and the socket can be
  // registered again.
  Send(p.b, {"two"});
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(absl::IsNotFound(reactor_.Remove(p.a)));
  int later = 0;
  absl::StatusOr<Reactor::SocketWatch> again =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++later; });
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return later == 1; }));
}

TEST_F(ReactorTest, SocketWatchMovesAndResetsInsideItsOwnHandler) {
  SocketPair p(ctx_, "watch-move");
  int calls = 0;
  Reactor::SocketWatch owner;
  EXPECT_FALSE(static_cast<bool>(owner));
  {
    absl::StatusOr<Reactor::SocketWatch> w =
        reactor_.Add(p.a, [&](std::span<zmq::message_t>) {
          ++calls;
          owner.Reset();  // the watched socket's own handler drops it
        });
    ASSERT_TRUE(w.ok());
    owner = std::move(*w);
    EXPECT_FALSE(static_cast<bool>(*w));  // the moved-from handle owns nothing
  }  // destroying the moved-from handle removed nothing
  for (int i = 0; i < 3; ++i) Send(p.b, {"m"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls == 1; }));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(calls, 1);  // the batch stopped with the reset
  EXPECT_FALSE(static_cast<bool>(owner));
}

TEST_F(ReactorTest, SocketWatchOutlivingAnExplicitRemoveIsHarmless) {
  SocketPair p(ctx_, "watch-removed");
  absl::StatusOr<Reactor::SocketWatch> w =
      reactor_.Add(p.a, [](std::span<zmq::message_t>) {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(reactor_.Remove(p.a).ok());
  ASSERT_TRUE(reactor_.RunOnce(milliseconds(0)).ok());  // frees the watch
  // A new registration of the same socket is not the old handle's.
  int calls = 0;
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor_.Add(p.a, [&](std::span<zmq::message_t>) { ++calls; });
  ASSERT_TRUE(watch.ok());
  w->Reset();
  Send(p.b, {"still watched"});
  ASSERT_TRUE(RunUntil(reactor_, [&] { return calls == 1; }));
}

TEST_F(ReactorTest, FdWatchRemovesTheFdWhenDestroyed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  int reads = 0;
  {
    absl::StatusOr<Reactor::SocketWatch> w = reactor_.AddFd(fds[0], [&] {
      char c;
      if (::read(fds[0], &c, 1) == 1) ++reads;
    });
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    ASSERT_TRUE(RunUntil(reactor_, [&] { return reads == 1; }));
  }
  ASSERT_EQ(::write(fds[1], "y", 1), 1);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(5)).ok());
  EXPECT_EQ(reads, 1);
  EXPECT_TRUE(absl::IsNotFound(reactor_.RemoveFd(fds[0])));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(ReactorTest, TimerHandleCancelsWhenDestroyedAndReleaseKeepsIt) {
  int cancelled = 0, released = 0, periodic = 0;
  {
    absl::StatusOr<Reactor::Timer> t =
        reactor_.After(milliseconds(1), [&] { ++cancelled; });
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(static_cast<bool>(*t));
  }
  absl::StatusOr<Reactor::Timer> kept =
      reactor_.After(milliseconds(1), [&] { ++released; });
  ASSERT_TRUE(kept.ok());
  const TimerId id = kept->Release();
  EXPECT_NE(id, 0u);
  EXPECT_FALSE(static_cast<bool>(*kept));
  kept->Reset();  // owns nothing any more: the timer lives on
  Reactor::Timer every = *reactor_.Every(milliseconds(1), [&] {
    if (++periodic == 3) every.Reset();  // a timer may drop its own handle
  });
  ASSERT_TRUE(
      RunUntil(reactor_, [&] { return released == 1 && periodic == 3; }));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(reactor_.RunOnce(milliseconds(3)).ok());
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(periodic, 3);
  EXPECT_EQ(reactor_.timer_count(), 0u);
  // The handle of a one-shot timer that already fired cancels nothing else.
  int fired = 0, other = 0;
  absl::StatusOr<Reactor::Timer> once =
      reactor_.At(Clock::now(), [&] { ++fired; });
  ASSERT_TRUE(once.ok());
  ASSERT_TRUE(RunUntil(reactor_, [&] { return fired == 1; }));
  const TimerId other_id =
      reactor_.After(milliseconds(1), [&] { ++other; }).value().Release();
  once->Reset();
  ASSERT_TRUE(RunUntil(reactor_, [&] { return other == 1; }));
  EXPECT_NE(other_id, 0u);
}

TEST_F(ReactorTest, HandleFactoriesRefuseNullCallbacks) {
  SocketPair p(ctx_, "null-handles");
  EXPECT_TRUE(absl::IsInvalidArgument(reactor_.Add(p.a, nullptr).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(reactor_.AddFd(0, nullptr, nullptr).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(reactor_.After(milliseconds(1), {}).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(reactor_.Every(milliseconds(1), {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(reactor_.At(Clock::now(), {}).status()));
  EXPECT_EQ(reactor_.timer_count(), 0u);
}

TEST(ReactorDeathTest, CallFromAnotherThreadAbortsNamingTheMethod) {
#ifdef NDEBUG
  GTEST_SKIP() << "the owner-thread check is compiled out with NDEBUG";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Reactor reactor;
        std::thread other(
            [&] { reactor.After(milliseconds(1), [] {}).value().Release(); });
        other.join();
      },
      "zb::Reactor::After called from a thread that does not own");
  EXPECT_DEATH(
      {
        Reactor reactor;
        std::thread other([&] { (void)reactor.RunOnce(milliseconds(1)); });
        other.join();
      },
      "zb::Reactor::RunOnce called from a thread");
#endif
}

TEST(ReactorThreadingTest, PostAndStopFromAnotherThreadAreAllowed) {
  Reactor reactor;
  int ran = 0;
  std::thread other([&] {
    reactor.Post([&] { ++ran; });
    reactor.Stop();
  });
  other.join();
  EXPECT_TRUE(reactor.Run().ok());  // returns because of the stop
  EXPECT_TRUE(reactor.RunOnce(Clock::duration::zero()).ok());
  EXPECT_EQ(ran, 1);
}

// --- ReactorThread
// ------------------------------------------------------------

TEST(ReactorThreadTest, InvokeRunsOnTheReactorThreadAndReturnsItsValue) {
  ReactorThread thread;
  const std::thread::id id = thread.Invoke([](Reactor& r) {
    EXPECT_TRUE(r.on_owner_thread());
    return std::this_thread::get_id();
  });
  EXPECT_EQ(id, thread.thread_id());
  EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_EQ(thread.Invoke([](Reactor&) { return std::string("forty-two"); }),
            "forty-two");
  int side_effect = 0;
  thread.Invoke([&](Reactor&) { side_effect = 7; });  // void
  EXPECT_EQ(side_effect, 7);
}

TEST(ReactorThreadTest, InvokePropagatesExceptions) {
  ReactorThread thread;
  EXPECT_THROW(thread.Invoke([](Reactor&) -> int {
    throw std::out_of_range("from the reactor thread");
  }),
               std::out_of_range);
  // Still usable afterwards.
  EXPECT_EQ(thread.Invoke([](Reactor&) { return 3; }), 3);
}

TEST(ReactorThreadTest, RunsTimersAndSocketsAndStopsOnDestruction) {
  zmq::context_t ctx;
  zmq::socket_t client(ctx, zmq::socket_type::pair);
  client.set(zmq::sockopt::linger, 0);
  std::atomic<int> ticks{0};
  {
    ReactorThread thread;
    // The server socket is created, used and closed on the reactor thread,
    // and so is its watch.
    struct Echo {
      std::unique_ptr<zmq::socket_t> socket;
      Reactor::SocketWatch watch;
    };
    auto server = thread.Invoke([&](Reactor& r) {
      auto echo = std::make_unique<Echo>();
      echo->socket =
          std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::pair);
      zmq::socket_t* raw = echo->socket.get();
      raw->set(zmq::sockopt::linger, 0);
      raw->bind("inproc://reactor-thread");
      absl::StatusOr<Reactor::SocketWatch> watch =
          r.Add(*raw, [raw](std::span<zmq::message_t> frames) {
            EXPECT_TRUE(SendFrames(*raw, frames).ok());  // echo
          });
      EXPECT_TRUE(watch.ok());
      if (watch.ok()) echo->watch = *std::move(watch);
      // Released: it ticks until the thread and its reactor end.
      r.Every(milliseconds(1), [&] { ++ticks; }).value().Release();
      return echo;
    });
    client.connect("inproc://reactor-thread");
    client.set(zmq::sockopt::rcvtimeo, 10'000);
    Send(client, {"ping", "2"});
    zmq::message_t m;
    ASSERT_TRUE(client.recv(m));
    EXPECT_EQ(View(m), "ping");
    ASSERT_TRUE(client.recv(m));
    EXPECT_EQ(View(m), "2");
    const auto give_up = Clock::now() + kPatience;
    while (ticks < 3 && Clock::now() < give_up)
      std::this_thread::sleep_for(milliseconds(1));
    EXPECT_GE(ticks, 3);
    thread.Invoke([&](Reactor& r) {
      EXPECT_TRUE(r.Remove(*server->socket).ok());
      server.reset();
    });
  }  // joins
  const int seen = ticks;
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(ticks, seen);  // the thread is gone
}

TEST(ReactorThreadTest, StopAndJoinReturnRunStatus) {
  ReactorThread thread;
  thread.Stop();
  EXPECT_TRUE(thread.join().ok());
  EXPECT_TRUE(thread.join().ok());  // idempotent
}

TEST(ReactorThreadTest, InvokeAfterTheThreadEndedThrowsInsteadOfHanging) {
  ReactorThread thread;
  thread.Stop();
  ASSERT_TRUE(thread.join().ok());
  bool ran = false;
  EXPECT_THROW(thread.Invoke([&](Reactor&) { ran = true; }),
               std::runtime_error);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace zb

namespace zb {
namespace {

// A task that holds `token` while it is queued: use_count() tells whether
// the reactor still keeps it.
TEST(ReactorThreadTest, PostAfterTheThreadEndedIsRefusedAndDropped) {
  ReactorThread thread;
  thread.Stop();
  ASSERT_TRUE(thread.join().ok());
  auto token = std::make_shared<int>(0);
  const bool queued = thread.reactor().Post([token] { ++*token; });
  EXPECT_FALSE(queued);
  EXPECT_EQ(token.use_count(), 1) << "the refused task is still held";
  EXPECT_EQ(*token, 0);
}

// stop() while the reactor thread is busy, then invoke() before run() has
// returned: the task lands in the queue after the loop's last look at it.
// It must run or fail, never wait for ever.  Every round is bounded.
TEST(ReactorThreadTest, InvokeRacingWithStopRunsOrThrowsNeverHangs) {
  int ran = 0;
  int stopped = 0;
  for (int round = 0; round < 50; ++round) {
    auto thread = std::make_unique<ReactorThread>();
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::promise<void> busy;
    thread->reactor().Post([released, &busy] {
      busy.set_value();
      released.wait();
    });
    busy.get_future().wait();
    thread->Stop();
    std::promise<void> posted_marker;
    auto caller = std::async(std::launch::async, [&]() -> int {
      try {
        thread->Invoke([](Reactor&) {});
        return 1;
      } catch (const ReactorThread::Stopped& e) {
        EXPECT_THAT(std::string(e.what()), testing::HasSubstr("stopped"));
        return 2;
      }
    });
    // Let the invoke post while the loop is still inside the busy task
    // (half the rounds), or after it (the other half).
    if (round % 2 == 0) std::this_thread::sleep_for(milliseconds(5));
    release.set_value();
    if (caller.wait_for(seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << "invoke() after stop() hung (round " << round << ")";
      thread.reset();  // breaks the promise so that the caller can end
      caller.wait();
      return;
    }
    const int r = caller.get();
    if (r == 1) ++ran;
    if (r == 2) ++stopped;
    thread.reset();
  }
  EXPECT_EQ(ran + stopped, 50);
}

}  // namespace
}  // namespace zb
