// Copyright 2026 The zbrokers Authors.
//
// The C ABI (zb.h) over zb::Reactor and the client, worker and broker
// libraries.
//
// Rules this file keeps:
//   - No exception leaves an extern "C" function: every entry point runs its
//     body inside Guard(), which turns exceptions into error codes and a
//     thread-local message.
//   - No C++ type crosses the boundary: handles are structs defined here and
//     only ever seen as opaque pointers by callers.
//   - Owner-thread checks return ZB_ERR_WRONG_THREAD instead of reaching the
//     reactor's debug assertion (which aborts): a foreign caller deserves an
//     error, not a crash.

#include "bindings/c/zb.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "zbrokers/consensus/broker.h"
#include "zbrokers/consensus/client.h"
#include "zbrokers/consensus/codec.h"
#include "zbrokers/consensus/worker.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/majordomo/broker.h"
#include "zbrokers/majordomo/client.h"
#include "zbrokers/majordomo/worker.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

#ifndef ZB_VERSION
#define ZB_VERSION "0.0.0"
#endif

namespace {

using Clock = zb::Reactor::Clock;

// ---- Errors -----------------------------------------------------------------

thread_local std::string t_last_error;

int Fail(int code, absl::string_view message) {
  t_last_error.assign(message.data(), message.size());
  return code;
}

// Maps a Status from the C++ libraries to a return code.  `where` names the
// C function for the message.
int FromStatus(const absl::Status& status, absl::string_view where) {
  if (status.ok()) return ZB_OK;
  int code = ZB_ERR_INTERNAL;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      code = ZB_ERR_INVALID;
      break;
    case absl::StatusCode::kNotFound:
      code = ZB_ERR_NOT_FOUND;
      break;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      code = ZB_ERR_STATE;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = ZB_ERR_AGAIN;
      break;
    case absl::StatusCode::kUnavailable:
      code = ZB_ERR_UNREACHABLE;
      break;
    default:
      break;
  }
  return Fail(code, absl::StrCat(where, ": ", status.message()));
}

// Runs an entry point's body; no exception gets past it.
template <typename Body>
int Guard(absl::string_view where, Body&& body) noexcept {
  try {
    return body();
  } catch (const zmq::error_t& e) {
    return Fail(ZB_ERR_ZMQ, absl::StrCat(where, ": ", e.what()));
  } catch (const std::bad_alloc&) {
    return Fail(ZB_ERR_NO_MEMORY, absl::StrCat(where, ": out of memory"));
  } catch (const std::exception& e) {
    return Fail(ZB_ERR_INTERNAL, absl::StrCat(where, ": ", e.what()));
  } catch (...) {
    return Fail(ZB_ERR_INTERNAL, absl::StrCat(where, ": unknown exception"));
  }
}

int ZmqFail(absl::string_view where, int err) {
  return Fail(ZB_ERR_ZMQ, absl::StrCat(where, ": ", zmq_strerror(err)));
}

// ---- User pointers ----------------------------------------------------------

// Owns a caller's `user` pointer: calls free_user(user) exactly once, when
// the last holder lets go.  Move-only, so it can live inside the reactor's
// move-only callbacks.
class UserRef {
 public:
  UserRef() = default;
  UserRef(void* user, zb_free_fn free_user) : user_(user), free_(free_user) {}
  UserRef(UserRef&& o) noexcept
      : user_(o.user_), free_(std::exchange(o.free_, nullptr)) {}
  UserRef& operator=(UserRef&& o) noexcept {
    if (this != &o) {
      Reset();
      user_ = o.user_;
      free_ = std::exchange(o.free_, nullptr);
    }
    return *this;
  }
  UserRef(const UserRef&) = delete;
  UserRef& operator=(const UserRef&) = delete;
  ~UserRef() { Reset(); }

  void* get() const { return user_; }
  void Reset() {
    if (zb_free_fn f = std::exchange(free_, nullptr)) f(user_);
  }

 private:
  void* user_ = nullptr;
  zb_free_fn free_ = nullptr;
};

// ---- Time -------------------------------------------------------------------

// Bounds for microsecond arguments: ~31 years keeps every conversion to
// steady_clock nanoseconds far from overflow.
constexpr std::int64_t kMaxMicros = 1'000'000'000'000'000;

Clock::duration Micros(std::int64_t us) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::microseconds(std::clamp<std::int64_t>(us, 0, kMaxMicros)));
}

// ---- The shared ZeroMQ context ----------------------------------------------

// One context per process, shared by every reactor so that inproc://
// endpoints work across reactors.  It is created with the first reactor and
// terminated with the last one (all its sockets are closed by then), so a
// process that destroys its reactors never leaves ZeroMQ threads behind.
std::mutex g_context_mu;
std::weak_ptr<zmq::context_t> g_context;

std::shared_ptr<zmq::context_t> SharedContext() {
  std::lock_guard<std::mutex> lock(g_context_mu);
  std::shared_ptr<zmq::context_t> ctx = g_context.lock();
  if (!ctx) {
    ctx = std::make_shared<zmq::context_t>(1);
    g_context = ctx;
  }
  return ctx;
}

// Whether a reactor's loop still exists, for reply tokens answered on other
// threads: MdpWorker::Replier posts to the reactor without knowing whether
// it is gone.  zb_reactor_destroy() clears `alive` under `mu` before it
// destroys the loop, and a token posts only under `mu` while `alive`.
struct ReactorLife {
  std::mutex mu;
  bool alive = true;
};

}  // namespace

// ---- Handles ----------------------------------------------------------------

struct zb_reactor_t {
  std::shared_ptr<zmq::context_t> context;
  std::unique_ptr<zb::Reactor> loop;
  // zb_reactor_run/run_for loop on run_once() and watch this flag, so that
  // run_once() can ignore stops and run_for() can report them.
  std::atomic<bool> stop_requested{false};
  // > 0 while run/run_once/run_for is on the stack: the reactor is then
  // inside a callback whenever a zb_ function is called on its thread.
  int depth = 0;
  // Set while zb_reactor_destroy() tears things down: callbacks running
  // then (e.g. "client closed" results) must not touch the reactor.
  bool destroying = false;
  // External-loop mode (zb_reactor_fd): the epoll descriptor over the
  // loop's poll_fds(), what is registered in it, the loop's poll
  // generation it was built from, and whether a call outside the callbacks
  // has already made it readable since the last step (Kick).
  int epoll_fd = -1;
  std::vector<int> epoll_members;
  std::uint64_t epoll_generation = 0;
  bool kicked = false;
  // Owned objects; each is destroyed by its own zb_*_destroy or with the
  // reactor.
  absl::flat_hash_set<zb_socket_t*> sockets;
  absl::flat_hash_set<zb_consensus_client_t*> consensus_clients;
  absl::flat_hash_set<zb_consensus_worker_t*> consensus_workers;
  absl::flat_hash_set<zb_consensus_broker_t*> consensus_brokers;
  absl::flat_hash_set<zb_mdp_client_t*> mdp_clients;
  absl::flat_hash_set<zb_mdp_worker_t*> mdp_workers;
  absl::flat_hash_set<zb_mdp_broker_t*> mdp_brokers;
  std::shared_ptr<ReactorLife> life = std::make_shared<ReactorLife>();
};

struct zb_socket_t {
  zb_reactor_t* reactor = nullptr;
  zmq::socket_t socket;
  zb_frames_fn fn = nullptr;
  UserRef user;
  bool watched = false;
  // While the callback runs, a close or a new callback must not free what
  // the running callback may still use; they are finished afterwards.
  bool dispatching = false;
  bool close_pending = false;
  std::vector<UserRef> retired;
  // Reused for every message handed to the callback.
  std::vector<const void*> data;
  std::vector<size_t> sizes;
};

struct zb_consensus_client_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::ConsensusClient> client;
  // > 0 while one of its callbacks runs: destroying it then is deferred,
  // because the C++ client is still on the stack.
  int in_callback = 0;
  bool closing = false;
};

struct zb_consensus_worker_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::ConsensusWorker> worker;
  zb_consensus_handler_fn handler = nullptr;
  UserRef user;
  int in_callback = 0;
  bool closing = false;
};

struct zb_responder_t {
  zb::ConsensusWorker::Responder responder;
};

struct zb_consensus_broker_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::ConsensusBroker> broker;
  zb_log_fn log_fn = nullptr;
  UserRef log_user;
};

struct zb_mdp_client_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::MdpAsyncClient> client;
  int in_callback = 0;
  bool closing = false;
};

struct zb_mdp_worker_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::MdpWorker> worker;
  zb_mdp_handler_fn handler = nullptr;
  UserRef user;
  int in_callback = 0;
  bool closing = false;
};

struct zb_mdp_replier_t {
  zb::MdpWorker::Replier replier;
  std::shared_ptr<ReactorLife> life;
};

