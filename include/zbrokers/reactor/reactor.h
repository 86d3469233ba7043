// Copyright 2026 The zbrokers Authors.
//
// zb::Reactor is a single-threaded event loop over ZeroMQ sockets, raw file
// descriptors, timers and a cross-thread task queue.
//
//   zmq::context_t ctx;
//   zb::Reactor reactor;
//   zmq::socket_t router(ctx, zmq::socket_type::router);
//   router.bind("tcp://127.0.0.1:5556");
//   zb::Reactor::SocketWatch watch =
//       *reactor.Add(router, [&](std::span<zmq::message_t> frames) {
//         // frames[0] is the peer identity; move frames out to forward them
//         // without copying.
//       });
//   zb::Reactor::Timer sweep =
//       *reactor.Every(std::chrono::seconds(1), [] { /* heartbeat sweep */ });
//   reactor.Run();  // until reactor.Stop() (from any thread)
//
// Threading.  A Reactor belongs to the thread that constructed it, its
// *owner*.  Only Post() and Stop() may be called from other threads; every
// other method must be called on the owner thread (checked in builds without
// NDEBUG: a call from another thread aborts with a message naming the method).
// To run a reactor on a thread of its own, use zb::ReactorThread
// (reactor_thread.h), which constructs the reactor on that thread.
//
// Ownership.  The reactor does not own the sockets or file descriptors it
// watches; the caller keeps them alive while they are registered.  The
// reactor owns the callbacks.  Registrations clean up after themselves:
// Add()/AddFd() return a move-only Reactor::SocketWatch that removes the
// watch when destroyed, and After()/Every()/At() a move-only Reactor::Timer
// that cancels the timer when destroyed, so an owner that holds them as
// members pairs nothing by hand.  A handle must be destroyed (or released)
// on the owner thread and before the reactor.  That is the one way to
// register; a caller that truly wants a plain timer id (the C binding,
// whose timers are named by id) takes it with Timer::Release() and may
// later Cancel() it.
//
// Sockets.  A readable socket is drained in batches: on each wake-up its
// handler is called once per multipart message, until the socket has nothing
// more (EAGAIN) or the batch cap is reached, so one poll call serves many
// messages.  The frames are received into a buffer that the reactor reuses
// for every message; a handler may move frames out of the span (a moved-from
// zmq::message_t is empty) but must not keep the span itself.  Frames it
// leaves there are released when the next message is received into their
// slot, and at the end of each batch when they are larger than 4 KiB, so an
// idle reactor does not keep a large message alive.
//
// Timers.  Timers live in a zb::TimerQueue (timer_queue.h, which spells out
// every rule): a std::vector sorted by deadline, latest first, so the
// earliest deadline sits at the back where popping is cheap; inserts use
// binary search.  Timers with equal deadlines fire in the order they were
// added.  Deadlines come from std::chrono::steady_clock, so a wall-clock jump
// never reorders or stalls timers.  A periodic timer is re-armed from its
// previous deadline (no drift); when the loop was late by one or more whole
// periods those periods are skipped: the timer fires once and its next
// deadline is the first one on its original grid that lies in the future.
// A timer callback may add or cancel any timer, itself included; a cancelled
// timer never fires; a timer added while timers fire (even one already due)
// fires in the next round at the earliest, and one whose deadline has
// passed also waits behind the timers that were already due.
//
// Re-entrancy.  Run() and RunOnce() must not be called from inside one of
// the reactor's own callbacks (a handler, timer or posted task): a nested
// iteration would rebuild the poll set under the outer one and receive into
// the frame buffer whose span the outer handler is still reading.  Such a
// call is refused with FailedPrecondition, in every build; it costs one bool.
//
// Errors.  Registration errors come back as absl::Status; so do null
// callbacks (Add() without a message handler, AddFd() without any handler,
// After()/Every()/At() with an empty callback), which are refused at once
// rather than called later.  An exception thrown
// by any callback is passed to the error handler (by default it is printed on
// stderr) and the loop carries on in a consistent state.

