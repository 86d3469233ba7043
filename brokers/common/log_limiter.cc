// Copyright 2026 The zbrokers Authors.

#include "zbrokers/common/log_limiter.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace zb {

LogLimiter::LogLimiter(Options options)
    : options_(options),
      cost_(options.period / std::max<std::uint32_t>(options.burst, 1)) {
  options_.burst = std::max<std::uint32_t>(options_.burst, 1);
}

bool LogLimiter::Admit(Clock::time_point now) {
  // The bucket is empty when full_at_ is a whole period ahead of now.  Time
  // that passed refills it, up to full.
  const Clock::time_point start = std::max(full_at_, now);
  if (start + cost_ - now > options_.period) {
    ++suppressed_;
    ++total_suppressed_;
    return false;
  }
  full_at_ = start + cost_;
  last_admit_ = now;
  return true;
}

std::uint64_t LogLimiter::TakeSuppressed() {
  const std::uint64_t n = suppressed_;
  suppressed_ = 0;
  return n;
}

std::string LogLimiter::SuppressedNote() {
  const std::uint64_t n = TakeSuppressed();
  if (n == 0) return std::string();
  return absl::StrFormat(" (%d similar line%s suppressed)", n,
                         n == 1 ? "" : "s");
}

std::uint64_t LogLimiter::Flush(Clock::time_point now) {
  if (suppressed_ == 0 || now - last_admit_ < options_.period) return 0;
  last_admit_ = now;
  return TakeSuppressed();
}

}  // namespace zb