struct zb_mdp_broker_t {
  zb_reactor_t* reactor = nullptr;
  std::unique_ptr<zb::MajordomoBroker> broker;
  zb_log_fn log_fn = nullptr;
  UserRef log_user;
};

namespace {

// The thread and state checks of every owner-thread function.
int CheckThread(const zb_reactor_t* r, absl::string_view where) {
  if (r->destroying) {
    return Fail(ZB_ERR_STATE,
                absl::StrCat(where, ": the reactor is being destroyed"));
  }
  if (!r->loop->on_owner_thread()) {
    return Fail(ZB_ERR_WRONG_THREAD,
                absl::StrCat(where,
                             ": called from a thread that does not own the "
                             "reactor; only zb_reactor_post and "
                             "zb_reactor_stop may be called from other "
                             "threads"));
  }
  return ZB_OK;
}

// In external-loop mode, makes zb_reactor_fd() readable after a call made
// outside the reactor's callbacks: the call may have changed what the
// reactor waits for (a new socket or timer) or consumed a ZMQ_FD signal (a
// send), so the host must run a step and ask zb_reactor_next_timeout_us()
// again.  One empty post per step at most.
void Kick(zb_reactor_t* r) {
  if (r->epoll_fd < 0 || r->depth > 0 || r->kicked) return;
  r->kicked = true;
  r->loop->post([] {});
}

// CheckThread() for functions that may change what the reactor waits for.
int CheckOwner(zb_reactor_t* r, absl::string_view where) {
  if (int rc = CheckThread(r, where)) return rc;
  Kick(r);
  return ZB_OK;
}

// Marks the reactor as running for the lifetime of the object.
class Running {
 public:
  explicit Running(zb_reactor_t* r) : r_(r) { ++r_->depth; }
  ~Running() { --r_->depth; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  zb_reactor_t* r_;
};

int CheckRunnable(zb_reactor_t* r, absl::string_view where) {
  if (r == nullptr) return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": NULL"));
  if (int rc = CheckThread(r, where)) return rc;
  if (r->depth > 0) {
    return Fail(ZB_ERR_STATE,
                absl::StrCat(where,
                             ": the reactor is already running (called from "
                             "one of its callbacks?)"));
  }
  return ZB_OK;
}

int CheckSocket(const zb_socket_t* s, absl::string_view where) {
  if (s == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": socket is NULL"));
  }
  if (s->close_pending) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": socket is closed"));
  }
  return CheckOwner(s->reactor, where);
}

int AddTimer(zb_reactor_t* r, absl::string_view where, zb_callback_fn fn,
             void* user, zb_free_fn free_user, zb_timer_id* id,
             absl::StatusOr<zb::TimerId> (*schedule)(zb::Reactor&,
                                                     zb::Reactor::Callback,
                                                     std::int64_t),
             std::int64_t when) {
  if (r == nullptr || fn == nullptr) {
    return Fail(ZB_ERR_INVALID,
                absl::StrCat(where, ": reactor and callback are required"));
  }
  if (int rc = CheckOwner(r, where)) return rc;
  absl::StatusOr<zb::TimerId> tid = schedule(
      *r->loop, [fn, ref = UserRef(user, free_user)]() { fn(ref.get()); },
      when);
  if (!tid.ok()) return FromStatus(tid.status(), where);
  if (id != nullptr) *id = *tid;
  return ZB_OK;
}

void DestroySocket(zb_socket_t* s) {
  // The reactor must stop watching before the socket closes.
  if (s->watched) s->reactor->loop->remove(s->socket).IgnoreError();
  s->watched = false;
  s->socket.close();
  if (s->dispatching) {
    // Finished by Dispatch() once the running callback returns.
    s->close_pending = true;
    return;
  }
  delete s;
}

void Dispatch(zb_socket_t* s, std::span<zmq::message_t> frames) {
  s->data.resize(frames.size());
  s->sizes.resize(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    s->data[i] = frames[i].data();
    s->sizes[i] = frames[i].size();
  }
  s->dispatching = true;
  s->fn(s->user.get(), frames.size(), s->data.data(), s->sizes.data());
  s->dispatching = false;
  if (s->close_pending) {
    delete s;
    return;
  }
  s->retired.clear();
}

// ZeroMQ options whose value is 64 bits wide.
bool IsInt64Option(int option) {
  switch (option) {
    case ZMQ_AFFINITY:
    case ZMQ_MAXMSGSIZE:
    case ZMQ_VMCI_BUFFER_SIZE:
    case ZMQ_VMCI_BUFFER_MIN_SIZE:
    case ZMQ_VMCI_BUFFER_MAX_SIZE:
      return true;
    default:
      return false;
  }
}

int SocketTypeFromName(const char* name) {
  static constexpr struct {
    const char* name;
    int type;
  } kTypes[] = {
      {"pair", ZB_PAIR},     {"pub", ZB_PUB},   {"sub", ZB_SUB},
      {"req", ZB_REQ},       {"rep", ZB_REP},   {"dealer", ZB_DEALER},
      {"router", ZB_ROUTER}, {"pull", ZB_PULL}, {"push", ZB_PUSH},
      {"xpub", ZB_XPUB},     {"xsub", ZB_XSUB}, {"stream", ZB_STREAM},
  };
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& t : kTypes) {
    if (lower == t.name) return t.type;
  }
  return -1;
}

// Destroys the C++ object first (it may still call back: results of open
// requests, log lines) and then the handle.
void DeleteConsensusClient(zb_consensus_client_t* c) {
  c->closing = true;
  c->client.reset();
  delete c;
}

void DeleteConsensusWorker(zb_consensus_worker_t* w) {
  w->closing = true;
  w->worker.reset();
  delete w;
}

void DeleteConsensusBroker(zb_consensus_broker_t* b) {
  b->broker.reset();
  delete b;
}

void DeleteMdpClient(zb_mdp_client_t* c) {
  c->closing = true;
  c->client.reset();
  delete c;
}

void DeleteMdpWorker(zb_mdp_worker_t* w) {
  w->closing = true;
  w->worker.reset();
  delete w;
}

void DeleteMdpBroker(zb_mdp_broker_t* b) {
  b->broker.reset();
  delete b;
}

}  // namespace

// ---- Errors -----------------------------------------------------------------

extern "C" const char* zb_last_error(void) { return t_last_error.c_str(); }

extern "C" const char* zb_strerror(int code) {
  switch (code) {
    case ZB_OK:
      return "ZB_OK";
    case ZB_ERR_INVALID:
      return "ZB_ERR_INVALID";
    case ZB_ERR_WRONG_THREAD:
      return "ZB_ERR_WRONG_THREAD";
    case ZB_ERR_NOT_FOUND:
      return "ZB_ERR_NOT_FOUND";
    case ZB_ERR_STATE:
      return "ZB_ERR_STATE";
    case ZB_ERR_AGAIN:
      return "ZB_ERR_AGAIN";
    case ZB_ERR_UNREACHABLE:
      return "ZB_ERR_UNREACHABLE";
    case ZB_ERR_ZMQ:
      return "ZB_ERR_ZMQ";
    case ZB_ERR_RANGE:
      return "ZB_ERR_RANGE";
    case ZB_ERR_NO_MEMORY:
      return "ZB_ERR_NO_MEMORY";
    case ZB_ERR_INTERNAL:
      return "ZB_ERR_INTERNAL";
    case ZB_ERR_TIMEOUT:
      return "ZB_ERR_TIMEOUT";
    case ZB_ERR_CANCELLED:
      return "ZB_ERR_CANCELLED";
    default:
      return "unknown";
  }
}

extern "C" const char* zb_version(void) { return ZB_VERSION; }

// ---- Reactor ----------------------------------------------------------------

extern "C" int zb_reactor_new(zb_reactor_t** out) {
  return Guard("zb_reactor_new", [&]() -> int {
    if (out == nullptr)
      return Fail(ZB_ERR_INVALID, "zb_reactor_new: out is NULL");
    auto r = std::make_unique<zb_reactor_t>();
    r->context = SharedContext();
    r->loop = std::make_unique<zb::Reactor>();
    *out = r.release();
    return ZB_OK;
  });
}

