// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/reactor.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/batch_scheduling.h"

namespace zb {

// One registered socket or file descriptor.
struct Reactor::Watch {
  void* socket = nullptr;  // the socket's handle; null for a raw fd
  std::uint64_t id = 0;    // what a SocketWatch names it by
  int fd = -1;  // the raw fd, or the socket's ZMQ_FD (its mailbox signal)
  MessageHandler on_message;
  ReadyHandler on_readable;  // raw fd only
  ReadyHandler on_writable;
  bool removed = false;
};

namespace {

constexpr std::int64_t kNanosPerMilli = 1'000'000;

// now + d, saturating at the far end of the clock, so that After() or Every()
// with an absurdly long duration means "never" instead of overflowing.
Reactor::Clock::time_point DeadlineAfter(Reactor::Clock::duration d) {
  const auto now = Reactor::Clock::now();
  if (d <= Reactor::Clock::duration::zero()) return now;
  if (now > Reactor::Clock::time_point::max() - d) {
    return Reactor::Clock::time_point::max();
  }
  return now + d;
}

void DefaultErrorHandler(std::exception_ptr e, std::string_view where) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "zb::Reactor: %.*s callback threw: %s\n",
                 static_cast<int>(where.size()), where.data(), ex.what());
  } catch (...) {
    std::fprintf(stderr,
                 "zb::Reactor: %.*s callback threw a non-std exception\n",
                 static_cast<int>(where.size()), where.data());
  }
}

}  // namespace

Reactor::Reactor() : Reactor(Options{}) {}

Reactor::Reactor(Options options)
    : options_(options),
      owner_(std::this_thread::get_id()),
      idle_yield_(options.yield_before_sleep),
      error_handler_(DefaultErrorHandler) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    // Without a wake-up descriptor Post() could not work at all; there is no
    // sensible way to carry on.
    std::fprintf(stderr, "zb::Reactor: eventfd failed: %s\n",
                 std::strerror(errno));
    std::abort();
  }
  frames_.resize(4);
}

Reactor::~Reactor() { ::close(wake_fd_); }

// The message is built out of line so that the check itself, which runs on
// every call of every owner-thread method, stays two instructions inline.
[[noreturn, gnu::cold, gnu::noinline]] static void WrongThread(
    const char* method) {
  std::fprintf(stderr,
               "zb::Reactor::%s called from a thread that does not own the "
               "reactor; only Post() and Stop() may be called from other "
               "threads\n",
               method);
  std::abort();
}

inline void Reactor::CheckThread(const char* method) const {
#ifndef NDEBUG
  if (!on_owner_thread()) [[unlikely]] {
    WrongThread(method);
  }
#else
  (void)method;
#endif
}

void Reactor::SetErrorHandler(ErrorHandler handler) {
  CheckThread("SetErrorHandler");
  error_handler_ = handler ? std::move(handler) : DefaultErrorHandler;
}

void Reactor::Report(std::exception_ptr e, std::string_view where) {
  try {
    error_handler_(std::move(e), where);
  } catch (...) {
    // An error handler that throws must not take the loop down either.
    DefaultErrorHandler(std::current_exception(), "error handler");
  }
}

// --- Sockets ---------------------------------------------------------------

absl::StatusOr<std::uint64_t> Reactor::AddSocketWatch(
    zmq::socket_ref socket, MessageHandler on_message,
    ReadyHandler on_writable) {
  CheckThread("Add");
  if (!socket) return absl::InvalidArgumentError("Add: socket is closed");
  if (!on_message) return absl::InvalidArgumentError("Add: no message handler");
  for (const auto& w : watches_) {
    if (!w->removed && w->socket == socket.handle()) {
      return absl::AlreadyExistsError("Add: socket is already registered");
    }
  }
  // The socket's ZMQ_FD stays the same for its whole life, so it is read
  // once here rather than on every poll as zmq_poll() does.  Thread-safe
  // socket types (CLIENT, SERVER, ...) have no ZMQ_FD and cannot be watched.
  int zmq_fd = -1;
  std::size_t fd_size = sizeof zmq_fd;
  if (zmq_getsockopt(socket.handle(), ZMQ_FD, &zmq_fd, &fd_size) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Add: the socket has no ZMQ_FD (%s)", zmq_strerror(errno)));
  }
  auto w = std::make_unique<Watch>();
  w->socket = socket.handle();
  w->id = next_watch_id_++;
  w->fd = zmq_fd;
  w->on_message = std::move(on_message);
  w->on_writable = std::move(on_writable);
  const std::uint64_t id = w->id;
  watches_.push_back(std::move(w));
  poll_items_dirty_ = true;
  return id;
}

