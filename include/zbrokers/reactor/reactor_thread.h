// Copyright 2026 The zbrokers Authors.
//
// zb::ReactorThread runs a zb::Reactor on a thread of its own.
//
//   zb::ReactorThread thread;                   // starts the thread
//   thread.Invoke([&](zb::Reactor& r) {         // runs on that thread, waits
//     watch = *r.Add(socket, handler);          // reset it through Invoke too
//   });
//   thread.reactor().Post([] { ... });          // fire and forget
//   // ~ReactorThread stops the reactor and joins the thread.
//
// The reactor is constructed on the new thread, so that thread owns it: from
// any other thread use only reactor().Post(), reactor().Stop(), or Invoke().
// Objects that live on the reactor (sockets, brokers, clients) should be
// created and destroyed through Invoke() so that they, too, are only touched
// by the reactor thread.
//
// Stopping.  Stop() (or the destructor) ends the loop for good.  When Run()
// has returned the thread closes the reactor's task queue
// (Reactor::ClosePostQueue()): tasks still queued are destroyed unrun, and
// every later reactor().Post() is refused (returns false, the task is
// destroyed at once).  So an Invoke() that comes after Stop() -- or races
// with it -- either runs (it got in before the loop's last look at the
// queue) or throws ReactorThread::Stopped; it never waits for ever.
//
// Destruction order.  ~ReactorThread stops and joins the thread, then
// destroys the reactor on the destroying thread.  Objects living on the
// reactor (sockets, brokers, clients) must be destroyed through Invoke()
// before that, like everything else that touches them.
//
// Thread-safety: all methods may be called from any thread except the
// reactor's own (Invoke() from the reactor thread would deadlock, and aborts).

#ifndef ZBROKERS_REACTOR_REACTOR_THREAD_H_
#define ZBROKERS_REACTOR_REACTOR_THREAD_H_

#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "zbrokers/reactor/reactor.h"

namespace zb {

class ReactorThread {
 public:
  explicit ReactorThread(Reactor::Options options = {});
  // Stops the reactor and joins the thread.  Tasks still queued are
  // destroyed unrun (see Stopping).
  ~ReactorThread();

  ReactorThread(const ReactorThread&) = delete;
  ReactorThread& operator=(const ReactorThread&) = delete;

  // The reactor.  From other threads, only Post() and Stop() are allowed.
  Reactor& reactor() { return *reactor_; }

  // What Invoke() throws when its function cannot run any more: the
  // reactor thread has stopped (or is stopping and did not get to it).
  class Stopped : public std::runtime_error {
   public:
    Stopped()
        : std::runtime_error(
              "zb::ReactorThread::invoke: the reactor thread has stopped; "
              "the function was not run") {}
  };

  // Runs fn(reactor) on the reactor thread and waits for it; returns what fn
  // returns and rethrows what it throws.  Must not be called on the reactor
  // thread itself.  Throws Stopped, without running fn, when the reactor
  // thread has stopped or stops before it gets to fn (see Stopping).
  template <typename Fn>
  auto Invoke(Fn&& fn) -> std::invoke_result_t<Fn&, Reactor&> {
    using R = std::invoke_result_t<Fn&, Reactor&>;
    CheckNotReactorThread();
    std::promise<R> promise;
    std::future<R> result = promise.get_future();
    bool started = false;  // read only after result.get() synchronised
    // The task owns the promise: if it is destroyed without running (the
    // queue was closed), the waiting future is released with broken_promise
    // instead of hanging.
    const bool queued = reactor_->Post(
        [&fn, &started, done = std::move(promise), this]() mutable {
          started = true;
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
    if (!queued) throw Stopped();
    try {
      return result.get();
    } catch (const std::future_error& e) {
      if (!started && e.code() == std::future_errc::broken_promise) {
        throw Stopped();
      }
      throw;
    }
  }

  // Asks the reactor to stop; Run() returns and the thread ends.  The
  // destructor does this too.
  void Stop();
  // Waits for the thread to end (after Stop()).  Returns the status Run()
  // returned.
  absl::Status join();

  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  void CheckNotReactorThread() const;

  std::unique_ptr<Reactor> reactor_;
  std::thread thread_;
  absl::Status run_status_;
  bool joined_ = false;
};

}  // namespace zb

#endif  // ZBROKERS_REACTOR_REACTOR_THREAD_H_
