// Copyright 2026 The zbrokers Authors.
//
// zb::ReactorThread runs a zb::Reactor on a thread of its own.
//
//   zb::ReactorThread thread;                   // starts the thread
//   thread.invoke([&](zb::Reactor& r) {         // runs on that thread, waits
//     r.add(socket, handler).IgnoreError();
//   });
//   thread.reactor().post([] { ... });          // fire and forget
//   // ~ReactorThread stops the reactor and joins the thread.
//
// The reactor is constructed on the new thread, so that thread owns it: from
// any other thread use only reactor().post(), reactor().stop(), or invoke().
// Objects that live on the reactor (sockets, brokers, clients) should be
// created and destroyed through invoke() so that they, too, are only touched
// by the reactor thread.
//
// Thread-safety: all methods may be called from any thread except the
// reactor's own (invoke() from the reactor thread would deadlock, and aborts).

#ifndef ZB_REACTOR_REACTOR_THREAD_H_
#define ZB_REACTOR_REACTOR_THREAD_H_

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "reactor/reactor.h"

namespace zb {

class ReactorThread {
 public:
  explicit ReactorThread(Reactor::Options options = {});
  // Stops the reactor and joins the thread.  Tasks still queued are dropped.
  ~ReactorThread();

  ReactorThread(const ReactorThread&) = delete;
  ReactorThread& operator=(const ReactorThread&) = delete;

  // The reactor.  From other threads, only post() and stop() are allowed.
  Reactor& reactor() { return *reactor_; }

  // Runs fn(reactor) on the reactor thread and waits for it; returns what fn
  // returns and rethrows what it throws.  Must not be called on the reactor
  // thread itself.  Once the reactor thread has ended (after stop()), invoke
  // throws std::runtime_error instead of waiting forever; an invoke that
  // races with stop() and is dropped unrun throws std::future_error when the
  // ReactorThread is destroyed.
  template <typename Fn>
  auto invoke(Fn&& fn) -> std::invoke_result_t<Fn&, Reactor&> {
    using R = std::invoke_result_t<Fn&, Reactor&>;
    check_not_reactor_thread();
    std::promise<R> promise;
    std::future<R> result = promise.get_future();
    check_running();
    // The task owns the promise: if it is destroyed without running (the
    // reactor stopped first), the waiting future is released with
    // broken_promise instead of hanging.
    reactor_->post([&fn, done = std::move(promise), this]() mutable {
      try {
        if constexpr (std::is_void_v<R>) {
          fn(*reactor_);
          done.set_value();
        } else {
          done.set_value(fn(*reactor_));
        }
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    return result.get();
  }

  // Asks the reactor to stop; run() returns and the thread ends.  The
  // destructor does this too.
  void stop();
  // Waits for the thread to end (after stop()).  Returns the status run()
  // returned.
  absl::Status join();

  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  void check_not_reactor_thread() const;
  void check_running() const;

  std::unique_ptr<Reactor> reactor_;
  std::atomic<bool> finished_{false};  // run() has returned
  std::thread thread_;
  absl::Status run_status_;
  bool joined_ = false;
};

}  // namespace zb

#endif  // ZB_REACTOR_REACTOR_THREAD_H_