extern "C" int zb_reactor_destroy(zb_reactor_t* r) {
  return Guard("zb_reactor_destroy", [&]() -> int {
    if (r == nullptr) return ZB_OK;
    if (int rc = CheckRunnable(r, "zb_reactor_destroy")) return rc;
    r->destroying = true;
    // Clients first: their open requests end with "client closed" while the
    // workers and brokers still exist.  Then everything else that owns
    // sockets (they must close before the context), then the loop, which
    // drops pending timers and tasks and so releases their users.
    for (zb_consensus_client_t* c : std::exchange(r->consensus_clients, {})) {
      DeleteConsensusClient(c);
    }
    for (zb_mdp_client_t* c : std::exchange(r->mdp_clients, {})) {
      DeleteMdpClient(c);
    }
    for (zb_consensus_worker_t* w : std::exchange(r->consensus_workers, {})) {
      DeleteConsensusWorker(w);
    }
    for (zb_mdp_worker_t* w : std::exchange(r->mdp_workers, {})) {
      DeleteMdpWorker(w);
    }
    for (zb_consensus_broker_t* b : std::exchange(r->consensus_brokers, {})) {
      DeleteConsensusBroker(b);
    }
    for (zb_mdp_broker_t* b : std::exchange(r->mdp_brokers, {})) {
      DeleteMdpBroker(b);
    }
    for (zb_socket_t* s : std::exchange(r->sockets, {})) DestroySocket(s);
    {
      // From now on reply tokens on other threads drop their answers
      // instead of posting to a loop that is about to go.
      std::lock_guard<std::mutex> lock(r->life->mu);
      r->life->alive = false;
    }
    r->loop.reset();
    if (r->epoll_fd >= 0) ::close(r->epoll_fd);
    delete r;  // releases this reactor's share of the context last
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run(zb_reactor_t* r) {
  return Guard("zb_reactor_run", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run")) return rc;
    Running running(r);
    while (!r->stop_requested.exchange(false, std::memory_order_acq_rel)) {
      absl::StatusOr<int> n = r->loop->run_once(Clock::duration::max());
      if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run");
    }
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run_once(zb_reactor_t* r, int64_t max_wait_us,
                                   int* handled) {
  return Guard("zb_reactor_run_once", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run_once")) return rc;
    r->kicked = false;  // this step consumes the kick's post
    Running running(r);
    absl::StatusOr<int> n = r->loop->run_once(
        max_wait_us < 0 ? Clock::duration::max() : Micros(max_wait_us));
    if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run_once");
    if (handled != nullptr) *handled = *n;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_run_for(zb_reactor_t* r, int64_t max_us,
                                  int* stopped) {
  return Guard("zb_reactor_run_for", [&]() -> int {
    if (int rc = CheckRunnable(r, "zb_reactor_run_for")) return rc;
    Running running(r);
    const Clock::time_point deadline = Clock::now() + Micros(max_us);
    for (;;) {
      if (r->stop_requested.exchange(false, std::memory_order_acq_rel)) {
        if (stopped != nullptr) *stopped = 1;
        return ZB_OK;
      }
      const Clock::time_point now = Clock::now();
      if (now >= deadline) break;
      absl::StatusOr<int> n = r->loop->run_once(deadline - now);
      if (!n.ok()) return FromStatus(n.status(), "zb_reactor_run_for");
    }
    if (stopped != nullptr) *stopped = 0;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_stop(zb_reactor_t* r) {
  return Guard("zb_reactor_stop", [&]() -> int {
    if (r == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_stop: NULL");
    r->stop_requested.store(true, std::memory_order_release);
    // zb::Reactor::run() is never used here, so its own stop flag is
    // irrelevant; stop() is the cheapest way to wake a blocked poll.
    r->loop->stop();
    return ZB_OK;
  });
}

extern "C" int zb_reactor_post(zb_reactor_t* r, zb_callback_fn fn, void* user,
                               zb_free_fn free_user) {
  return Guard("zb_reactor_post", [&]() -> int {
    if (r == nullptr || fn == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_reactor_post: reactor and callback are required");
    }
    r->loop->post(
        [fn, ref = UserRef(user, free_user)]() mutable { fn(ref.get()); });
    return ZB_OK;
  });
}

// ---- External event loops ---------------------------------------------------

namespace {

// Brings the epoll set up to date with the loop's poll_fds() after its
// registrations changed.  Everything is removed and added again: a closed
// descriptor's number may have come back for another socket.
int SyncEpoll(zb_reactor_t* r, absl::string_view where) {
  if (r->epoll_generation == r->loop->poll_generation() &&
      !r->epoll_members.empty()) {
    return ZB_OK;
  }
  for (int fd : r->epoll_members) {
    ::epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, fd, nullptr);  // may be closed
  }
  r->epoll_members.clear();
  for (const pollfd& p : r->loop->poll_fds()) {
    epoll_event ev{};
    ev.events = ((p.events & POLLIN) ? EPOLLIN : 0u) |
                ((p.events & POLLOUT) ? EPOLLOUT : 0u);
    ev.data.fd = p.fd;
    if (::epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, p.fd, &ev) != 0 &&
        (errno != EEXIST ||
         ::epoll_ctl(r->epoll_fd, EPOLL_CTL_MOD, p.fd, &ev) != 0)) {
      return Fail(ZB_ERR_INTERNAL, absl::StrCat(where, ": epoll_ctl(", p.fd,
                                                "): ", std::strerror(errno)));
    }
    r->epoll_members.push_back(p.fd);
  }
  r->epoll_generation = r->loop->poll_generation();
  return ZB_OK;
}

}  // namespace

extern "C" int zb_reactor_fd(zb_reactor_t* r, int* fd) {
  return Guard("zb_reactor_fd", [&]() -> int {
    if (fd == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_fd: fd is NULL");
    if (int rc = CheckRunnable(r, "zb_reactor_fd")) return rc;
    if (r->epoll_fd < 0) {
      r->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
      if (r->epoll_fd < 0) {
        return Fail(ZB_ERR_INTERNAL, absl::StrCat("zb_reactor_fd: epoll: ",
                                                  std::strerror(errno)));
      }
      if (int rc = SyncEpoll(r, "zb_reactor_fd")) {
        ::close(r->epoll_fd);
        r->epoll_fd = -1;
        r->epoll_members.clear();
        return rc;
      }
    }
    *fd = r->epoll_fd;
    return ZB_OK;
  });
}

extern "C" int zb_reactor_next_timeout_us(zb_reactor_t* r,
                                          int64_t* timeout_us) {
  return Guard("zb_reactor_next_timeout_us", [&]() -> int {
    if (timeout_us == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_reactor_next_timeout_us: timeout_us is NULL");
    }
    if (int rc = CheckRunnable(r, "zb_reactor_next_timeout_us")) return rc;
    if (r->epoll_fd >= 0) {
      if (int rc = SyncEpoll(r, "zb_reactor_next_timeout_us")) return rc;
    }
    const Clock::duration wait = r->loop->next_wait();
    if (wait == Clock::duration::max()) {
      *timeout_us = -1;
    } else {
      *timeout_us = std::chrono::ceil<std::chrono::microseconds>(wait).count();
    }
    return ZB_OK;
  });
}

// ---- Timers -----------------------------------------------------------------

extern "C" int64_t zb_now_us(void) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             Clock::now().time_since_epoch())
      .count();
}

extern "C" int zb_reactor_after(zb_reactor_t* r, int64_t delay_us,
                                zb_callback_fn fn, void* user,
                                zb_free_fn free_user, zb_timer_id* id) {
  return Guard("zb_reactor_after", [&]() -> int {
    if (delay_us < 0) {
      return Fail(ZB_ERR_INVALID, "zb_reactor_after: negative delay");
    }
    return AddTimer(
        r, "zb_reactor_after", fn, user, free_user, id,
        [](zb::Reactor& loop, zb::Reactor::Callback cb,
           std::int64_t us) -> absl::StatusOr<zb::TimerId> {
          return loop.after(Micros(us), std::move(cb));
        },
        delay_us);
  });
}

extern "C" int zb_reactor_every(zb_reactor_t* r, int64_t period_us,
                                zb_callback_fn fn, void* user,
                                zb_free_fn free_user, zb_timer_id* id) {
  return Guard("zb_reactor_every", [&]() -> int {
    if (period_us <= 0) {
      return Fail(ZB_ERR_INVALID, "zb_reactor_every: period must be > 0");
    }
    return AddTimer(
        r, "zb_reactor_every", fn, user, free_user, id,
        [](zb::Reactor& loop, zb::Reactor::Callback cb,
           std::int64_t us) -> absl::StatusOr<zb::TimerId> {
          return loop.every(Micros(us), std::move(cb));
        },
        period_us);
  });
}

extern "C" int zb_reactor_at(zb_reactor_t* r, int64_t deadline_us,
                             zb_callback_fn fn, void* user,
                             zb_free_fn free_user, zb_timer_id* id) {
  return Guard("zb_reactor_at", [&]() -> int {
    return AddTimer(
        r, "zb_reactor_at", fn, user, free_user, id,
        [](zb::Reactor& loop, zb::Reactor::Callback cb,
           std::int64_t us) -> absl::StatusOr<zb::TimerId> {
          return loop.at(Clock::time_point(Micros(us)), std::move(cb));
        },
        deadline_us);
  });
}

extern "C" int zb_reactor_cancel(zb_reactor_t* r, zb_timer_id id) {
  return Guard("zb_reactor_cancel", [&]() -> int {
    if (r == nullptr) return Fail(ZB_ERR_INVALID, "zb_reactor_cancel: NULL");
    if (int rc = CheckOwner(r, "zb_reactor_cancel")) return rc;
    if (!r->loop->cancel(id)) {
      return Fail(ZB_ERR_NOT_FOUND,
                  absl::StrFormat("zb_reactor_cancel: no live timer %d", id));
    }
    return ZB_OK;
  });
}

// ---- Sockets ----------------------------------------------------------------

extern "C" int zb_socket_new(zb_reactor_t* r, int type, zb_socket_t** out) {
  return Guard("zb_socket_new", [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_socket_new: reactor and out are required");
    }
    if (int rc = CheckOwner(r, "zb_socket_new")) return rc;
    if (type < ZB_PAIR || type > ZB_STREAM) {
      return Fail(
          ZB_ERR_INVALID,
          absl::StrFormat("zb_socket_new: unknown socket type %d", type));
    }
    auto s = std::make_unique<zb_socket_t>();
    s->reactor = r;
    s->socket = zmq::socket_t(*r->context, type);
    s->socket.set(zmq::sockopt::linger, 0);
    *out = s.get();
    r->sockets.insert(s.release());
    return ZB_OK;
  });
}

extern "C" int zb_socket_new_named(zb_reactor_t* r, const char* type_name,
                                   zb_socket_t** out) {
  return Guard("zb_socket_new_named", [&]() -> int {
    if (type_name == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_new_named: type name is NULL");
    }
    const int type = SocketTypeFromName(type_name);
    if (type < 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat("zb_socket_new_named: unknown socket type \"",
                               type_name, "\""));
    }
    return zb_socket_new(r, type, out);
  });
}

extern "C" int zb_socket_close(zb_socket_t* s) {
  return Guard("zb_socket_close", [&]() -> int {
    if (s == nullptr) return ZB_OK;
    if (int rc = CheckSocket(s, "zb_socket_close")) return rc;
    s->reactor->sockets.erase(s);
    DestroySocket(s);
    return ZB_OK;
  });
}

extern "C" int zb_socket_set_int(zb_socket_t* s, int option, int64_t value) {
  return Guard("zb_socket_set_int", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_set_int")) return rc;
    int zrc;
    if (IsInt64Option(option)) {
      zrc = zmq_setsockopt(s->socket.handle(), option, &value, sizeof value);
    } else {
      if (value < INT_MIN || value > INT_MAX) {
        return Fail(ZB_ERR_INVALID,
                    absl::StrFormat("zb_socket_set_int: option %d: value %d "
                                    "does not fit an int",
                                    option, value));
      }
      const int v = static_cast<int>(value);
      zrc = zmq_setsockopt(s->socket.handle(), option, &v, sizeof v);
    }
    if (zrc != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_set_int(option %d)", option),
                     errno);
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_set_bytes(zb_socket_t* s, int option,
                                   const void* value, size_t size) {
  return Guard("zb_socket_set_bytes", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_set_bytes")) return rc;
    if (value == nullptr && size > 0) {
      return Fail(ZB_ERR_INVALID, "zb_socket_set_bytes: value is NULL");
    }
    if (zmq_setsockopt(s->socket.handle(), option, value, size) != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_set_bytes(option %d)", option),
                     errno);
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_get_int(zb_socket_t* s, int option, int64_t* value) {
  return Guard("zb_socket_get_int", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_get_int")) return rc;
    if (value == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_get_int: value is NULL");
    }
    if (IsInt64Option(option)) {
      std::int64_t v = 0;
      size_t size = sizeof v;
      if (zmq_getsockopt(s->socket.handle(), option, &v, &size) != 0) {
        return ZmqFail(absl::StrFormat("zb_socket_get_int(option %d)", option),
                       errno);
      }
      *value = v;
    } else {
      int v = 0;
      size_t size = sizeof v;
      if (zmq_getsockopt(s->socket.handle(), option, &v, &size) != 0) {
        return ZmqFail(absl::StrFormat("zb_socket_get_int(option %d)", option),
                       errno);
      }
      *value = v;
    }
    return ZB_OK;
  });
}

extern "C" int zb_socket_get_bytes(zb_socket_t* s, int option, void* buf,
                                   size_t capacity, size_t* size) {
  return Guard("zb_socket_get_bytes", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_get_bytes")) return rc;
    if (size == nullptr || (buf == nullptr && capacity > 0)) {
      return Fail(ZB_ERR_INVALID, "zb_socket_get_bytes: NULL buffer or size");
    }
    // Every byte-string option of ZeroMQ 4.3 fits in 1 KiB; reading into a
    // local buffer first lets us report the needed size.
    char local[1024];
    size_t n = sizeof local;
    if (zmq_getsockopt(s->socket.handle(), option, local, &n) != 0) {
      return ZmqFail(absl::StrFormat("zb_socket_get_bytes(option %d)", option),
                     errno);
    }
    *size = n;
    if (n > capacity) {
      return Fail(ZB_ERR_RANGE,
                  absl::StrFormat("zb_socket_get_bytes: needs %d bytes, "
                                  "buffer has %d",
                                  n, capacity));
    }
    if (n > 0) std::memcpy(buf, local, n);
    return ZB_OK;
  });
}

namespace {

template <typename Op>
int EndpointCall(zb_socket_t* s, const char* endpoint, const char* where,
                 Op op) {
  return Guard(where, [&]() -> int {
    if (int rc = CheckSocket(s, where)) return rc;
    if (endpoint == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": endpoint is NULL"));
    }
    if (op(s->socket.handle(), endpoint) != 0) {
      const int err = errno;
      return Fail(ZB_ERR_ZMQ, absl::StrCat(where, "(\"", endpoint,
                                           "\"): ", zmq_strerror(err)));
    }
    return ZB_OK;
  });
}

}  // namespace

extern "C" int zb_socket_bind(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_bind", zmq_bind);
}

extern "C" int zb_socket_connect(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_connect", zmq_connect);
}

extern "C" int zb_socket_unbind(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_unbind", zmq_unbind);
}

extern "C" int zb_socket_disconnect(zb_socket_t* s, const char* endpoint) {
  return EndpointCall(s, endpoint, "zb_socket_disconnect", zmq_disconnect);
}

extern "C" int zb_socket_last_endpoint(zb_socket_t* s, char* buf,
                                       size_t capacity) {
  return Guard("zb_socket_last_endpoint", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_last_endpoint")) return rc;
    if (buf == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_socket_last_endpoint: buf is NULL");
    }
    const std::string ep = s->socket.get(zmq::sockopt::last_endpoint);
    if (ep.size() + 1 > capacity) {
      return Fail(ZB_ERR_RANGE,
                  absl::StrFormat("zb_socket_last_endpoint: needs %d bytes",
                                  ep.size() + 1));
    }
    std::memcpy(buf, ep.c_str(), ep.size() + 1);
    return ZB_OK;
  });
}

extern "C" int zb_socket_send(zb_socket_t* s, size_t count,
                              const void* const* data, const size_t* sizes) {
  return Guard("zb_socket_send", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_send")) return rc;
    if (count == 0 || data == nullptr || sizes == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_socket_send: needs at least one frame (data and sizes)");
    }
    absl::InlinedVector<zmq::message_t, 8> frames;
    frames.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] == nullptr && sizes[i] > 0) {
        return Fail(ZB_ERR_INVALID,
                    absl::StrFormat("zb_socket_send: frame %d is NULL", i));
      }
      frames.emplace_back(data[i], sizes[i]);
    }
    return FromStatus(
        zb::SendFrames(s->socket,
                       std::span<zmq::message_t>(frames.data(), frames.size())),
        "zb_socket_send");
  });
}

extern "C" int zb_socket_on_readable(zb_socket_t* s, zb_frames_fn fn,
                                     void* user, zb_free_fn free_user) {
  return Guard("zb_socket_on_readable", [&]() -> int {
    if (int rc = CheckSocket(s, "zb_socket_on_readable")) return rc;
    UserRef old = std::move(s->user);
    if (fn == nullptr) {
      if (s->watched) {
        if (int rc = FromStatus(s->reactor->loop->remove(s->socket),
                                "zb_socket_on_readable")) {
          return rc;
        }
        s->watched = false;
      }
      s->fn = nullptr;
    } else {
      if (!s->watched) {
        if (int rc = FromStatus(
                s->reactor->loop->add(s->socket,
                                      [s](std::span<zmq::message_t> frames) {
                                        Dispatch(s, frames);
                                      }),
                "zb_socket_on_readable")) {
          return rc;
        }
        s->watched = true;
      }
      s->fn = fn;
      s->user = UserRef(user, free_user);
    }
    // The old callback may be the one running right now: release it after.
    if (s->dispatching) s->retired.push_back(std::move(old));
    return ZB_OK;
  });
}

// ---- Consensus
// ---------------------------------------------------------------

namespace {

// Milliseconds for the C++ APIs, rounded up so that a short timeout never
// becomes 0.
std::chrono::milliseconds MillisUp(std::int64_t us) {
  const std::int64_t clamped = std::clamp<std::int64_t>(us, 0, kMaxMicros);
  return std::chrono::milliseconds((clamped + 999) / 1000);
}

// Copies C frames into owned frames.  Returns false (and sets the error)
// when an array is NULL where frames are expected.
bool CopyFrames(absl::string_view where, size_t count, const void* const* data,
                const size_t* sizes, zb::Frames& out) {
  if (count > 0 && (data == nullptr || sizes == nullptr)) {
    Fail(ZB_ERR_INVALID, absl::StrCat(where, ": data or sizes is NULL"));
    return false;
  }
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] == nullptr && sizes[i] > 0) {
      Fail(ZB_ERR_INVALID, absl::StrFormat("%s: frame %d is NULL", where, i));
      return false;
    }
    out.emplace_back(data[i], sizes[i]);
  }
  return true;
}

