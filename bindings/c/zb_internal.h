// Copyright 2026 The zbrokers Authors.
//
// Internals shared by the files that implement the C ABI (zb.h).  Never
// installed: nothing here is part of the ABI, and the version script
// (zb.map) keeps all of it out of libzbrokers.so's exported symbols.
//
// Which file holds what:
//   zb_internal.h   this contract: the error plumbing, user pointers, time
//                   and frame conversions, the shared ZeroMQ context, the
//                   handle base class with the one deferred-destroy
//                   mechanism, the reactor handle, the owner-thread checks
//                   and what the consensus and Majordomo brokers share
//   zb_internal.cc  their definitions, except:
//   zb_errors.cc    the error plumbing (Fail, FromStatus, ...) and
//                   zb_last_error, zb_strerror, zb_version
//   zb_reactor.cc   zb_reactor_*: lifetime, running, external event loops,
//                   posts and timers; zb_now_us
//   zb_socket.cc    zb_socket_*
//   zb_curve.cc     zb_has_curve, zb_curve_*, and the C keys for clients and
//                   workers (CurveFromC)
//   zb_client.cc    zb_client_options_init, zb_endpoint_policy_*, and the C
//                   client options for the constructors (ClientOptionsFromC)
//   zb_consensus.cc zb_consensus_client_*, _worker_*, _broker_*, and
//                   zb_responder_*
//   zb_majordomo.cc zb_mdp_client_*, _worker_*, _broker_*, and zb_mdp_reply /
//                   zb_mdp_replier_discard
//
// Rules every file keeps:
//   - No exception leaves an extern "C" function: every entry point runs its
//     body inside Guard(), which turns exceptions into error codes and a
//     thread-local message (zb_last_error).
//   - No C++ type crosses the boundary: handles are the structs defined in
//     these files and only ever seen as opaque pointers by callers.
//   - Owner-thread checks return ZB_ERR_WRONG_THREAD instead of reaching the
//     reactor's debug assertion (which aborts): a foreign caller deserves an
//     error, not a crash.
//   - Each file defines its helpers and its extern "C" functions inside
//     namespace zb::capi: a function with C linkage is the one zb_* of zb.h
//     whatever namespace it is defined in, and the helpers need no
//     qualification there.  Only the handle structs (named by zb.h) are at
//     global scope.
//   - Every handle a reactor owns derives from Handle, is destroyed by
//     Handle::Destroy (zb_*_destroy) or with its reactor, and runs its C
//     callbacks through Handle::RunCallback, so that a destroy from inside
//     one of its own callbacks is deferred until nothing of it is on the
//     stack.

#ifndef ZBROKERS_BINDINGS_C_ZB_INTERNAL_H_
#define ZBROKERS_BINDINGS_C_ZB_INTERNAL_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
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
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bindings/c/zb.h"
#include "zbrokers/common/endpoint.h"
#include "zbrokers/common/log.h"
#include "zbrokers/frames/frames.h"
#include "zbrokers/reactor/reactor.h"
#include "zbrokers/security/curve.h"

