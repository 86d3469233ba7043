// Copyright 2026 The zbrokers Authors.
//
// zb::Reactor against hand-written loops doing the same work, in one binary.
//
//   Post               post() throughput from another thread (the reactor
//                      thread runs every task; ns per task).
//   Wakeup/*           a reactor blocked in poll: time from post() on this
//                      thread until the task runs on the reactor thread;
//                      HandWritten is a thread blocked in zmq_poll on an
//                      eventfd, woken by a write (the floor for any design).
//   PingPong/*         one message in flight between a DEALER on this
//                      thread and a ROUTER echo on another thread, over
//                      inproc and tcp loopback.  The echo side is either a
//                      zb::Reactor (ReactorThread) or a hand-written zmq_poll
//                      loop over the same poll set (the wake-up eventfd and
//                      the ROUTER) that drains the ROUTER into reused
//                      messages until EAGAIN and sends each one back.
//   PingPongSameThread/*/N  the same echo with both sockets on this thread:
//                      send, one poll iteration (Reactor::RunOnce(0) or
//                      zmq_poll(..., 0) plus draining), receive.  Without
//                      cross-thread wake-ups the loop's own overhead shows.
//                      N more sockets are registered and never ready (a
//                      worker thread holding many sessions, one of them
//                      busy): what the poll set's size costs each iteration.
//
// The Reactor/HandWritten pairs are meant to be compared as a ratio of
// medians over alternating repetitions; bench/ratio.py runs that.

#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/reactor/reactor_thread.h"

namespace zb {
namespace {

using Clock = std::chrono::steady_clock;

zmq::context_t& Context() {
  static zmq::context_t ctx;
  return ctx;
}

// An eventfd owned by RAII.
class EventFd {
 public:
  EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventFd() { ::close(fd_); }
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int fd() const { return fd_; }
  void Signal() {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
  }
  void Drain() {
    std::uint64_t v;
    [[maybe_unused]] ssize_t n = ::read(fd_, &v, sizeof v);
  }

