// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/batch_scheduling.h"

#include <sched.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace zb {

#ifdef SCHED_BATCH

namespace {

const char* PolicyName(int policy) {
  switch (policy) {
    case SCHED_OTHER:
      return "SCHED_OTHER";
    case SCHED_FIFO:
      return "SCHED_FIFO";
    case SCHED_RR:
      return "SCHED_RR";
    case SCHED_BATCH:
      return "SCHED_BATCH";
#ifdef SCHED_IDLE
    case SCHED_IDLE:
      return "SCHED_IDLE";
#endif
    default:
      return "an unknown policy";
  }
}

// On Linux, pid 0 names the calling thread, not the whole process.
absl::Status SetPolicy(int policy, const char* what) {
  sched_param param{};  // priority 0: the only one the normal policies take
  if (::sched_setscheduler(0, policy, &param) == 0) return absl::OkStatus();
  return absl::ErrnoToStatus(errno, what);
}

}  // namespace

BatchScheduling::BatchScheduling() {
  const int policy = ::sched_getscheduler(0);
  if (policy < 0) {
    status_ = absl::ErrnoToStatus(errno, "sched_getscheduler");
  } else if (policy == SCHED_BATCH) {
    status_ = absl::OkStatus();
  } else if (policy != SCHED_OTHER) {
    status_ = absl::FailedPreconditionError(
        absl::StrCat("batch scheduling: the thread runs under ",
                     PolicyName(policy), ", which is left as it is"));
  } else {
    status_ = SetPolicy(SCHED_BATCH, "sched_setscheduler(SCHED_BATCH)");
    switched_ = status_.ok();
  }
}

BatchScheduling::~BatchScheduling() {
  // A failure here leaves the thread a batch thread, which is harmless;
  // there is nobody to tell from a destructor.
  if (switched_) (void)SetPolicy(SCHED_OTHER, "sched_setscheduler");
}

#else  // no SCHED_BATCH on this OS

BatchScheduling::BatchScheduling()
    : status_(absl::UnimplementedError(
          "batch scheduling: this OS has no SCHED_BATCH")) {}

BatchScheduling::~BatchScheduling() = default;

#endif

void StartContextThreads(zmq::context_t& context) {
  zmq::socket_t started(context, zmq::socket_type::pair);
  started.close();
}

}  // namespace zb