// The C view of a list of frames, valid while the frames live.
struct FrameArrays {
  explicit FrameArrays(std::span<const zmq::message_t> frames) {
    data.reserve(frames.size());
    sizes.reserve(frames.size());
    for (const zmq::message_t& f : frames) {
      data.push_back(f.data());
      sizes.push_back(f.size());
    }
  }
  absl::InlinedVector<const void*, 8> data;
  absl::InlinedVector<size_t, 8> sizes;
};

void DeliverResult(zb_consensus_client_t* c, zb_consensus_reply_fn fn,
                   void* user, zb::ConsensusClient::Result& r) {
  using Outcome = zb::ConsensusClient::Outcome;
  using FailedBy = zb::ConsensusClient::FailedBy;
  int result = ZB_RESULT_FAILURE;
  if (r.outcome == Outcome::kSuccess) result = ZB_RESULT_SUCCESS;
  if (r.outcome == Outcome::kTimeout) result = ZB_RESULT_TIMEOUT;
  int failed_by = ZB_FAILED_BY_NONE;
  switch (r.failed_by) {
    case FailedBy::kWorker:
      failed_by = ZB_FAILED_BY_WORKER;
      break;
    case FailedBy::kBroker:
      failed_by = ZB_FAILED_BY_BROKER;
      break;
    case FailedBy::kClient:
      failed_by = ZB_FAILED_BY_CLIENT;
      break;
    case FailedBy::kNone:
      break;
  }
  if (result != ZB_RESULT_FAILURE) failed_by = ZB_FAILED_BY_NONE;
  // Every failure gets a reason string, so that a binding can show one
  // without knowing the protocol.
  std::string reason = r.reason;
  if (reason.empty() && result == ZB_RESULT_TIMEOUT) reason = "timeout";
  if (reason.empty() && failed_by == ZB_FAILED_BY_WORKER &&
      !r.payload.empty()) {
    reason = std::string(zb::View(r.payload[0]));
    reason.resize(std::strlen(reason.c_str()));  // up to the first NUL
  }
  const FrameArrays arrays(r.payload);
  ++c->in_callback;
  fn(user, result, failed_by, reason.c_str(), r.attempts, r.payload.size(),
     arrays.data.data(), arrays.sizes.data());
  --c->in_callback;
}