namespace zb::capi {

using Clock = zb::Reactor::Clock;

// ---- Errors (zb_errors.cc) --------------------------------------------------

// Sets this thread's zb_last_error() text and returns `code`.
int Fail(int code, absl::string_view message);

// This thread's last error text.
const std::string& LastError();

// Maps a Status from the C++ libraries to a return code (ZB_OK for ok), with
// `where` (the C function) in front of the message.
int FromStatus(const absl::Status& status, absl::string_view where);

// The code a failed asynchronous call reports to its callback (timeout,
// cancelled, invalid, ZeroMQ), where FromStatus is for synchronous calls.
int CodeForStatus(const absl::Status& status);

// Fail(ZB_ERR_ZMQ) with zmq_strerror(err).
int ZmqFail(absl::string_view where, int err);

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

// Copies `text` and its NUL into buf[capacity]; ZB_ERR_RANGE ("`what` needs
// N bytes") when it does not fit.
int CopyOut(const std::string& text, char* buf, size_t capacity,
            absl::string_view where, absl::string_view what);

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
inline constexpr std::int64_t kMaxMicros = 1'000'000'000'000'000;

// Microseconds, clamped to [0, kMaxMicros], as a reactor duration.
Clock::duration Micros(std::int64_t us);

// Milliseconds for the C++ APIs, rounded up so that a short timeout never
// becomes 0.
std::chrono::milliseconds MillisUp(std::int64_t us);

// ---- Frames -----------------------------------------------------------------

// Copies C frames into owned frames.  Returns false (and sets the error)
// when an array is NULL where frames are expected.
bool CopyFrames(absl::string_view where, size_t count, const void* const* data,
                const size_t* sizes, zb::Frames& out);

// The C view of a list of frames, valid while the frames live.
struct FrameArrays {
  explicit FrameArrays(std::span<const zmq::message_t> frames);
  absl::InlinedVector<const void*, 8> data;
  absl::InlinedVector<size_t, 8> sizes;
};

// A service name given as bytes and a size.
inline std::string_view ServiceView(const void* service, size_t size) {
  return std::string_view(static_cast<const char*>(service), size);
}

// ---- The shared ZeroMQ context ----------------------------------------------

// One context per process, shared by every reactor so that inproc://
// endpoints work across reactors.  It is created with the first reactor and
// terminated with the last one (all its sockets are closed by then), so a
// process that destroys its reactors never leaves ZeroMQ threads behind.
std::shared_ptr<zmq::context_t> SharedContext();

// ---- Handles ----------------------------------------------------------------

// The base of every handle a reactor owns (sockets, clients, workers,
// brokers), and the one place that decides when a handle may be freed.
//
// A handle is created by its zb_*_new, adopted by its reactor (Adopt) once
// it is complete, and freed exactly once: by Destroy (its zb_*_destroy or
// zb_socket_close) or by its reactor's destruction (DestroyAll).  Freeing
// means: mark it closed (its checks then refuse every call), Shutdown() the
// C++ object (which may still call back, e.g. "client closed" results or
// log lines, and those callbacks see a closed handle), then delete it.
//
// A Destroy from inside one of the handle's own callbacks (RunCallback) is
// deferred, as its Deferral says.  Owner thread only.
class Handle {
 public:
  // The order in which a reactor frees what it owns.  Clients first: their
  // open requests end with "client closed" while the workers and brokers
  // still exist; then everything else that owns sockets (they must close
  // before the context).
  enum class Kind { kClient, kWorker, kBroker, kSocket };
  static constexpr std::size_t kKinds = 4;

  // What Destroy does when called from inside one of the handle's callbacks.
  enum class Deferral {
    // The C++ object is on the stack below the callback (a client completing
    // a request, a worker delivering one, a broker logging): the handle is
    // closed to callers at once, and shut down and freed on the loop's next
    // iteration.  The reactor owns it until then, so destroying the reactor
    // first is fine.
    kNextIteration,
    // Only the reactor is below the callback (a socket's readable callback):
    // the handle is shut down at once and freed when the callback returns.
    kCallbackReturn,
  };

  Handle(zb_reactor_t* reactor, Kind kind, Deferral deferral)
      : reactor_(reactor), kind_(kind), deferral_(deferral) {}
  virtual ~Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  zb_reactor_t* reactor() const { return reactor_; }
  // Set from the moment a destroy is asked for.
  bool closing() const { return closing_; }
  // Whether one of its callbacks is on the stack.
  bool in_callback() const { return in_callback_ > 0; }

  // Hands a complete handle to its reactor, which owns it from now on.
  template <typename T>
  static T* Adopt(std::unique_ptr<T> handle);

  // Frees `h` now or, inside one of its callbacks, as its Deferral says.
  static void Destroy(Handle* h);

  // Frees everything `r` owns, in Kind order (zb_reactor_destroy; never
  // inside a callback).
  static void DestroyAll(zb_reactor_t* r);

  // Runs `fn` (a call into C) as one of the handle's callbacks.  Returns
  // false when the callback destroyed a kCallbackReturn handle, which is
  // then freed: the caller must not touch it again.
  template <typename Fn>
  bool RunCallback(Fn&& fn);

  // The checks of every call on a handle: not NULL ("`noun` is NULL"), not
  // closed ("`noun` is closed"), then CheckOwner() on its reactor.
  static int Check(const Handle* h, absl::string_view noun,
                   absl::string_view where);

 protected:
  // Shuts the C++ side down; it may call back while it does.
  virtual void Shutdown() = 0;

 private:
  // Marks it closed, Shutdown(), delete.
  static void Free(Handle* h);

  zb_reactor_t* const reactor_;
  const Kind kind_;
  const Deferral deferral_;
  int in_callback_ = 0;
  bool closing_ = false;
};

}  // namespace zb::capi

