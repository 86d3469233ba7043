// Copyright 2026 The zbrokers Authors.
//
// zb::BatchScheduling puts the calling thread under Linux's SCHED_BATCH
// scheduling policy for as long as the object lives, and puts it back under
// SCHED_OTHER (the default policy) when it is destroyed.  zb::Reactor::Run()
// holds one when Reactor::Options::batch_scheduling is set; it is a class of
// its own so that what it does to a thread can be tested by itself.
//
// Why.  A SCHED_BATCH thread keeps its nice value and its share of the CPU;
// the one thing that changes is that its wake-ups do not preempt the thread
// that is running on its core: a woken broker waits until that thread blocks
// or its time slice ends.  When a broker fans a request out to many workers
// on the same core, each reply otherwise wakes the broker at once and the
// scheduler lets it preempt the workers, so it handles one or a few replies
// per wake-up (two context switches and a mailbox check on each side every
// time); as a batch thread it runs once the workers have sent, and takes the
// replies together.  On a core of its own nothing changes.  Measured in
// docs/performance.md ("Batch scheduling").
//
// What it never does: raise a thread's priority (switching between
// SCHED_OTHER and SCHED_BATCH needs no privilege), or touch a thread that
// runs under another policy -- a real-time (SCHED_FIFO, SCHED_RR) or
// SCHED_IDLE thread was set up that way on purpose and is left as it is.
//
// Threads started by a batch thread inherit its policy.  libzmq starts a
// context's I/O and reaper threads when the context's first socket is
// created, on the thread that creates it: if that is a batch reactor thread,
// libzmq's threads -- which carry every tcp and ipc message -- become batch
// threads too.  StartContextThreads() below starts them first, on a normal
// thread; zb-broker does so (over tcp on one core that choice measured
// 0.8-1.1x the latency of batch I/O threads, docs/performance.md).
//
// Thread-safety: construct and destroy it on the same thread (it acts on
// the thread that constructs it); status() may be read from that thread.

#ifndef ZBROKERS_REACTOR_BATCH_SCHEDULING_H_
#define ZBROKERS_REACTOR_BATCH_SCHEDULING_H_

#include <zmq.hpp>

#include "absl/status/status.h"

namespace zb {

class BatchScheduling {
 public:
  // Switches the calling thread from SCHED_OTHER to SCHED_BATCH.  Never
  // fails; status() says what happened.
  BatchScheduling();
  // Switches the thread back to SCHED_OTHER if the constructor switched it.
  ~BatchScheduling();

  BatchScheduling(const BatchScheduling&) = delete;
  BatchScheduling& operator=(const BatchScheduling&) = delete;

  // OK when the thread runs under SCHED_BATCH (switched here, or already
  // was).  FailedPrecondition when it runs under another policy, which was
  // left alone; otherwise the error of the switch (e.g. PermissionDenied
  // under a seccomp filter, Unimplemented where the OS has no SCHED_BATCH).
  const absl::Status& status() const { return status_; }

 private:
  bool switched_ = false;
  absl::Status status_;
};

// Makes libzmq start `context`'s I/O and reaper threads now, on the calling
// thread (so with its scheduling policy), by opening and closing one socket.
// Call it before any batch thread opens a socket on the context.  Throws
// what zmq::socket_t throws (e.g. the context was terminated).
void StartContextThreads(zmq::context_t& context);

}  // namespace zb

#endif  // ZBROKERS_REACTOR_BATCH_SCHEDULING_H_