absl::StatusOr<std::uint64_t> Reactor::AddFdWatch(int fd,
                                                  ReadyHandler on_readable,
                                                  ReadyHandler on_writable) {
  CheckThread("AddFd");
  if (fd < 0) return absl::InvalidArgumentError("AddFd: negative fd");
  if (!on_readable && !on_writable) {
    return absl::InvalidArgumentError("AddFd: no handler");
  }
  for (const auto& w : watches_) {
    if (!w->removed && w->socket == nullptr && w->fd == fd) {
      return absl::AlreadyExistsError(
          absl::StrFormat("AddFd: fd %d is already registered", fd));
    }
  }
  auto w = std::make_unique<Watch>();
  w->fd = fd;
  w->id = next_watch_id_++;
  w->on_readable = std::move(on_readable);
  w->on_writable = std::move(on_writable);
  const std::uint64_t id = w->id;
  watches_.push_back(std::move(w));
  poll_items_dirty_ = true;
  return id;
}

absl::StatusOr<Reactor::SocketWatch> Reactor::Add(zmq::socket_ref socket,
                                                  MessageHandler on_message,
                                                  ReadyHandler on_writable) {
  absl::StatusOr<std::uint64_t> id =
      AddSocketWatch(socket, std::move(on_message), std::move(on_writable));
  if (!id.ok()) return id.status();
  return SocketWatch(this, *id);
}

absl::StatusOr<Reactor::SocketWatch> Reactor::AddFd(int fd,
                                                    ReadyHandler on_readable,
                                                    ReadyHandler on_writable) {
  absl::StatusOr<std::uint64_t> id =
      AddFdWatch(fd, std::move(on_readable), std::move(on_writable));
  if (!id.ok()) return id.status();
  return SocketWatch(this, *id);
}

void Reactor::RemoveWatch(std::uint64_t id) {
  CheckThread("SocketWatch::Reset");
  for (auto& w : watches_) {
    if (!w->removed && w->id == id) {
      w->removed = true;
      poll_items_dirty_ = true;
      return;
    }
  }
  // Already removed through Remove()/RemoveFd(): nothing to do.
}

