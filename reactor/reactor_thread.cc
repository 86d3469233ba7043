// Copyright 2026 The zbrokers Authors.

#include "reactor/reactor_thread.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace zb {

ReactorThread::ReactorThread(Reactor::Options options) {
  std::promise<Reactor*> ready;
  std::future<Reactor*> started = ready.get_future();
  thread_ = std::thread([this, options, &ready] {
    // Constructed here so that this thread owns it.
    auto reactor = std::make_unique<Reactor>(options);
    Reactor* r = reactor.get();
    reactor_ = std::move(reactor);
    ready.set_value(r);
    run_status_ = r->run();
    finished_.store(true, std::memory_order_release);
  });
  started.wait();
}

ReactorThread::~ReactorThread() {
  stop();
  join().IgnoreError();
}

void ReactorThread::stop() { reactor_->stop(); }

absl::Status ReactorThread::join() {
  if (!joined_) {
    thread_.join();
    joined_ = true;
  }
  return run_status_;
}

void ReactorThread::check_not_reactor_thread() const {
  if (std::this_thread::get_id() == thread_.get_id()) {
    std::fprintf(stderr,
                 "zb::ReactorThread::invoke called on the reactor thread "
                 "itself; it would wait for itself forever\n");
    std::abort();
  }
}

void ReactorThread::check_running() const {
  if (finished_.load(std::memory_order_acquire)) {
    throw std::runtime_error(
        "zb::ReactorThread::invoke: the reactor thread has stopped");
  }
}

}  // namespace zb