// The reactor handle.  Its owner-thread state is touched only on the owner
// thread; stop_requested is the cross-thread part.  (Reply tokens answered
// on other threads never touch it: they go through their worker's
// zb::ReplyChannel, which the worker closes when it is destroyed, and
// zb_reactor_destroy() destroys every worker before the loop.)
struct zb_reactor_t {
  std::shared_ptr<zmq::context_t> context;
  std::unique_ptr<zb::Reactor> loop;
  // zb_reactor_run/run_for loop on RunOnce() and watch this flag, so that
  // RunOnce() can ignore stops and run_for() can report them.
  std::atomic<bool> stop_requested{false};
  // > 0 while run/run_once/run_for is on the stack: the reactor is then
  // inside a callback whenever a zb_ function is called on its thread.
  int depth = 0;
  // Set while zb_reactor_destroy() tears things down: callbacks running
  // then (e.g. "client closed" results) must not touch the reactor.
  bool destroying = false;
  // External-loop mode (zb_reactor_fd): the epoll descriptor over the
  // loop's PollFds(), what is registered in it, the loop's poll
  // generation it was built from, and whether a call outside the callbacks
  // has already made it readable since the last step (Kick).
  int epoll_fd = -1;
  std::vector<int> epoll_members;
  std::uint64_t epoll_generation = 0;
  bool kicked = false;
  // Owned handles by Handle::Kind; each is freed by Handle::Destroy or with
  // the reactor (Handle::DestroyAll).
  std::array<absl::flat_hash_set<zb::capi::Handle*>, zb::capi::Handle::kKinds>
      owned;
};

namespace zb::capi {

// The thread and state checks of every owner-thread function.
int CheckThread(const zb_reactor_t* r, absl::string_view where);

// In external-loop mode, makes zb_reactor_fd() readable after a call made
// outside the reactor's callbacks: the call may have changed what the
// reactor waits for (a new socket or timer) or consumed a ZMQ_FD signal (a
// send), so the host must run a step and ask zb_reactor_next_timeout_us()
// again.  One empty post per step at most.
void Kick(zb_reactor_t* r);

// CheckThread() for functions that may change what the reactor waits for.
int CheckOwner(zb_reactor_t* r, absl::string_view where);

template <typename T>
T* Handle::Adopt(std::unique_ptr<T> handle) {
  T* h = handle.release();
  h->reactor_->owned[static_cast<std::size_t>(h->kind_)].insert(h);
  return h;
}

template <typename Fn>
bool Handle::RunCallback(Fn&& fn) {
  ++in_callback_;
  fn();
  --in_callback_;
  if (deferral_ == Deferral::kCallbackReturn && closing_ && in_callback_ == 0) {
    delete this;  // Destroy() already shut it down
    return false;
  }
  return true;
}

// zb_*_destroy and zb_socket_close: NULL is a no-op, then the handle's
// checks, then Handle::Destroy.
int DestroyCall(Handle* h, absl::string_view noun, absl::string_view where);

// ---- Clients, workers and brokers -------------------------------------------
//
// The consensus and Majordomo handles have the same shapes over different
// C++ classes.  All of them call back from inside the C++ object, so
// a destroy from one of their callbacks waits for the next loop iteration
// (Deferral::kNextIteration).

// Reads C CURVE keys into `out` (left unset for NULL).  Error messages
// name the key, never its text.  (zb_curve.cc)
int CurveFromC(absl::string_view where, const zb_curve_keys_t* keys,
               std::optional<zb::CurveClientKeys>& out);

// Reads C client options (NULL: the defaults, left as they are) into the
// endpoint policy and CURVE keys of a client's Options.  (zb_client.cc)
int ClientOptionsFromC(absl::string_view where,
                       const zb_client_options_t* options,
                       zb::EndpointPolicy& policy,
                       std::optional<zb::CurveClientKeys>& curve);

template <typename Client>
class ClientHandle : public Handle {
 public:
  explicit ClientHandle(zb_reactor_t* r)
      : Handle(r, Kind::kClient, Deferral::kNextIteration) {}

  std::unique_ptr<Client> client;

 protected:
  void Shutdown() override { client.reset(); }
};

// The NULL checks of zb_*_worker_new (an empty service may be NULL).
int CheckWorkerArgs(const zb_reactor_t* r, const char* endpoint,
                    const void* service, size_t service_size, bool has_handler,
                    bool has_out, absl::string_view where);

// `HandlerFn` is the C handler type of the protocol.
template <typename Worker, typename HandlerFn>
class WorkerHandle : public Handle {
 public:
  explicit WorkerHandle(zb_reactor_t* r)
      : Handle(r, Kind::kWorker, Deferral::kNextIteration) {}

  // Hands a request to the C handler with its reply token, which the handler
  // then owns.  A worker whose destruction is pending answers nothing more:
  // the token is dropped, which tells the C++ worker so.
  template <typename Token>
  void Deliver(std::span<const zmq::message_t> frames,
               std::unique_ptr<Token> token) {
    if (closing()) return;
    const FrameArrays arrays(frames);
    RunCallback([&] {
      handler(user.get(), token.release(), frames.size(), arrays.data.data(),
              arrays.sizes.data());
    });
  }

