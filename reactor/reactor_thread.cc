// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/reactor_thread.h"

#include <cstdio>
#include <cstdlib>

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
    run_status_ = r->Run();
    // Nothing will run the queue any more: release whoever waits on a task
    // still in it, and refuse later ones (see "Stopping" in the header).
    r->ClosePostQueue();
  });
  started.wait();
}

ReactorThread::~ReactorThread() {
  Stop();
  join().IgnoreError();
}

void ReactorThread::Stop() { reactor_->Stop(); }

absl::Status ReactorThread::join() {
  if (!joined_) {
    thread_.join();
    joined_ = true;
  }
  return run_status_;
}

void ReactorThread::CheckNotReactorThread() const {
  if (std::this_thread::get_id() == thread_.get_id()) {
    std::fprintf(stderr,
                 "zb::ReactorThread::invoke called on the reactor thread "
                 "itself; it would wait for itself forever\n");
    std::abort();
  }
}

}  // namespace zb