int CheckClient(const zb_consensus_client_t* c, absl::string_view where) {
  if (c == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": client is NULL"));
  }
  if (c->closing) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": client is closed"));
  }
  return CheckOwner(c->reactor, where);
}

int CheckWorker(const zb_consensus_worker_t* w, absl::string_view where) {
  if (w == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": worker is NULL"));
  }
  if (w->closing) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": worker is closed"));
  }
  return CheckOwner(w->reactor, where);
}

// Reads C CURVE keys into `out` (left unset for NULL).  Error messages
// name the key, never its text.
int CurveFromC(absl::string_view where, const zb_curve_keys_t* keys,
               std::optional<zb::CurveClientKeys>& out) {
  if (keys == nullptr) return ZB_OK;
  if (keys->server_public_key == nullptr || keys->secret_key == nullptr) {
    return Fail(ZB_ERR_INVALID,
                absl::StrCat(where,
                             ": CURVE needs server_public_key and "
                             "secret_key"));
  }
  absl::StatusOr<zb::CurveClientKeys> k =
      zb::MakeCurveClientKeys(keys->server_public_key, keys->secret_key);
  if (!k.ok()) {
    return Fail(
        absl::IsFailedPrecondition(k.status()) ? ZB_ERR_STATE : ZB_ERR_INVALID,
        absl::StrCat(where, ": ", k.status().message()));
  }
  if (keys->public_key != nullptr) {
    absl::StatusOr<zb::CurveKey> given = zb::ParseZ85Key(keys->public_key);
    if (!given.ok() || *given != k->public_key) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(where,
                               ": public_key is not the public key of "
                               "secret_key (pass NULL to derive it)"));
    }
  }
  out = *k;
  return ZB_OK;
}

int CheckBroker(const zb_consensus_broker_t* b, absl::string_view where) {
  if (b == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": broker is NULL"));
  }
  return CheckOwner(b->reactor, where);
}

int Answer(zb_responder_t* token, bool success, size_t count,
           const void* const* data, const size_t* sizes,
           absl::string_view where) {
  if (token == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": responder is NULL"));
  }
  // The token is consumed whatever happens: a caller that gets an error
  // back must not be left owning something it may not free.
  std::unique_ptr<zb_responder_t> owned(token);
  zb::Frames payload;
  if (!CopyFrames(where, count, data, sizes, payload)) {
    return ZB_ERR_INVALID;  // the dropped responder answers "unanswered"
  }
  if (success) {
    owned->responder.succeed(std::move(payload));
  } else {
    owned->responder.fail(std::move(payload));
  }
  return ZB_OK;
}

}  // namespace

extern "C" int zb_has_curve(void) { return zb::CurveAvailable() ? 1 : 0; }

extern "C" int zb_curve_keypair(char* public_key, char* secret_key) {
  return Guard("zb_curve_keypair", [&]() -> int {
    if (public_key == nullptr || secret_key == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_curve_keypair: NULL buffer");
    }
    absl::StatusOr<zb::CurveKeyPair> pair = zb::GenerateCurveKeyPair();
    if (!pair.ok()) {
      return Fail(ZB_ERR_STATE,
                  absl::StrCat("zb_curve_keypair: ", pair.status().message()));
    }
    const std::string pub = zb::Z85(pair->public_key);
    std::string sec = zb::Z85(pair->secret_key);
    std::memcpy(public_key, pub.c_str(), pub.size() + 1);
    std::memcpy(secret_key, sec.c_str(), sec.size() + 1);
    std::fill(sec.begin(), sec.end(), '\0');
    return ZB_OK;
  });
}

