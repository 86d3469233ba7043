// Copyright 2026 The zbrokers Authors.

#include "tools/latency/cpu_pin.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace zb::latency {
namespace {

absl::Status SetAffinity(const cpu_set_t& set, const char* what) {
  // pid 0: the calling thread (sched_setaffinity is per thread on Linux).
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    return absl::InternalError(
        absl::StrFormat("%s: %s", what, std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PinCallingThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot pin a thread to CPU %d", cpu));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return SetAffinity(set, absl::StrFormat("pinning to CPU %d", cpu).c_str());
}

absl::Status RunOnCpu(int cpu, absl::FunctionRef<absl::Status()> fn) {
  if (cpu < 0) return fn();
  cpu_set_t old;
  CPU_ZERO(&old);
  if (::sched_getaffinity(0, sizeof old, &old) != 0) {
    return absl::InternalError(
        absl::StrFormat("reading the CPU affinity: %s", std::strerror(errno)));
  }
  if (absl::Status st = PinCallingThread(cpu); !st.ok()) return st;
  absl::Status result = fn();
  absl::Status restored = SetAffinity(old, "restoring the CPU affinity");
  return result.ok() ? restored : result;
}

}  // namespace zb::latency