#ifndef ZBROKERS_REACTOR_REACTOR_H_
#define ZBROKERS_REACTOR_REACTOR_H_

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zbrokers/reactor/idle_yield.h"
#include "zbrokers/reactor/timer_queue.h"

namespace zb {

// zb::TimerId (zbrokers/reactor/timer_queue.h) is a timer's identity, returned
// by Timer::Release() and passed to Cancel(); 0 is never a valid id, and a
// fired or cancelled timer's id is not handed out again (until 2^32 later
// timers have used its slot).

class Reactor {
 public:
  using Clock = std::chrono::steady_clock;

  // Called once per received multipart message.  The span stays valid only
  // during the call.
  using MessageHandler = absl::AnyInvocable<void(std::span<zmq::message_t>)>;
  // Called when a socket can be written to, or a file descriptor is ready.
  using ReadyHandler = absl::AnyInvocable<void()>;
  using Callback = absl::AnyInvocable<void()>;
  using Task = absl::AnyInvocable<void() &&>;
  // Receives every exception thrown by a callback.  `where` names the kind of
  // callback ("timer", "socket", "fd", "post").
  using ErrorHandler =
      absl::AnyInvocable<void(std::exception_ptr, std::string_view where)>;

  struct Options {
    // The most messages handed to one socket's handler per wake-up before the
    // loop moves on to the other sockets (fairness bound).
    int batch_cap = 256;
    // Before going to sleep after doing some work, yield the CPU once to
    // other runnable threads and look at the sockets again, as long as
    // such yields keep finding batches of messages (zb::IdleYield,
    // idle_yield.h, has the rule).  Off by default.  Turn it on for a
    // reactor whose producers are threads of the same process on the same
    // core (inproc), where it saves most wake-ups; over tcp/ipc, where
    // libzmq's I/O thread sits between them, it costs more switches than
    // it saves (docs/reactor.md, "Yield before sleep", has the numbers).
    bool yield_before_sleep = false;
    // While Run() runs, the thread that runs it is under Linux's SCHED_BATCH
    // policy (zb::BatchScheduling, batch_scheduling.h): its wake-ups do not
    // preempt the thread running on its core, so messages that arrive while
    // a peer on the same core is working are taken together once it blocks.
    // Off by default, because it changes the calling thread's scheduling
    // (it is restored when Run() returns; RunOnce() does not apply it).
    // zb-broker turns it on for its brokers' threads: over tcp and inproc
    // it cuts a fan-out's wake-ups by 10-25x on a shared core, and changes
    // nothing on an idle one (docs/reactor.md, "Batch scheduling").
    bool batch_scheduling = false;
  };

  Reactor();
  explicit Reactor(Options options);
  ~Reactor();

  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // A socket or fd registration that removes itself when destroyed.
  // Move-only; a default-constructed or moved-from handle owns nothing.
  // Destroying it (or assigning over it) is exactly Remove(): safe inside
  // any handler, including the watched socket's own.
  class SocketWatch {
   public:
    SocketWatch() = default;
    SocketWatch(SocketWatch&& other) noexcept { *this = std::move(other); }
    SocketWatch& operator=(SocketWatch&& other) noexcept;
    ~SocketWatch() { Reset(); }
    SocketWatch(const SocketWatch&) = delete;
    SocketWatch& operator=(const SocketWatch&) = delete;

    // True while this handle owns a registration.
    explicit operator bool() const { return reactor_ != nullptr; }
    // Removes the watch now (no-op when it owns nothing).
    void Reset();

   private:
    friend class Reactor;
    SocketWatch(Reactor* reactor, std::uint64_t id)
        : reactor_(reactor), id_(id) {}
    Reactor* reactor_ = nullptr;
    std::uint64_t id_ = 0;
  };

