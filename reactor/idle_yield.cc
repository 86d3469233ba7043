// Copyright 2026 The zbrokers Authors.

#include "zbrokers/reactor/idle_yield.h"

namespace zb {

bool IdleYield::BeforeSleep(bool worked) {
  if (!enabled_ || !worked) return false;
  if (skip_ > 0) {
    --skip_;
    return false;
  }
  ++stats_.yields;
  return true;
}

void IdleYield::AfterYield(Clock::duration yield_time, int ready) {
  if (ready >= kMinBatch && yield_time <= ready * kMaxYieldPerCallback) {
    ++stats_.productive;
    shift_ = 0;
    skip_ = 0;
    return;
  }
  if (shift_ < kMaxBackoffShift) ++shift_;
  skip_ = (1 << shift_) - 1;
}

}  // namespace zb