Reactor::SocketWatch& Reactor::SocketWatch::operator=(
    SocketWatch&& other) noexcept {
  if (this != &other) {
    Reset();
    reactor_ = std::exchange(other.reactor_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void Reactor::SocketWatch::Reset() {
  if (reactor_ == nullptr) return;
  std::exchange(reactor_, nullptr)->RemoveWatch(std::exchange(id_, 0));
}

absl::Status Reactor::Remove(zmq::socket_ref socket) {
  CheckThread("Remove");
  for (auto& w : watches_) {
    if (!w->removed && w->socket == socket.handle()) {
      w->removed = true;
      poll_items_dirty_ = true;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError("Remove: socket is not registered");
}

absl::Status Reactor::RemoveFd(int fd) {
  CheckThread("RemoveFd");
  for (auto& w : watches_) {
    if (!w->removed && w->socket == nullptr && w->fd == fd) {
      w->removed = true;
      poll_items_dirty_ = true;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(
      absl::StrFormat("RemoveFd: fd %d is not registered", fd));
}

void Reactor::RebuildPollItems() {
  // Removed watches are only destroyed here, between rounds, so a handler
  // that removes its own socket is never destroyed while it runs.
  std::erase_if(watches_, [](const auto& w) { return w->removed; });
  pollfds_.clear();
  poll_owners_.clear();
  polled_sockets_.clear();
  has_raw_fds_ = false;
  pollfds_.push_back(pollfd{wake_fd_, POLLIN, 0});
  for (auto& w : watches_) {
    short events = 0;
    if (w->socket) {
      // A socket's ZMQ_FD only ever signals "look at ZMQ_EVENTS", for
      // reading and writing alike.
      events = POLLIN;
    } else {
      if (w->on_readable) events |= POLLIN;
      if (w->on_writable) events |= POLLOUT;
      has_raw_fds_ = true;
    }
    pollfds_.push_back(pollfd{w->fd, events, 0});
    poll_owners_.push_back(w.get());
    polled_sockets_.push_back(
        PolledSocket{w->socket, static_cast<bool>(w->on_writable)});
  }
  ready_.assign(poll_owners_.size(), 0);
  poll_items_dirty_ = false;
  ++poll_generation_;
}

void Reactor::ReleaseLargeFrames(std::size_t n) {
  // Frames a handler left in the buffer are only released when the next
  // message is received into their slot.  On an idle reactor that may be
  // never: one large message dropped as malformed would stay allocated.
  // Small frames (libzmq keeps up to 33 bytes inline) cost nothing to keep.
  for (std::size_t i = 0; i < n; ++i) {
    if (frames_[i].size() > kKeptFrameBytes) [[unlikely]] {
      frames_[i].rebuild();
    }
  }
}

int Reactor::DispatchSocket(Watch& w) {
  int handled = 0;
  std::size_t last = 0;  // frames of the last message handed out
  while (handled < options_.batch_cap && !w.removed) {
    // One multipart message into the reused frame buffer.
    const int n = ReceiveMessage(zmq::socket_ref(zmq::from_handle, w.socket),
                                 frames_, ZMQ_DONTWAIT);
    if (n < 0) {
      ReleaseLargeFrames(last);
      if (errno == EAGAIN) return handled;
      // Anything else is a real failure of the socket (e.g. ETERM).  Report
      // it and move on.
      Report(std::make_exception_ptr(zmq::error_t()), "socket receive");
      return handled;
    }
    last = static_cast<std::size_t>(n);
    ++handled;
    try {
      w.on_message(std::span<zmq::message_t>(frames_.data(), n));
    } catch (...) {
      Report(std::current_exception(), "socket");
    }
  }
  ReleaseLargeFrames(last);
  return handled;
}

// --- Timers ----------------------------------------------------------------

// Out of line and cold: the check itself is one test of the callback.
[[gnu::cold, gnu::noinline]] static absl::Status NullTimerCallback(
    const char* method) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: the timer callback is empty", method));
}

absl::StatusOr<TimerId> Reactor::AddTimer(const char* method,
                                          Clock::time_point deadline,
                                          Clock::duration period, Callback cb) {
  CheckThread(method);
  if (!cb) [[unlikely]] {
    return NullTimerCallback(method);
  }
  return timers_.Add(deadline, period, std::move(cb));
}

// Messages name the method called ("After: the timer callback is empty"),
// like every other check here.
absl::StatusOr<Reactor::Timer> Reactor::After(Clock::duration delay,
                                              Callback cb) {
  absl::StatusOr<TimerId> id = AddTimer("After", DeadlineAfter(delay),
                                        Clock::duration::zero(), std::move(cb));
  if (!id.ok()) return id.status();
  return Timer(this, *id);
}

absl::StatusOr<Reactor::Timer> Reactor::Every(Clock::duration period,
                                              Callback cb) {
  // A period below 1 ns would make a timer that never advances.
  if (period <= Clock::duration::zero()) period = Clock::duration(1);
  absl::StatusOr<TimerId> id =
      AddTimer("Every", DeadlineAfter(period), period, std::move(cb));
  if (!id.ok()) return id.status();
  return Timer(this, *id);
}

absl::StatusOr<Reactor::Timer> Reactor::At(Clock::time_point deadline,
                                           Callback cb) {
  absl::StatusOr<TimerId> id =
      AddTimer("At", deadline, Clock::duration::zero(), std::move(cb));
  if (!id.ok()) return id.status();
  return Timer(this, *id);
}

bool Reactor::Cancel(TimerId id) {
  CheckThread("Cancel");
  return timers_.Cancel(id);
}

Reactor::Timer& Reactor::Timer::operator=(Timer&& other) noexcept {
  if (this != &other) {
    Reset();
    reactor_ = std::exchange(other.reactor_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void Reactor::Timer::Reset() {
  if (reactor_ == nullptr) return;
  // A fired one-shot timer's id is simply unknown by now: cancel says so.
  std::exchange(reactor_, nullptr)->Cancel(std::exchange(id_, 0));
}

TimerId Reactor::Timer::Release() {
  reactor_ = nullptr;
  return std::exchange(id_, 0);
}

int Reactor::FireDueTimers() {
  if (timers_.empty()) return 0;
  return timers_.FireDue(Clock::now(), [this](std::exception_ptr e) {
    Report(std::move(e), "timer");
  });
}

// --- Cross-thread ------------------------------------------------------------

bool Reactor::Post(Task task) {
  if (!task) return false;
  bool was_empty;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    if (posts_closed_) [[unlikely]] {
      // Destroyed below, outside the lock: its destructor may do anything,
      // even Post() again.
      was_empty = false;
    } else {
      was_empty = posted_.empty();
      posted_.push_back(std::move(task));
      task = nullptr;
    }
  }
  if (task) {
    task = nullptr;
    return false;
  }
  // Only the first task of a batch needs to wake the loop: the loop takes the
  // whole queue at once after it has consumed the wake-up.
  if (was_empty) {
    wake_pending_.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  return true;
}

void Reactor::ClosePostQueue() {
  CheckThread("ClosePostQueue");
  std::vector<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    posts_closed_ = true;
    dropped.swap(posted_);
  }
  // Destroyed here, unrun and outside the lock (a destructor may post).
  dropped.clear();
}

void Reactor::Stop() {
  stop_requested_.store(true, std::memory_order_release);
  wake_pending_.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

int Reactor::RunPosted() {
  // Consume the wake-up first, then take the queue: a Post() racing with us
  // either lands in this batch or writes a fresh wake-up.
  wake_pending_.store(false, std::memory_order_relaxed);
  std::uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    running_posted_.swap(posted_);
  }
  int ran = 0;
  for (auto& task : running_posted_) {
    try {
      std::move(task)();
    } catch (...) {
      Report(std::current_exception(), "post");
    }
    ++ran;
  }
  running_posted_.clear();
  return ran;
}

// --- Running -----------------------------------------------------------------

// Out of line and cold, like WrongThread().
[[gnu::cold, gnu::noinline]] static absl::Status Reentered(const char* method) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "zb::Reactor::%s called from inside one of its callbacks; a nested "
      "iteration would overwrite the frames the outer handler is reading",
      method));
}

namespace {
// Clears Reactor::running_ however the loop is left.
class RunningScope {
 public:
  explicit RunningScope(bool& running) : running_(running) { running_ = true; }
  ~RunningScope() { running_ = false; }
  RunningScope(const RunningScope&) = delete;
  RunningScope& operator=(const RunningScope&) = delete;

 private:
  bool& running_;
};
}  // namespace

absl::StatusOr<int> Reactor::RunOnce(Clock::duration max_wait) {
  CheckThread("RunOnce");
  if (running_) [[unlikely]] {
    return Reentered("RunOnce");
  }
  RunningScope scope(running_);
  return iterate(max_wait);
}

// ZMQ_EVENTS of a socket, masked with what its watch wants, as ZMQ_POLL*
// bits; -1 (errno set) when the socket failed, e.g. ETERM.
static int SocketEvents(void* handle, bool wants_out) {
  std::uint32_t events = 0;
  std::size_t size = sizeof events;
  if (zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) != 0) return -1;
  return static_cast<int>(events &
                          (wants_out ? ZMQ_POLLIN | ZMQ_POLLOUT : ZMQ_POLLIN));
}

absl::StatusOr<int> Reactor::iterate(Clock::duration max_wait) {
  if (poll_items_dirty_) RebuildPollItems();

  // The reactor polls the sockets' ZMQ_FDs itself instead of calling
  // zmq_poll(), which on every call reads each socket's ZMQ_FD again, makes
  // a first poll() with a zero timeout, and checks ZMQ_EVENTS both before
  // and after sleeping.  Here:
  //   1. ZMQ_EVENTS of every socket, once: a ZMQ_FD only signals new
  //      commands, so messages that are already queued (or a command that a
  //      send consumed) would never wake a poll() on it.
  //   2. poll() on the eventfd, the raw fds and the ZMQ_FDs; with a zero
  //      timeout when a socket is already ready, and not at all when a
  //      socket is ready and there is no raw fd (the eventfd is then
  //      checked through wake_pending_, without a syscall).
  //   3. A socket whose ZMQ_FD fired is drained at once: the receive
  //      processes the socket's commands itself (one with a writable
  //      handler checks ZMQ_EVENTS again, for POLLOUT).
  const std::size_t n = poll_owners_.size();
  absl::StatusOr<int> ready_or = CheckSockets();
  if (!ready_or.ok()) return ready_or.status();
  int ready = *ready_or;
  int timeout_ms = SleepTimeoutMs(ready, max_wait);

  // Before sleeping after some work, maybe yield the CPU to the threads
  // that will send the next messages and look again (idle_yield.h).
  bool yielded = false;
  Clock::duration yield_time{};
  if (timeout_ms != 0 && !wake_pending_.load(std::memory_order_relaxed) &&
      idle_yield_.BeforeSleep(worked_)) {
    const Clock::time_point start = Clock::now();
    ::sched_yield();
    yield_time = Clock::now() - start;
    ready_or = CheckSockets();
    if (!ready_or.ok()) return ready_or.status();
    ready = *ready_or;
    if (ready == 0) {
      idle_yield_.AfterYield(yield_time, 0);
      if (max_wait != Clock::duration::max()) {
        max_wait = std::max(Clock::duration::zero(), max_wait - yield_time);
      }
      timeout_ms = SleepTimeoutMs(0, max_wait);
    } else {
      yielded = true;
      timeout_ms = 0;
    }
  }

  bool woken = false;  // the eventfd (post/stop) wants attention
  bool polled = false;
  if (ready > 0 && !has_raw_fds_) {
    woken = wake_pending_.load(std::memory_order_acquire);
  } else {
    const int rc = ::poll(pollfds_.data(), pollfds_.size(), timeout_ms);
    if (rc < 0) {
      const int err = errno;
      if (err != EINTR) {
        return absl::InternalError(
            absl::StrFormat("poll failed: %s", std::strerror(err)));
      }
    } else if (rc > 0) {
      polled = true;
      woken = pollfds_[0].revents != 0;
    }
  }

  int handled = 0;
  if (woken) handled += RunPosted();
  // Handlers may add or remove watches; poll_owners_ is only rebuilt at the
  // start of the next round, and `removed` guards every call.
  for (std::size_t i = 0; i < n; ++i) {
    const short fired = polled ? pollfds_[i + 1].revents : 0;
    if (ready_[i] == 0 && fired == 0) continue;  // nothing for this watch
    Watch& w = *poll_owners_[i];
    if (w.removed) continue;
    if (w.socket) {
      int revents = ready_[i];
      if (fired != 0 && revents == 0) {
        if (w.on_writable) {
          revents = SocketEvents(w.socket, true);
          if (revents < 0) revents = ZMQ_POLLIN;  // the receive reports it
        } else {
          revents = ZMQ_POLLIN;
        }
      }
      if (revents & ZMQ_POLLIN) handled += DispatchSocket(w);
      if ((revents & ZMQ_POLLOUT) && !w.removed && w.on_writable) {
        ++handled;
        try {
          w.on_writable();
        } catch (...) {
          Report(std::current_exception(), "socket");
        }
      }
      continue;
    }
    // A raw fd's hang-up or error (POLLHUP/POLLERR/POLLNVAL) goes to the
    // readable handler (or the writable one of a write-only registration),
    // whose read() or write() then sees the EOF or the error.  Nobody would
    // ever be told otherwise, and the next poll would return at once again:
    // the loop would spin.
    const bool fd_error = (fired & (POLLERR | POLLHUP | POLLNVAL)) != 0;
    if ((fired & POLLIN) || (fd_error && w.on_readable)) {
      if (w.on_readable) {
        ++handled;
        try {
          w.on_readable();
        } catch (...) {
          Report(std::current_exception(), "fd");
        }
      }
    }
    const bool writable =
        (fired & POLLOUT) || (fd_error && !w.on_readable && w.on_writable);
    if (writable && !w.removed && w.on_writable) {
      ++handled;
      try {
        w.on_writable();
      } catch (...) {
        Report(std::current_exception(), "fd");
      }
    }
  }
  handled += FireDueTimers();
  if (yielded) idle_yield_.AfterYield(yield_time, handled);
  worked_ = handled > 0;
  return handled;
}

absl::StatusOr<int> Reactor::CheckSockets() {
  const std::size_t n = polled_sockets_.size();
  int ready = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const PolledSocket& p = polled_sockets_[i];
    if (p.socket == nullptr) {
      ready_[i] = 0;
      continue;
    }
    const int ev = SocketEvents(p.socket, p.wants_out);
    if (ev < 0) {
      return absl::InternalError(
          absl::StrFormat("polling a socket failed: %s", zmq_strerror(errno)));
    }
    ready_[i] = static_cast<short>(ev);
    if (ev != 0) ++ready;
  }
  return ready;
}

int Reactor::SleepTimeoutMs(int ready, Clock::duration max_wait) const {
  // Sleep until the earliest timer, but never past max_wait (-1: forever).
  std::int64_t wait_ns =
      max_wait == Clock::duration::max()
          ? -1
          : std::max<std::int64_t>(
                0,
                std::chrono::duration_cast<std::chrono::nanoseconds>(max_wait)
                    .count());
  if (ready > 0) {
    wait_ns = 0;
  } else if (!timers_.empty()) {
    const Clock::time_point now = Clock::now();
    const Clock::time_point next = timers_.next_deadline();
    const std::int64_t until_timer =
        next <= now
            ? 0
            : std::chrono::duration_cast<std::chrono::nanoseconds>(next - now)
                  .count();
    if (wait_ns < 0 || until_timer < wait_ns) wait_ns = until_timer;
  }
  // Round up: waking before a deadline would only spin.
  return wait_ns < 0 ? -1
                     : static_cast<int>(std::min<std::int64_t>(
                           (wait_ns + kNanosPerMilli - 1) / kNanosPerMilli,
                           std::numeric_limits<int>::max()));
}

absl::Status Reactor::Run() {
  CheckThread("Run");
  if (running_) [[unlikely]] {
    return Reentered("Run");
  }
  RunningScope scope(running_);
  std::optional<BatchScheduling> batch;
  if (options_.batch_scheduling) {
    batch.emplace();
    batch_scheduling_status_ = batch->status();
  }
  for (;;) {
    // A plain load first: the locked exchange is only needed once a stop
    // has actually been requested, not on every iteration.
    if (stop_requested_.load(std::memory_order_acquire) &&
        stop_requested_.exchange(false, std::memory_order_acq_rel)) {
      return absl::OkStatus();
    }
    absl::StatusOr<int> r = iterate(Clock::duration::max());
    if (!r.ok()) return r.status();
  }
}

// --- Driving it from another event loop ------------------------------------

std::vector<pollfd> Reactor::PollFds() const {
  CheckThread("PollFds");
  std::vector<pollfd> out;
  out.reserve(watches_.size() + 1);
  out.push_back(pollfd{wake_fd_, POLLIN, 0});
  for (const auto& w : watches_) {
    if (w->removed) continue;
    short events = POLLIN;  // a ZMQ_FD
    if (w->socket == nullptr) {
      events = static_cast<short>((w->on_readable ? POLLIN : 0) |
                                  (w->on_writable ? POLLOUT : 0));
    }
    out.push_back(pollfd{w->fd, events, 0});
  }
  return out;
}

Reactor::Clock::duration Reactor::NextWait() {
  CheckThread("NextWait");
  if (poll_items_dirty_ || wake_pending_.load(std::memory_order_acquire)) {
    return Clock::duration::zero();
  }
  for (const auto& w : watches_) {
    if (w->removed || w->socket == nullptr) continue;
    // Non-zero, or a failed socket (which RunOnce() reports): work now.
    if (SocketEvents(w->socket, static_cast<bool>(w->on_writable)) != 0) {
      return Clock::duration::zero();
    }
  }
  if (timers_.empty()) return Clock::duration::max();
  const Clock::time_point now = Clock::now();
  const Clock::time_point next = timers_.next_deadline();
  return next <= now ? Clock::duration::zero() : next - now;
}

}  // namespace zb