  // A timer that is cancelled when its handle is destroyed.  Move-only; a
  // default-constructed or moved-from handle owns nothing.  Destroying the
  // handle of a one-shot timer that already fired does nothing.
  class Timer {
   public:
    Timer() = default;
    Timer(Timer&& other) noexcept { *this = std::move(other); }
    Timer& operator=(Timer&& other) noexcept;
    ~Timer() { Reset(); }
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    explicit operator bool() const { return reactor_ != nullptr; }
    // Cancels the timer now (no-op when it owns nothing).
    void Reset();
    // Gives the timer up without cancelling it and returns its plain id
    // (0 when the handle owned nothing): the timer then lives until it
    // fires (one-shot), Cancel(id), or the reactor goes.
    TimerId Release();

   private:
    friend class Reactor;
    Timer(Reactor* reactor, TimerId id) : reactor_(reactor), id_(id) {}
    Reactor* reactor_ = nullptr;
    TimerId id_ = 0;
  };

  // --- Sockets and file descriptors (owner thread only) --------------------
  //
  // Every registration comes back as a handle that ends it when destroyed;
  // there is no other way to register.  The caller keeps the socket or fd
  // open while the handle lives (declare the handle after it).

  // Watches `socket` (a non-owning zmq::socket_ref; a zmq::socket_t converts
  // to one).  `on_message` is called for every multipart message;
  // `on_writable`, when given, whenever the socket can take a message.
  // Fails with InvalidArgument for a closed socket, an empty `on_message`
  // and thread-safe socket types (ZMQ_CLIENT, ZMQ_SERVER, ...), which have
  // no ZMQ_FD to poll, and with AlreadyExists when the socket is already
  // registered.
  absl::StatusOr<SocketWatch> Add(zmq::socket_ref socket,
                                  MessageHandler on_message,
                                  ReadyHandler on_writable = nullptr);
  // Watches a raw file descriptor (level-triggered).  At least one handler.
  // A hang-up or error on the fd (POLLHUP/POLLERR) is delivered to
  // `on_readable` (to `on_writable` when there is no readable handler), so
  // that its read() or write() sees the EOF or the error; the handler should
  // then reset the watch, or it is called again on every iteration.
  absl::StatusOr<SocketWatch> AddFd(int fd, ReadyHandler on_readable,
                                    ReadyHandler on_writable = nullptr);
  // Stops watching a socket or fd without its handle (the handle then owns
  // nothing that it can remove; resetting it is harmless).  Safe inside any
  // handler, including the socket's own: a removed socket's handlers are
  // never called again, even later in the same round.  Fails with NotFound
  // when it is not registered.
  absl::Status Remove(zmq::socket_ref socket);
  absl::Status RemoveFd(int fd);

  // --- Timers (owner thread only) -------------------------------------------
  //
  // The only failure is InvalidArgument for an empty `cb` (nothing is
  // scheduled), so a caller that passes a lambda may dereference the result
  // directly: `timer_ = *reactor.After(d, [this] { ... });`.  A caller that
  // really wants a plain id (the C binding, whose timers are named by id)
  // takes it with Timer::Release() and may later Cancel() it.

  // Calls `cb` once, `delay` from now.
  absl::StatusOr<Timer> After(Clock::duration delay, Callback cb);
  // Calls `cb` every `period` (> 0), first `period` from now.
  absl::StatusOr<Timer> Every(Clock::duration period, Callback cb);
  // Calls `cb` once at `deadline`; a deadline in the past fires on the next
  // loop iteration.
  absl::StatusOr<Timer> At(Clock::time_point deadline, Callback cb);
  // Cancels a released timer by its id.  Returns false when `id` is
  // unknown, already fired (for a one-shot timer) or already cancelled.
  bool Cancel(TimerId id);
  // Number of live timers.
  std::size_t timer_count() const { return timers_.size(); }

  // --- Running (owner thread only) -----------------------------------------