  std::unique_ptr<Worker> worker;
  HandlerFn handler = nullptr;
  UserRef user;

 protected:
  void Shutdown() override { worker.reset(); }
};

// The end of every zb_*_worker_new: `handle` (its handler set, and what the
// C++ worker's request callback points at) takes the worker Create()
// returned and the caller's `user`, and its reactor adopts it into `*out`.
// When Create failed, fails with ZB_ERR_ZMQ `where("endpoint"): why`,
// frees `handle`, and `user` stays the caller's (free_user is not called).
template <typename WorkerHandleT, typename Worker>
int AdoptWorker(std::unique_ptr<WorkerHandleT> handle,
                absl::StatusOr<std::unique_ptr<Worker>> worker,
                const char* endpoint, void* user, zb_free_fn free_user,
                absl::string_view where, WorkerHandleT** out) {
  if (!worker.ok()) {
    return Fail(ZB_ERR_ZMQ, absl::StrCat(where, "(\"", endpoint,
                                         "\"): ", worker.status().message()));
  }
  handle->worker = *std::move(worker);
  handle->user = UserRef(user, free_user);
  *out = Handle::Adopt(std::move(handle));
  return ZB_OK;
}

// The ZB_LOG_* number zb.h documents for `level`.  Spelled out case by case:
// the C ABI's numbers are fixed, whatever order zb::LogLevel may take.
constexpr int CLogLevel(zb::LogLevel level) {
  switch (level) {
    case zb::LogLevel::kDebug:
      return ZB_LOG_DEBUG;
    case zb::LogLevel::kInfo:
      return ZB_LOG_INFO;
    case zb::LogLevel::kWarning:
      return ZB_LOG_WARNING;
    case zb::LogLevel::kError:
      return ZB_LOG_ERROR;
  }
  return ZB_LOG_ERROR;
}

// A broker's log hook: the C callback if one is set, else WARNING and above
// on stderr as "zbrokers <name> broker: <line>".
class BrokerLog {
 public:
  explicit BrokerLog(absl::string_view name) : name_(name) {}
  // zb_*_broker_set_log: NULL removes the callback (and frees its user).
  void Set(zb_log_fn fn, void* user, zb_free_fn free_user);
  void Write(int level, std::string_view line) const;

 private:
  std::string name_;
  zb_log_fn fn_ = nullptr;
  UserRef user_;
};

// A broker calls back only with log lines, from inside its C++ code, so a
// destroy from its log callback waits for the next loop iteration too.
template <typename Broker>
class BrokerHandle : public Handle {
 public:
  // `name` is the protocol's, for log lines on stderr.
  BrokerHandle(zb_reactor_t* r, absl::string_view name)
      : Handle(r, Kind::kBroker, Deferral::kNextIteration), log(name) {}

  // The C++ broker's log hook; `level` is a ZB_LOG_* number.
  void Log(int level, std::string_view line) {
    RunCallback([&] { log.Write(level, line); });
  }
  void Log(zb::LogLevel level, std::string_view line) {
    Log(CLogLevel(level), line);
  }

  std::unique_ptr<Broker> broker;
  BrokerLog log;

 protected:
  void Shutdown() override { broker.reset(); }
};

// zb_*_broker_bind: binds and copies the resolved endpoint into `resolved`
// when it is not NULL.
template <typename Broker>
int BrokerBind(BrokerHandle<Broker>* b, const char* endpoint, char* resolved,
               size_t capacity, absl::string_view where) {
  return Guard(where, [&]() -> int {
    if (int rc = Handle::Check(b, "broker", where)) return rc;
    if (endpoint == nullptr) {
      return Fail(ZB_ERR_INVALID, absl::StrCat(where, ": endpoint is NULL"));
    }
    const absl::Status status = b->broker->Bind(endpoint);
    if (!status.ok()) {
      return Fail(ZB_ERR_ZMQ, absl::StrCat(where, ": ", status.message()));
    }
    if (resolved == nullptr) return ZB_OK;
    return CopyOut(b->broker->endpoints().back(), resolved, capacity, where,
                   "the endpoint");
  });
}

// zb_*_broker_set_log.
template <typename Broker>
int BrokerSetLog(BrokerHandle<Broker>* b, zb_log_fn fn, void* user,
                 zb_free_fn free_user, absl::string_view where) {
  return Guard(where, [&]() -> int {
    if (int rc = Handle::Check(b, "broker", where)) return rc;
    b->log.Set(fn, user, free_user);
    return ZB_OK;
  });
}

}  // namespace zb::capi

#endif  // ZBROKERS_BINDINGS_C_ZB_INTERNAL_H_