extern "C" int zb_curve_public(const char* secret_key, char* public_key) {
  return Guard("zb_curve_public", [&]() -> int {
    if (secret_key == nullptr || public_key == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_curve_public: NULL argument");
    }
    absl::StatusOr<zb::CurveKey> secret = zb::ParseZ85Key(secret_key);
    if (!secret.ok()) {
      return Fail(ZB_ERR_INVALID, absl::StrCat("zb_curve_public: secret key: ",
                                               secret.status().message()));
    }
    absl::StatusOr<zb::CurveKey> pub = zb::CurvePublicKey(*secret);
    if (!pub.ok()) {
      return Fail(ZB_ERR_STATE,
                  absl::StrCat("zb_curve_public: ", pub.status().message()));
    }
    const std::string text = zb::Z85(*pub);
    std::memcpy(public_key, text.c_str(), text.size() + 1);
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_new(zb_reactor_t* r, const char* endpoint,
                                       zb_consensus_client_t** out) {
  return zb_consensus_client_new_curve(r, endpoint, nullptr, out);
}

extern "C" int zb_consensus_client_new_curve(zb_reactor_t* r,
                                             const char* endpoint,
                                             const zb_curve_keys_t* curve,
                                             zb_consensus_client_t** out) {
  return Guard("zb_consensus_client_new", [&]() -> int {
    if (r == nullptr || endpoint == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_consensus_client_new: reactor, endpoint and out are "
                  "required");
    }
    if (int rc = CheckOwner(r, "zb_consensus_client_new")) return rc;
    zb::ConsensusClient::Options options;
    if (int rc = CurveFromC("zb_consensus_client_new", curve, options.curve)) {
      return rc;
    }
    auto c = std::make_unique<zb_consensus_client_t>();
    c->reactor = r;
    c->client = std::make_unique<zb::ConsensusClient>(*r->loop, *r->context,
                                                      endpoint, options);
    if (!c->client->status().ok()) {
      return Fail(ZB_ERR_ZMQ,
                  absl::StrCat("zb_consensus_client_new(\"", endpoint,
                               "\"): ", c->client->status().message()));
    }
    *out = c.get();
    r->consensus_clients.insert(c.release());
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_destroy(zb_consensus_client_t* c) {
  return Guard("zb_consensus_client_destroy", [&]() -> int {
    if (c == nullptr) return ZB_OK;
    if (int rc = CheckClient(c, "zb_consensus_client_destroy")) return rc;
    zb_reactor_t* r = c->reactor;
    if (c->in_callback > 0) {
      // The C++ client is on the stack below this callback: finish on the
      // next iteration.  Until then the handle is closed to callers; the
      // reactor still owns it, so destroying the reactor first is fine.
      c->closing = true;
      r->loop->post([r, c] {
        if (r->consensus_clients.erase(c) > 0) DeleteConsensusClient(c);
      });
      return ZB_OK;
    }
    r->consensus_clients.erase(c);
    DeleteConsensusClient(c);
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_request(
    zb_consensus_client_t* c, const void* service, size_t service_size,
    size_t count, const void* const* data, const size_t* sizes,
    int64_t timeout_us, int retries, zb_consensus_reply_fn fn, void* user,
    zb_free_fn free_user) {
  return zb_consensus_client_request_flags(c, service, service_size, count,
                                           data, sizes, timeout_us, retries, 0,
                                           fn, user, free_user);
}

extern "C" int zb_consensus_client_request_flags(
    zb_consensus_client_t* c, const void* service, size_t service_size,
    size_t count, const void* const* data, const size_t* sizes,
    int64_t timeout_us, int retries, int flags, zb_consensus_reply_fn fn,
    void* user, zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_consensus_client_request";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckClient(c, kWhere)) return rc;
    if ((flags & ~ZB_REQUEST_RETRY_NO_WORKERS) != 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrFormat("%s: unknown flags 0x%x", kWhere, flags));
    }
    if (fn == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": callback and service are required"));
    }
    if (timeout_us <= 0 || retries < 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": timeout must be > 0, retries >= 0"));
    }
    zb::Frames payload;
    if (!CopyFrames(kWhere, count, data, sizes, payload)) {
      return ZB_ERR_INVALID;
    }
    zb::ConsensusClient::RequestOptions options;
    options.timeout = MillisUp(timeout_us);
    options.retries = retries;
    options.retry_no_workers = (flags & ZB_REQUEST_RETRY_NO_WORKERS) != 0;
    c->client->request(
        std::string_view(static_cast<const char*>(service), service_size),
        std::move(payload), options,
        [c, fn, ref = UserRef(user, free_user)](
            zb::ConsensusClient::Result&& result) mutable {
          DeliverResult(c, fn, ref.get(), result);
          ref.Reset();
        });
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_ping(zb_consensus_client_t* c,
                                        int64_t timeout_us, zb_status_fn fn,
                                        void* user, zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_consensus_client_ping";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckClient(c, kWhere)) return rc;
    if (fn == nullptr || timeout_us <= 0) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": needs a callback and a timeout"));
    }
    c->client->ping(MillisUp(timeout_us), [fn, ref = UserRef(user, free_user)](
                                              absl::Status status) mutable {
      int code = ZB_OK;
      if (absl::IsDeadlineExceeded(status)) {
        code = ZB_ERR_TIMEOUT;
      } else if (absl::IsCancelled(status)) {
        code = ZB_ERR_CANCELLED;
      } else if (!status.ok()) {
        code = ZB_ERR_INTERNAL;
      }
      const std::string message(status.message());
      fn(ref.get(), code, message.c_str());
      ref.Reset();
    });
    return ZB_OK;
  });
}

extern "C" int zb_consensus_client_open_requests(zb_consensus_client_t* c,
                                                 size_t* count) {
  return Guard("zb_consensus_client_open_requests", [&]() -> int {
    if (int rc = CheckClient(c, "zb_consensus_client_open_requests")) {
      return rc;
    }
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  "zb_consensus_client_open_requests: count is NULL");
    }
    *count = c->client->open_requests();
    return ZB_OK;
  });
}

extern "C" int zb_consensus_worker_new(zb_reactor_t* r, const char* endpoint,
                                       const void* service, size_t service_size,
                                       int64_t heartbeat_interval_us,
                                       int heartbeat_retries,
                                       zb_consensus_handler_fn handler,
                                       void* user, zb_free_fn free_user,
                                       zb_consensus_worker_t** out) {
  return zb_consensus_worker_new_curve(r, endpoint, service, service_size,
                                       heartbeat_interval_us, heartbeat_retries,
                                       nullptr, handler, user, free_user, out);
}

extern "C" int zb_consensus_worker_new_curve(
    zb_reactor_t* r, const char* endpoint, const void* service,
    size_t service_size, int64_t heartbeat_interval_us, int heartbeat_retries,
    const zb_curve_keys_t* curve, zb_consensus_handler_fn handler, void* user,
    zb_free_fn free_user, zb_consensus_worker_t** out) {
  constexpr absl::string_view kWhere = "zb_consensus_worker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || endpoint == nullptr || handler == nullptr ||
        out == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere,
                               ": reactor, endpoint, service, handler and "
                               "out are required"));
    }
    if (heartbeat_retries > 255) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": heartbeat retries must be <= 255"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::ConsensusWorker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_retries > 0) options.heartbeat_retries = heartbeat_retries;
    if (int rc = CurveFromC(kWhere, curve, options.curve)) return rc;
    auto w = std::make_unique<zb_consensus_worker_t>();
    w->reactor = r;
    w->handler = handler;
    zb_consensus_worker_t* wp = w.get();
    w->worker = std::make_unique<zb::ConsensusWorker>(
        *r->loop, *r->context, endpoint,
        std::string(static_cast<const char*>(service), service_size),
        [wp](std::span<zmq::message_t> payload,
             zb::ConsensusWorker::Responder responder) {
          // A worker whose destruction is pending answers nothing more;
          // dropping the responder tells the broker so.
          if (wp->closing) return;
          auto token = std::make_unique<zb_responder_t>();
          token->responder = std::move(responder);
          const FrameArrays arrays(payload);
          ++wp->in_callback;
          wp->handler(wp->user.get(), token.release(), payload.size(),
                      arrays.data.data(), arrays.sizes.data());
          --wp->in_callback;
        },
        options);
    if (!w->worker->status().ok()) {
      // Not adopted: the caller keeps `user` (free_user is not called).
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, "(\"", endpoint, "\"): ",
                                           w->worker->status().message()));
    }
    w->user = UserRef(user, free_user);
    *out = w.get();
    r->consensus_workers.insert(w.release());
    return ZB_OK;
  });
}

extern "C" int zb_consensus_worker_destroy(zb_consensus_worker_t* w) {
  return Guard("zb_consensus_worker_destroy", [&]() -> int {
    if (w == nullptr) return ZB_OK;
    if (int rc = CheckWorker(w, "zb_consensus_worker_destroy")) return rc;
    zb_reactor_t* r = w->reactor;
    if (w->in_callback > 0) {
      w->closing = true;
      r->loop->post([r, w] {
        if (r->consensus_workers.erase(w) > 0) DeleteConsensusWorker(w);
      });
      return ZB_OK;
    }
    r->consensus_workers.erase(w);
    DeleteConsensusWorker(w);
    return ZB_OK;
  });
}

extern "C" int zb_responder_succeed(zb_responder_t* responder, size_t count,
                                    const void* const* data,
                                    const size_t* sizes) {
  return Guard("zb_responder_succeed", [&]() -> int {
    return Answer(responder, true, count, data, sizes, "zb_responder_succeed");
  });
}

extern "C" int zb_responder_fail(zb_responder_t* responder, size_t count,
                                 const void* const* data, const size_t* sizes) {
  return Guard("zb_responder_fail", [&]() -> int {
    return Answer(responder, false, count, data, sizes, "zb_responder_fail");
  });
}