  // Runs until Stop().  Returns a non-OK status when polling fails (e.g. the
  // ZeroMQ context was terminated), and FailedPrecondition at once when
  // called from inside one of this reactor's callbacks (see Re-entrancy).
  absl::Status Run();
  // Waits at most `max_wait` for something to happen, handles everything that
  // is ready, and returns.  Returns the number of callbacks it ran, or
  // FailedPrecondition (nothing done) when called from inside one of this
  // reactor's callbacks.
  absl::StatusOr<int> RunOnce(Clock::duration max_wait);
  // True while Run() or RunOnce() is on the stack, i.e. when called from
  // one of this reactor's callbacks.  Owner thread only.
  bool in_callback() const { return running_; }

  // --- Driving it from another event loop (owner thread only) -------------
  //
  // For hosts with a loop of their own (asyncio, libuv, glib): instead of
  // Run(), wait until one of PollFds() is ready or NextWait() has passed,
  // call RunOnce(zero), and ask again.  The C ABI's zb_reactor_fd() builds
  // one epoll descriptor from these.

  // The descriptors RunOnce() waits on: the wake-up eventfd (post, stop),
  // every watched socket's ZMQ_FD (POLLIN: it only says "read ZMQ_EVENTS
  // again", for reading and writing alike) and every raw fd with the events
  // it was registered for.
  std::vector<pollfd> PollFds() const;
  // Changes whenever RunOnce() rebuilds its poll set after an add or a
  // remove, so that a host knows to take PollFds() again (a closed fd's
  // number may come back for another socket).
  std::uint64_t poll_generation() const { return poll_generation_; }
  // How long the host may wait on PollFds() before calling RunOnce():
  // zero when there is work already (a socket has a message, or room for
  // its writable handler; a post or stop is pending; a timer is due; the
  // registrations changed), else the time to the earliest timer, and
  // Clock::duration::max() when only a descriptor can wake the reactor.  It
  // reads every socket's ZMQ_EVENTS, which is what makes waiting on the
  // edge-triggered ZMQ_FDs safe: a ZMQ_FD signals new activity only, so a
  // message already queued (for instance one whose signal a send consumed)
  // would never wake the host otherwise.
  Clock::duration NextWait();

  // --- Any thread ----------------------------------------------------------

  // Runs `task` on the reactor thread at the start of the next iteration.
  // Tasks posted by one thread run in the order they were posted.  Wakes a
  // reactor that is blocked in poll at once.  Returns true when the task was
  // queued; false, with the task destroyed at once on the calling thread,
  // when it is empty or the queue was closed (ClosePostQueue(): a
  // zb::ReactorThread whose loop has ended).  A task still queued when the
  // reactor is destroyed is destroyed unrun.
  bool Post(Task task);
  // Makes Run() return after the current iteration.  Wakes a blocked reactor.
  // A Stop() that arrives while Run() is not running makes the next Run()
  // return at once.
  void Stop();

  // Ends cross-thread work for good (owner thread only, once the loop will
  // not run again): destroys every queued task unrun, here, and makes every
  // later Post() refuse its task.  zb::ReactorThread calls it when its loop
  // has ended, so that nothing waits for a task that can never run (a task
  // that owns a promise breaks it when destroyed).
  void ClosePostQueue();

  // Replaces the error handler (owner thread only).
  void SetErrorHandler(ErrorHandler handler);

  // How often the reactor yielded before sleeping, and how many of those
  // yields found a batch of messages waiting (Options::yield_before_sleep).
  // Owner thread only.
  const IdleYield::Stats& idle_yield_stats() const {
    return idle_yield_.stats();
  }

  // What Options::batch_scheduling did to the thread of the current (or
  // last) Run(): OK when it runs as a batch thread, or when the option is
  // off; otherwise why it does not (BatchScheduling::status()).  Owner
  // thread only.
  const absl::Status& batch_scheduling_status() const {
    return batch_scheduling_status_;
  }

  // True when called on the reactor's owner thread.
  bool on_owner_thread() const { return std::this_thread::get_id() == owner_; }

 private:
  struct Watch;