 private:
  int fd_;
};

// --- post throughput
// -----------------------------------------------------------

void BM_Post(benchmark::State& state) {
  ReactorThread thread;
  // Written only by the reactor thread; read here to bound the backlog.
  std::atomic<std::int64_t> ran{0};
  std::int64_t posted = 0;
  for (auto _ : state) {
    thread.reactor().Post([&ran] {
      ran.store(ran.load(std::memory_order_relaxed) + 1,
                std::memory_order_release);
    });
    // Keep at most ~64k tasks queued so the measurement is the sustained
    // rate, not how fast a vector grows.  The wait is part of the time.
    if ((++posted & 0xffff) == 0) {
      while (posted - ran.load(std::memory_order_acquire) > 0x10000) {
        std::this_thread::yield();
      }
    }
  }
  // Every task has run before the clock stops.
  while (ran.load(std::memory_order_acquire) != posted) {
    std::this_thread::yield();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Post)->UseRealTime();

// --- wake-up latency
// --------------------------------------------------------------

// Long enough for the other thread to be blocked in poll again.
constexpr auto kIdleGap = std::chrono::microseconds(200);

void BM_Wakeup_Reactor(benchmark::State& state) {
  ReactorThread thread;
  std::atomic<std::int64_t> ran_at{0};
  for (auto _ : state) {
    std::this_thread::sleep_for(kIdleGap);
    ran_at.store(0, std::memory_order_relaxed);
    const auto t0 = Clock::now();
    thread.reactor().Post([&ran_at] {
      ran_at.store(Clock::now().time_since_epoch().count(),
                   std::memory_order_release);
    });
    std::int64_t t1;
    while ((t1 = ran_at.load(std::memory_order_acquire)) == 0) {
    }
    state.SetIterationTime(std::chrono::duration<double>(
                               Clock::time_point(Clock::duration(t1)) - t0)
                               .count());
  }
}
BENCHMARK(BM_Wakeup_Reactor)->UseManualTime()->Iterations(3000);

void BM_Wakeup_HandWritten(benchmark::State& state) {
  EventFd wake, quit;
  std::atomic<std::int64_t> ran_at{0};
  // Started the way ReactorThread starts (see BM_PingPong_HandWritten).
  std::promise<void> ready;
  std::future<void> started = ready.get_future();
  std::thread loop([&] {
    zmq_pollitem_t items[2] = {{nullptr, quit.fd(), ZMQ_POLLIN, 0},
                               {nullptr, wake.fd(), ZMQ_POLLIN, 0}};
    ready.set_value();
    for (;;) {
      if (zmq_poll(items, 2, -1) < 0) continue;
      if (items[0].revents) return;
      if (items[1].revents) {
        wake.Drain();
        ran_at.store(Clock::now().time_since_epoch().count(),
                     std::memory_order_release);
      }
    }
  });
  started.wait();
  for (auto _ : state) {
    std::this_thread::sleep_for(kIdleGap);
    ran_at.store(0, std::memory_order_relaxed);
    const auto t0 = Clock::now();
    wake.Signal();
    std::int64_t t1;
    while ((t1 = ran_at.load(std::memory_order_acquire)) == 0) {
    }
    state.SetIterationTime(std::chrono::duration<double>(
                               Clock::time_point(Clock::duration(t1)) - t0)
                               .count());
  }
  quit.Signal();
  loop.join();
}
BENCHMARK(BM_Wakeup_HandWritten)->UseManualTime()->Iterations(3000);

// --- ping-pong
// ------------------------------------------------------------------------

// The echo server's work, shared by the hand-written loops: drain the ROUTER
// into reused messages until EAGAIN, sending each multipart message back.
class HandWrittenEcho {
 public:
  explicit HandWrittenEcho(zmq::socket_t& router) : router_(router) {
    frames_.resize(4);
  }

  // Returns false on a receive error other than EAGAIN.
  bool Drain() {
    void* s = router_.handle();
    for (;;) {
      std::size_t n = 0;
      for (;;) {
        if (n == frames_.size()) frames_.emplace_back();
        zmq_msg_t* m = frames_[n].handle();
        if (zmq_msg_recv(m, s, ZMQ_DONTWAIT) < 0) return errno == EAGAIN;
        ++n;
        if (!zmq_msg_more(m)) break;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const int flags = ZMQ_DONTWAIT | (i + 1 < n ? ZMQ_SNDMORE : 0);
        if (zmq_msg_send(frames_[i].handle(), s, flags) < 0) ++send_errors_;
      }
    }
  }

  std::int64_t send_errors() const { return send_errors_; }

 private:
  zmq::socket_t& router_;
  std::vector<zmq::message_t> frames_;
  std::int64_t send_errors_ = 0;
};

zmq::socket_t BindRouter(const std::string& where, std::string* endpoint) {
  zmq::socket_t router(Context(), zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind(where);
  *endpoint = router.get(zmq::sockopt::last_endpoint);
  return router;
}

std::string BindAddress(int transport, int instance) {
  return transport == 0 ? "inproc://pingpong-" + std::to_string(instance)
                        : std::string("tcp://127.0.0.1:*");
}

// CPU time consumed so far by the thread whose CPU clock is `clock`.
std::int64_t ThreadCpuNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

clockid_t MyCpuClock() {
  clockid_t clock;
  pthread_getcpuclockid(pthread_self(), &clock);
  return clock;
}

// The measuring side: one message out, wait for it to come back.  Also
// reports echo_cpu_ns: CPU time the echo thread spent per round trip, which
// (unlike wall time) hardly depends on what else the machine is running.
void PingPong(benchmark::State& state, const std::string& endpoint,
              clockid_t echo_clock) {
  zmq::socket_t dealer(Context(), zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  zmq::message_t reply;
  // Warm up the connection (tcp handshake) outside the timed loop.
  for (int i = 0; i < 100; ++i) {
    dealer.send(zmq::str_buffer("warm"), zmq::send_flags::none);
    (void)dealer.recv(reply);
  }
  const std::int64_t echo_cpu_start = ThreadCpuNs(echo_clock);
  for (auto _ : state) {
    dealer.send(zmq::str_buffer("ping"), zmq::send_flags::none);
    if (!dealer.recv(reply)) {
      state.SkipWithError("recv failed");
      break;
    }
  }
  state.counters["echo_cpu_ns"] = benchmark::Counter(
      static_cast<double>(ThreadCpuNs(echo_clock) - echo_cpu_start),
      benchmark::Counter::kAvgIterations);
  if (reply.to_string_view() != "ping") state.SkipWithError("bad echo");
}

int NextInstance() {
  static int instance = 0;
  return ++instance;
}

void BM_PingPong_Reactor(benchmark::State& state) {
  const int transport = static_cast<int>(state.range(0));
  ReactorThread thread;
  std::int64_t send_errors = 0;
  std::string endpoint;
  Reactor::SocketWatch watch;  // set and reset on the reactor thread
  auto router = thread.Invoke([&](Reactor& r) {
    auto s = std::make_unique<zmq::socket_t>(
        BindRouter(BindAddress(transport, NextInstance()), &endpoint));
    zmq::socket_t* raw = s.get();
    absl::StatusOr<Reactor::SocketWatch> w =
        r.Add(*s, [raw, &send_errors](std::span<zmq::message_t> m) {
          if (!SendFrames(*raw, m).ok()) ++send_errors;
        });
    if (!w.ok()) std::abort();
    watch = *std::move(w);
    return s;
  });
  PingPong(state, endpoint,
           thread.Invoke([](Reactor&) { return MyCpuClock(); }));
  thread.Invoke([&](Reactor&) {
    watch.Reset();
    router.reset();
  });
  if (send_errors) state.SkipWithError("echo send failed");
}

void BM_PingPong_HandWritten(benchmark::State& state) {
  const int transport = static_cast<int>(state.range(0));
  EventFd quit;
  // Started like ReactorThread starts its thread (the caller blocks on a
  // future until the loop is ready), so the scheduler sees the same pattern
  // and places the two threads the same way in both variants.
  std::promise<std::string> ready;
  std::future<std::string> endpoint = ready.get_future();
  std::int64_t send_errors = 0;
  std::thread loop([&] {
    std::string bound;
    zmq::socket_t router =
        BindRouter(BindAddress(transport, NextInstance()), &bound);
    ready.set_value(bound);
    HandWrittenEcho echo(router);
    zmq_pollitem_t items[2] = {{nullptr, quit.fd(), ZMQ_POLLIN, 0},
                               {router.handle(), -1, ZMQ_POLLIN, 0}};
    for (;;) {
      if (zmq_poll(items, 2, -1) < 0) break;
      if (items[0].revents) break;
      if (items[1].revents && !echo.Drain()) break;
    }
    send_errors = echo.send_errors();
  });
  const std::string bound = endpoint.get();
  clockid_t echo_clock;
  pthread_getcpuclockid(loop.native_handle(), &echo_clock);
  PingPong(state, bound, echo_clock);
  quit.Signal();
  loop.join();
  if (send_errors) state.SkipWithError("echo send failed");
}

// Alternating registration; arg 0 = inproc, 1 = tcp loopback.
BENCHMARK(BM_PingPong_Reactor)->Arg(0)->UseRealTime();
BENCHMARK(BM_PingPong_HandWritten)->Arg(0)->UseRealTime();
BENCHMARK(BM_PingPong_Reactor)->Arg(1)->UseRealTime();
BENCHMARK(BM_PingPong_HandWritten)->Arg(1)->UseRealTime();

// --- ping-pong on one thread
// ------------------------------------------------------

struct SameThreadPair {
  SameThreadPair() {
    std::string endpoint;
    router = BindRouter(
        "inproc://same-thread-" + std::to_string(NextInstance()), &endpoint);
    dealer = zmq::socket_t(Context(), zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(endpoint);
  }
  zmq::socket_t router;
  zmq::socket_t dealer;
};

// `count` sockets that never have anything to read: DEALERs connected to
// nobody.
std::vector<zmq::socket_t> IdleSockets(std::int64_t count) {
  std::vector<zmq::socket_t> idle;
  for (std::int64_t i = 0; i < count; ++i) {
    idle.emplace_back(Context(), zmq::socket_type::dealer);
    idle.back().set(zmq::sockopt::linger, 0);
  }
  return idle;
}

void BM_PingPongSameThread_Reactor(benchmark::State& state) {
  SameThreadPair p;
  Reactor reactor;
  std::int64_t send_errors = 0;
  zmq::socket_t& router = p.router;
  std::vector<zmq::socket_t> idle = IdleSockets(state.range(0));
  std::vector<Reactor::SocketWatch> idle_watches;
  for (zmq::socket_t& s : idle) {
    absl::StatusOr<Reactor::SocketWatch> w =
        reactor.Add(s, [](std::span<zmq::message_t>) {});
    if (!w.ok()) {
      state.SkipWithError("Add failed");
      return;
    }
    idle_watches.push_back(*std::move(w));
  }
  absl::StatusOr<Reactor::SocketWatch> watch =
      reactor.Add(router, [&router, &send_errors](std::span<zmq::message_t> m) {
        if (!SendFrames(router, m).ok()) ++send_errors;
      });
  if (!watch.ok()) {
    state.SkipWithError("Add failed");
    return;
  }
  zmq::message_t reply;
  for (auto _ : state) {
    p.dealer.send(zmq::str_buffer("ping"), zmq::send_flags::none);
    benchmark::DoNotOptimize(reactor.RunOnce(Reactor::Clock::duration::zero()));
    if (!p.dealer.recv(reply, zmq::recv_flags::dontwait)) {
      state.SkipWithError("no echo");
      break;
    }
  }
  watch->Reset();
  idle_watches.clear();
  if (send_errors) state.SkipWithError("echo send failed");
}

void BM_PingPongSameThread_HandWritten(benchmark::State& state) {
  SameThreadPair p;
  EventFd wake;  // polled like the reactor's, never signalled
  HandWrittenEcho echo(p.router);
  std::vector<zmq::socket_t> idle = IdleSockets(state.range(0));
  // The same order as the reactor's: the eventfd, the idle sockets, the
  // ROUTER last.
  std::vector<zmq_pollitem_t> items = {{nullptr, wake.fd(), ZMQ_POLLIN, 0}};
  for (zmq::socket_t& s : idle) {
    items.push_back({s.handle(), -1, ZMQ_POLLIN, 0});
  }
  items.push_back({p.router.handle(), -1, ZMQ_POLLIN, 0});
  const int n = static_cast<int>(items.size());
  zmq::message_t reply;
  for (auto _ : state) {
    p.dealer.send(zmq::str_buffer("ping"), zmq::send_flags::none);
    if (zmq_poll(items.data(), n, 0) > 0 && items[n - 1].revents) echo.Drain();
    if (!p.dealer.recv(reply, zmq::recv_flags::dontwait)) {
      state.SkipWithError("no echo");
      break;
    }
  }
  if (echo.send_errors()) state.SkipWithError("echo send failed");
}

BENCHMARK(BM_PingPongSameThread_Reactor)->Arg(0)->Arg(64)->Arg(256);
BENCHMARK(BM_PingPongSameThread_HandWritten)->Arg(0)->Arg(64)->Arg(256);

}  // namespace
}  // namespace zb

BENCHMARK_MAIN();