extern "C" int zb_responder_discard(zb_responder_t* responder) {
  return Guard("zb_responder_discard", [&]() -> int {
    delete responder;
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_new(zb_reactor_t* r,
                                       int64_t request_timeout_us,
                                       zb_consensus_broker_t** out) {
  constexpr absl::string_view kWhere = "zb_consensus_broker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": reactor and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    auto b = std::make_unique<zb_consensus_broker_t>();
    b->reactor = r;
    zb::ConsensusBroker::Options options;
    if (request_timeout_us > 0) {
      options.request_timeout = MillisUp(request_timeout_us);
    }
    zb_consensus_broker_t* bp = b.get();
    options.log = [bp](zb::ConsensusBroker::Severity severity,
                       std::string_view line) {
      using Severity = zb::ConsensusBroker::Severity;
      int level = ZB_LOG_ERROR;
      switch (severity) {
        case Severity::kDebug:
          level = ZB_LOG_DEBUG;
          break;
        case Severity::kInfo:
          level = ZB_LOG_INFO;
          break;
        case Severity::kWarning:
          level = ZB_LOG_WARNING;
          break;
        case Severity::kError:
          break;
      }
      if (bp->log_fn != nullptr) {
        const std::string text(line);
        bp->log_fn(bp->log_user.get(), level, text.c_str());
      } else if (level >= ZB_LOG_WARNING) {
        std::fprintf(stderr, "zbrokers consensus broker: %.*s\n",
                     static_cast<int>(line.size()), line.data());
      }
    };
    b->broker = std::make_unique<zb::ConsensusBroker>(*r->loop, *r->context,
                                                      std::move(options));
    *out = b.get();
    r->consensus_brokers.insert(b.release());
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_destroy(zb_consensus_broker_t* b) {
  return Guard("zb_consensus_broker_destroy", [&]() -> int {
    if (b == nullptr) return ZB_OK;
    if (int rc = CheckBroker(b, "zb_consensus_broker_destroy")) return rc;
    b->reactor->consensus_brokers.erase(b);
    DeleteConsensusBroker(b);
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_bind(zb_consensus_broker_t* b,
                                        const char* endpoint, char* resolved,
                                        size_t capacity) {
  constexpr absl::string_view kWhere = "zb_consensus_broker_bind";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckBroker(b, kWhere)) return rc;
    if (endpoint == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(kWhere, ": endpoint is NULL"));
    }
    const absl::Status status = b->broker->Bind(endpoint);
    if (!status.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, ": ", status.message()));
    }
    if (resolved != nullptr) {
      const std::string& ep = b->broker->endpoints().back();
      if (ep.size() + 1 > capacity) {
        return Fail(ZB_ERR_RANGE,
                    absl::StrFormat("%s: the endpoint needs %d bytes", kWhere,
                                    ep.size() + 1));
      }
      std::memcpy(resolved, ep.c_str(), ep.size() + 1);
    }
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_set_log(zb_consensus_broker_t* b,
                                           zb_log_fn fn, void* user,
                                           zb_free_fn free_user) {
  return Guard("zb_consensus_broker_set_log", [&]() -> int {
    if (int rc = CheckBroker(b, "zb_consensus_broker_set_log")) return rc;
    b->log_fn = fn;
    b->log_user = fn != nullptr ? UserRef(user, free_user) : UserRef();
    return ZB_OK;
  });
}

extern "C" int zb_consensus_broker_worker_count(zb_consensus_broker_t* b,
                                                const void* service,
                                                size_t service_size,
                                                size_t* count) {
  constexpr absl::string_view kWhere = "zb_consensus_broker_worker_count";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckBroker(b, kWhere)) return rc;
    if (count == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": service and count are required"));
    }
    *count = b->broker->worker_count(
        std::string_view(static_cast<const char*>(service), service_size));
    return ZB_OK;
  });
}

// ---- Majordomo
// -----------------------------------------------------------------

namespace {

int CodeForStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return ZB_OK;
    case absl::StatusCode::kDeadlineExceeded:
      return ZB_ERR_TIMEOUT;
    case absl::StatusCode::kCancelled:
      return ZB_ERR_CANCELLED;
    case absl::StatusCode::kInvalidArgument:
      return ZB_ERR_INVALID;
    case absl::StatusCode::kInternal:
      return ZB_ERR_ZMQ;
    default:
      return ZB_ERR_INTERNAL;
  }
}

// Destroys a reply token without a reply.  The worker then gives the
// request back (DISCONNECT and reconnect, so the broker redispatches it);
// from another thread that posts to the worker's loop, so it happens under
// the loop's life lock, and not at all once the loop is gone.
void DiscardMdpReplier(zb_mdp_replier_t* replier) {
  if (replier == nullptr) return;
  std::unique_ptr<zb_mdp_replier_t> owned(replier);
  std::lock_guard<std::mutex> lock(owned->life->mu);
  if (!owned->life->alive) owned->replier.Forget();
  owned->replier = zb::MdpWorker::Replier();  // gives it back, if live
}

int CheckMdpClient(const zb_mdp_client_t* c, absl::string_view where) {
  if (c == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": client is NULL"));
  }
  if (c->closing) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": client is closed"));
  }
  return CheckOwner(c->reactor, where);
}

int CheckMdpWorker(const zb_mdp_worker_t* w, absl::string_view where) {
  if (w == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": worker is NULL"));
  }
  if (w->closing) {
    return Fail(ZB_ERR_STATE, absl::StrCat(where, ": worker is closed"));
  }
  return CheckOwner(w->reactor, where);
}

int CheckMdpBroker(const zb_mdp_broker_t* b, absl::string_view where) {
  if (b == nullptr) {
    return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": broker is NULL"));
  }
  return CheckOwner(b->reactor, where);
}

void MdpBrokerLog(zb_mdp_broker_t* b, int level, std::string_view line) {
  if (b->log_fn != nullptr) {
    const std::string text(line);
    b->log_fn(b->log_user.get(), level, text.c_str());
  } else if (level >= ZB_LOG_WARNING) {
    std::fprintf(stderr, "zbrokers majordomo broker: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  }
}

}  // namespace

extern "C" int zb_mdp_client_new(zb_reactor_t* r, const char* endpoint,
                                 int64_t timeout_us, int retries,
                                 zb_mdp_client_t** out) {
  return zb_mdp_client_new_curve(r, endpoint, timeout_us, retries, nullptr,
                                 out);
}

extern "C" int zb_mdp_client_new_curve(zb_reactor_t* r, const char* endpoint,
                                       int64_t timeout_us, int retries,
                                       const zb_curve_keys_t* curve,
                                       zb_mdp_client_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_client_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || endpoint == nullptr || out == nullptr) {
      return Fail(
          ZB_ERR_INVALID,
          absl::StrCat(kWhere, ": reactor, endpoint and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MdpAsyncClient::Options options;
    if (timeout_us > 0) options.timeout = MillisUp(timeout_us);
    if (retries > 0) options.retries = retries;
    if (int rc = CurveFromC(kWhere, curve, options.curve)) return rc;
    auto c = std::make_unique<zb_mdp_client_t>();
    c->reactor = r;
    c->client = std::make_unique<zb::MdpAsyncClient>(*r->loop, *r->context,
                                                     endpoint, options);
    if (const absl::Status started = c->client->Start(); !started.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, "(\"", endpoint,
                                           "\"): ", started.message()));
    }
    *out = c.get();
    r->mdp_clients.insert(c.release());
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_destroy(zb_mdp_client_t* c) {
  return Guard("zb_mdp_client_destroy", [&]() -> int {
    if (c == nullptr) return ZB_OK;
    if (int rc = CheckMdpClient(c, "zb_mdp_client_destroy")) return rc;
    zb_reactor_t* r = c->reactor;
    if (c->in_callback > 0) {
      c->closing = true;
      r->loop->post([r, c] {
        if (r->mdp_clients.erase(c) > 0) DeleteMdpClient(c);
      });
      return ZB_OK;
    }
    r->mdp_clients.erase(c);
    DeleteMdpClient(c);
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_request(zb_mdp_client_t* c, const void* service,
                                     size_t service_size, size_t count,
                                     const void* const* data,
                                     const size_t* sizes, int64_t timeout_us,
                                     zb_mdp_reply_fn fn, void* user,
                                     zb_free_fn free_user) {
  constexpr absl::string_view kWhere = "zb_mdp_client_request";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckMdpClient(c, kWhere)) return rc;
    if (fn == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": callback and service are required"));
    }
    zb::Frames body;
    if (!CopyFrames(kWhere, count, data, sizes, body)) return ZB_ERR_INVALID;
    std::optional<std::chrono::milliseconds> timeout;
    if (timeout_us > 0) timeout = MillisUp(timeout_us);
    // Request() either calls `done` exactly once (later) or refuses and
    // drops it uncalled.  The user is released after the call, so a refusal
    // leaves it with the C caller, as zb.h promises.
    const absl::Status sent = c->client->Request(
        std::string_view(static_cast<const char*>(service), service_size),
        std::move(body),
        [c, fn, user, free_user](absl::StatusOr<zb::Frames> reply) {
          const int code = CodeForStatus(reply.status());
          const std::string message(reply.status().message());
          static const zb::Frames kNone;
          const zb::Frames& frames = reply.ok() ? *reply : kNone;
          const FrameArrays arrays(frames);
          ++c->in_callback;
          fn(user, code, message.c_str(), frames.size(), arrays.data.data(),
             arrays.sizes.data());
          --c->in_callback;
          if (free_user != nullptr) free_user(user);
        },
        timeout);
    if (!sent.ok()) {
      return Fail(
          CodeForStatus(sent) == ZB_ERR_INVALID ? ZB_ERR_INVALID : ZB_ERR_STATE,
          absl::StrCat(kWhere, ": ", sent.message()));
    }
    return ZB_OK;
  });
}