  void CheckThread(const char* method) const;
  // Add()/AddFd() before the handle: the new watch's id.
  absl::StatusOr<std::uint64_t> AddSocketWatch(zmq::socket_ref socket,
                                               MessageHandler on_message,
                                               ReadyHandler on_writable);
  absl::StatusOr<std::uint64_t> AddFdWatch(int fd, ReadyHandler on_readable,
                                           ReadyHandler on_writable);
  // After()/Every()/At() before the handle; `method` names the caller in
  // the thread check and in the empty-callback error.
  absl::StatusOr<TimerId> AddTimer(const char* method,
                                   Clock::time_point deadline,
                                   Clock::duration period, Callback cb);
  void RemoveWatch(std::uint64_t id);  // a SocketWatch's destructor
  absl::StatusOr<int> iterate(Clock::duration max_wait);  // RunOnce, unchecked
  int FireDueTimers();
  // ZMQ_EVENTS of every watched socket into ready_; how many are ready.
  absl::StatusOr<int> CheckSockets();
  // poll()'s timeout in ms (-1: none) for `ready` sockets, the timers and
  // `max_wait`.
  int SleepTimeoutMs(int ready, Clock::duration max_wait) const;
  int RunPosted();
  int DispatchSocket(Watch& w);
  // Frames larger than this that a handler left in frames_ are released at
  // the end of each batch rather than kept until the next receive.
  static constexpr std::size_t kKeptFrameBytes = 4096;
  void ReleaseLargeFrames(std::size_t n);
  void RebuildPollItems();
  void Report(std::exception_ptr e, std::string_view where);

  const Options options_;
  const std::thread::id owner_;

  // Registered sockets/fds.  unique_ptr keeps each Watch at a stable address
  // while handlers run and may add or remove others.
  std::vector<std::unique_ptr<Watch>> watches_;
  std::uint64_t next_watch_id_ = 1;  // SocketWatch identities; 0 is none
  std::vector<pollfd> pollfds_;      // [0] is the wake-up eventfd
  std::vector<Watch*> poll_owners_;  // parallel to pollfds_[1..]
  // What CheckSockets() reads of each watch, parallel to poll_owners_ and
  // packed four to a cache line: it runs over every socket before each
  // sleep, and a Watch of its own is only touched once its socket or fd
  // has something for it.  With hundreds of sockets on one reactor the
  // scattered Watch objects would otherwise crowd the caches
  // (docs/performance.md, "What bends the one-core tcp curve").
  struct PolledSocket {
    void* socket;  // null for a raw fd
    bool wants_out;
  };
  std::vector<PolledSocket> polled_sockets_;
  std::vector<short> ready_;  // per poll_owners_: ZMQ_EVENTS before polling
  bool has_raw_fds_ = false;
  bool running_ = false;  // Run() or RunOnce() is on the stack
  bool poll_items_dirty_ = true;
  std::uint64_t poll_generation_ = 0;  // bumped by RebuildPollItems()
  // Frames of the message being handed to a handler; reused for every message.
  std::vector<zmq::message_t> frames_;

  TimerQueue timers_;
  IdleYield idle_yield_;
  bool worked_ = false;  // the last iteration ran a callback
  absl::Status batch_scheduling_status_;

  // Cross-thread state.
  int wake_fd_ = -1;  // eventfd
  std::mutex post_mu_;
  std::vector<Task> posted_;   // guarded by post_mu_
  bool posts_closed_ = false;  // guarded by post_mu_
  std::vector<Task> running_posted_;
  std::atomic<bool> stop_requested_{false};
  // Set by Post() and Stop() before they signal wake_fd_, cleared when the
  // loop consumes the signal: lets an iteration with ready sockets skip the
  // poll() that would only check the eventfd.
  std::atomic<bool> wake_pending_{false};

  ErrorHandler error_handler_;
};

}  // namespace zb

#endif  // ZBROKERS_REACTOR_REACTOR_H_
