// Copyright 2026 The zbrokers Authors.
//
// Driving a Reactor from another event loop: PollFds(), poll_generation()
// and NextWait(), used the way the C ABI's zb_reactor_fd() and an asyncio
// host use them.

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "zbrokers/reactor/reactor.h"

namespace zb {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::Field;

struct Pair {
  zmq::context_t ctx;
  zmq::socket_t a{ctx, zmq::socket_type::pair};
  zmq::socket_t b{ctx, zmq::socket_type::pair};
  Pair() {
    a.set(zmq::sockopt::linger, 0);
    b.set(zmq::sockopt::linger, 0);
    a.bind("inproc://external-loop");
    b.connect("inproc://external-loop");
  }
};

int ZmqFd(zmq::socket_t& s) { return s.get(zmq::sockopt::fd); }

// One step of a host loop: wait on PollFds() for at most NextWait() (or
// `cap`), then RunOnce(0).  Returns whether a descriptor woke it.
bool HostStep(Reactor& r, std::chrono::milliseconds cap) {
  std::vector<pollfd> fds = r.PollFds();
  const Reactor::Clock::duration wait = r.NextWait();
  const auto ms =
      wait == Reactor::Clock::duration::max()
          ? cap
          : std::min(cap, std::chrono::ceil<std::chrono::milliseconds>(wait));
  const int n = ::poll(fds.data(), fds.size(), static_cast<int>(ms.count()));
  EXPECT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  return n > 0;
}

TEST(ExternalLoopTest, PollFdsListsWhatRunOnceWaitsOn) {
  Pair p;
  Reactor r;
  std::vector<pollfd> fds = r.PollFds();
  ASSERT_EQ(fds.size(), 1u);  // the wake-up eventfd
  EXPECT_EQ(fds[0].events, POLLIN);
  const std::uint64_t g0 = r.poll_generation();

  absl::StatusOr<Reactor::SocketWatch> watch =
      r.Add(p.b, [](std::span<zmq::message_t>) {});
  ASSERT_TRUE(watch.ok());
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  absl::StatusOr<Reactor::SocketWatch> fd_watch = r.AddFd(efd, nullptr, [] {});
  ASSERT_TRUE(fd_watch.ok());
  fds = r.PollFds();
  ASSERT_EQ(fds.size(), 3u);
  EXPECT_THAT(fds, Contains(AllOf(Field(&pollfd::fd, ZmqFd(p.b)),
                                  Field(&pollfd::events, POLLIN))));
  EXPECT_THAT(fds, Contains(AllOf(Field(&pollfd::fd, efd),
                                  Field(&pollfd::events, POLLOUT))));
  // The registrations changed: RunOnce() must rebuild before the host
  // waits, so NextWait() says "now"; afterwards the generation moved.
  EXPECT_EQ(r.NextWait(), Reactor::Clock::duration::zero());
  ASSERT_TRUE(r.RemoveFd(efd).ok());
  ASSERT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  EXPECT_NE(r.poll_generation(), g0);
  EXPECT_EQ(r.PollFds().size(), 2u);
  ::close(efd);
}

TEST(ExternalLoopTest, NextWaitIsTheTimeToTheNextTimerOrForever) {
  Reactor r;
  ASSERT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  EXPECT_EQ(r.NextWait(), Reactor::Clock::duration::max());
  absl::StatusOr<Reactor::Timer> timer = r.After(10s, [] {});
  ASSERT_TRUE(timer.ok());
  const Reactor::Clock::duration wait = r.NextWait();
  EXPECT_GT(wait, 9s);
  EXPECT_LE(wait, 10s);
  r.Post([] {});
  EXPECT_EQ(r.NextWait(), Reactor::Clock::duration::zero());
  ASSERT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  EXPECT_GT(r.NextWait(), 9s);
}

// The reason NextWait() reads ZMQ_EVENTS: after a send on the socket
// (which processes its pending commands), a message already queued no
// longer wakes its ZMQ_FD.  A host that only waited on the descriptor
// would sleep with the message unread.
TEST(ExternalLoopTest, QueuedMessageWhoseSignalASendConsumedIsStillSeen) {
  Pair p;
  Reactor r;
  std::vector<std::string> got;
  absl::StatusOr<Reactor::SocketWatch> watch =
      r.Add(p.b, [&](std::span<zmq::message_t> frames) {
        got.push_back(frames[0].to_string());
      });
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  ASSERT_EQ(r.NextWait(), Reactor::Clock::duration::max());

  ASSERT_TRUE(p.a.send(zmq::str_buffer("queued"), zmq::send_flags::none));
  // Wait for the arrival on the ZMQ_FD, then let a send eat the signal.
  pollfd fd{ZmqFd(p.b), POLLIN, 0};
  ASSERT_EQ(::poll(&fd, 1, 5000), 1);
  ASSERT_TRUE(p.b.send(zmq::str_buffer("reply"), zmq::send_flags::none));
  fd.revents = 0;
  EXPECT_EQ(::poll(&fd, 1, 100), 0) << "the ZMQ_FD still signals";
  EXPECT_TRUE(got.empty());
  // NextWait() knows better.
  EXPECT_EQ(r.NextWait(), Reactor::Clock::duration::zero());
  ASSERT_TRUE(r.RunOnce(Reactor::Clock::duration::zero()).ok());
  EXPECT_EQ(got, std::vector<std::string>{"queued"});
}

// A host loop built on the three calls delivers messages and timers, and
// sleeps in between: one wake-up per event, not a spin.
TEST(ExternalLoopTest, HostLoopDeliversWithoutSpinning) {
  Pair p;
  Reactor r;
  int messages = 0;
  bool fired = false;
  absl::StatusOr<Reactor::SocketWatch> watch =
      r.Add(p.b, [&](std::span<zmq::message_t>) { ++messages; });
  ASSERT_TRUE(watch.ok());
  absl::StatusOr<Reactor::Timer> timer = r.After(200ms, [&] { fired = true; });
  ASSERT_TRUE(timer.ok());
  int steps = 0;
  while (!fired && steps < 50) {
    HostStep(r, 5000ms);
    ++steps;
  }
  EXPECT_TRUE(fired);
  // One step to rebuild the poll set, one that sleeps until the timer (a
  // slow machine may need one more).
  EXPECT_LE(steps, 4);

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(p.a.send(zmq::str_buffer("m"), zmq::send_flags::none));
  }
  steps = 0;
  while (messages < 3 && steps < 50) {
    HostStep(r, 5000ms);
    ++steps;
  }
  EXPECT_EQ(messages, 3);
  EXPECT_LE(steps, 4);
  // Nothing left: the next wait is unbounded.
  EXPECT_EQ(r.NextWait(), Reactor::Clock::duration::max());
}

}  // namespace
}  // namespace zb