extern "C" int zb_mdp_client_outstanding(zb_mdp_client_t* c, size_t* count) {
  return Guard("zb_mdp_client_outstanding", [&]() -> int {
    if (int rc = CheckMdpClient(c, "zb_mdp_client_outstanding")) return rc;
    if (count == nullptr) {
      return Fail(ZB_ERR_INVALID, "zb_mdp_client_outstanding: count is NULL");
    }
    *count = c->client->outstanding();
    return ZB_OK;
  });
}

extern "C" int zb_mdp_worker_new(zb_reactor_t* r, const char* endpoint,
                                 const void* service, size_t service_size,
                                 int64_t heartbeat_interval_us,
                                 int heartbeat_liveness,
                                 int64_t reconnect_delay_us,
                                 zb_mdp_handler_fn handler, void* user,
                                 zb_free_fn free_user, zb_mdp_worker_t** out) {
  return zb_mdp_worker_new_curve(r, endpoint, service, service_size,
                                 heartbeat_interval_us, heartbeat_liveness,
                                 reconnect_delay_us, nullptr, handler, user,
                                 free_user, out);
}

extern "C" int zb_mdp_worker_new_curve(
    zb_reactor_t* r, const char* endpoint, const void* service,
    size_t service_size, int64_t heartbeat_interval_us, int heartbeat_liveness,
    int64_t reconnect_delay_us, const zb_curve_keys_t* curve,
    zb_mdp_handler_fn handler, void* user, zb_free_fn free_user,
    zb_mdp_worker_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_worker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || endpoint == nullptr || handler == nullptr ||
        out == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere,
                               ": reactor, endpoint, service, handler and "
                               "out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MdpWorker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_liveness > 0) options.heartbeat_liveness = heartbeat_liveness;
    if (reconnect_delay_us >= 0) {
      options.reconnect_delay = MillisUp(reconnect_delay_us);
    }
    if (int rc = CurveFromC(kWhere, curve, options.curve)) return rc;
    auto w = std::make_unique<zb_mdp_worker_t>();
    w->reactor = r;
    w->handler = handler;
    zb_mdp_worker_t* wp = w.get();
    std::shared_ptr<ReactorLife> life = r->life;
    w->worker = std::make_unique<zb::MdpWorker>(
        *r->loop, *r->context, endpoint,
        std::string(static_cast<const char*>(service), service_size),
        [wp, life](zb::Frames body, zb::MdpWorker::Replier replier) {
          if (wp->closing) return;
          auto token = std::make_unique<zb_mdp_replier_t>();
          token->replier = std::move(replier);
          token->life = life;
          const FrameArrays arrays(body);
          ++wp->in_callback;
          wp->handler(wp->user.get(), token.release(), body.size(),
                      arrays.data.data(), arrays.sizes.data());
          --wp->in_callback;
        },
        options);
    if (const absl::Status started = w->worker->Start(); !started.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, "(\"", endpoint,
                                           "\"): ", started.message()));
    }
    w->user = UserRef(user, free_user);
    *out = w.get();
    r->mdp_workers.insert(w.release());
    return ZB_OK;
  });
}

extern "C" int zb_mdp_worker_destroy(zb_mdp_worker_t* w) {
  return Guard("zb_mdp_worker_destroy", [&]() -> int {
    if (w == nullptr) return ZB_OK;
    if (int rc = CheckMdpWorker(w, "zb_mdp_worker_destroy")) return rc;
    zb_reactor_t* r = w->reactor;
    if (w->in_callback > 0) {
      w->closing = true;
      r->loop->post([r, w] {
        if (r->mdp_workers.erase(w) > 0) DeleteMdpWorker(w);
      });
      return ZB_OK;
    }
    r->mdp_workers.erase(w);
    DeleteMdpWorker(w);
    return ZB_OK;
  });
}

extern "C" int zb_mdp_reply(zb_mdp_replier_t* replier, size_t count,
                            const void* const* data, const size_t* sizes) {
  constexpr absl::string_view kWhere = "zb_mdp_reply";
  return Guard(kWhere, [&]() -> int {
    if (replier == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(kWhere, ": replier is NULL"));
    }
    std::unique_ptr<zb_mdp_replier_t> owned(replier);
    zb::Frames body;
    if (!CopyFrames(kWhere, count, data, sizes, body)) {
      DiscardMdpReplier(owned.release());  // the request is given back
      return ZB_ERR_INVALID;
    }
    // Held while Reply() may post, so the loop cannot be destroyed under it.
    std::lock_guard<std::mutex> lock(owned->life->mu);
    if (owned->life->alive) {
      owned->replier.Reply(std::move(body));
    } else {
      owned->replier.Forget();  // no loop left to tell
    }
    return ZB_OK;
  });
}

extern "C" int zb_mdp_replier_discard(zb_mdp_replier_t* replier) {
  return Guard("zb_mdp_replier_discard", [&]() -> int {
    DiscardMdpReplier(replier);
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_new(zb_reactor_t* r, int64_t heartbeat_interval_us,
                                 int heartbeat_liveness,
                                 zb_mdp_broker_t** out) {
  constexpr absl::string_view kWhere = "zb_mdp_broker_new";
  return Guard(kWhere, [&]() -> int {
    if (r == nullptr || out == nullptr) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": reactor and out are required"));
    }
    if (int rc = CheckOwner(r, kWhere)) return rc;
    zb::MajordomoBroker::Options options;
    if (heartbeat_interval_us > 0) {
      options.heartbeat_interval = MillisUp(heartbeat_interval_us);
    }
    if (heartbeat_liveness > 0) options.heartbeat_liveness = heartbeat_liveness;
    auto b = std::make_unique<zb_mdp_broker_t>();
    b->reactor = r;
    b->broker =
        std::make_unique<zb::MajordomoBroker>(*r->loop, *r->context, options);
    zb_mdp_broker_t* bp = b.get();
    b->broker->set_log_hook(
        [bp](zb::MajordomoBroker::LogLevel level, std::string_view line) {
          using Level = zb::MajordomoBroker::LogLevel;
          MdpBrokerLog(bp,
                       level == Level::kDebug  ? ZB_LOG_DEBUG
                       : level == Level::kInfo ? ZB_LOG_INFO
                                               : ZB_LOG_WARNING,
                       line);
        });
    // Worker joins and leaves arrive as INFO lines of the log hook,
    // rate-limited by the broker.
    *out = b.get();
    r->mdp_brokers.insert(b.release());
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_destroy(zb_mdp_broker_t* b) {
  return Guard("zb_mdp_broker_destroy", [&]() -> int {
    if (b == nullptr) return ZB_OK;
    if (int rc = CheckMdpBroker(b, "zb_mdp_broker_destroy")) return rc;
    b->reactor->mdp_brokers.erase(b);
    DeleteMdpBroker(b);
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_bind(zb_mdp_broker_t* b, const char* endpoint,
                                  char* resolved, size_t capacity) {
  constexpr absl::string_view kWhere = "zb_mdp_broker_bind";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckMdpBroker(b, kWhere)) return rc;
    if (endpoint == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(kWhere, ": endpoint is NULL"));
    }
    const absl::Status status = b->broker->Bind(endpoint);
    if (!status.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(kWhere, ": ", status.message()));
    }
    if (resolved != nullptr) {
      const std::string& ep = b->broker->endpoints().back();
      if (ep.size() + 1 > capacity) {
        return Fail(ZB_ERR_RANGE,
                    absl::StrFormat("%s: the endpoint needs %d bytes", kWhere,
                                    ep.size() + 1));
      }
      std::memcpy(resolved, ep.c_str(), ep.size() + 1);
    }
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_set_log(zb_mdp_broker_t* b, zb_log_fn fn,
                                     void* user, zb_free_fn free_user) {
  return Guard("zb_mdp_broker_set_log", [&]() -> int {
    if (int rc = CheckMdpBroker(b, "zb_mdp_broker_set_log")) return rc;
    b->log_fn = fn;
    b->log_user = fn != nullptr ? UserRef(user, free_user) : UserRef();
    return ZB_OK;
  });
}

extern "C" int zb_mdp_broker_worker_count(zb_mdp_broker_t* b,
                                          const void* service,
                                          size_t service_size, size_t* count) {
  constexpr absl::string_view kWhere = "zb_mdp_broker_worker_count";
  return Guard(kWhere, [&]() -> int {
    if (int rc = CheckMdpBroker(b, kWhere)) return rc;
    if (count == nullptr || (service == nullptr && service_size > 0)) {
      return Fail(ZB_ERR_INVALID,
                  absl::StrCat(kWhere, ": service and count are required"));
    }
    const zb::MajordomoBroker::Stats stats = b->broker->stats();
    const auto it = stats.services.find(
        std::string(static_cast<const char*>(service), service_size));
    *count = it == stats.services.end() ? 0 : it->second.workers;
    return ZB_OK;
  });
}
