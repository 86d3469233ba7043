// Copyright 2026 The zbrokers Authors.
//
// zb::LogLimiter decides whether a log line of one kind (malformed messages,
// worker joins, worker leaves, refused peers, ...) may be written now, so
// that a peer flooding the broker cannot flood its log.  It is a token
// bucket: up to `burst` lines at once, refilled at `burst` lines per
// `period`.  Lines it refuses are counted; the next admitted line (or a
// periodic Flush from the broker's sweep) reports how many were held back,
// so nothing a peer does goes unmentioned.
//
//   zb::LogLimiter joins({.period = std::chrono::seconds(1), .burst = 10});
//   ...
//   if (joins.Admit(now)) {
//     Log(absl::StrCat("worker joined ...", joins.SuppressedNote()));
//   }
//   ...                       // in the sweep:
//   if (std::uint64_t n = joins.Flush(now)) Log(StrFormat("%d more ...", n));
//
// Threading: none; one limiter belongs to one reactor thread.  Cost: a
// comparison and a subtraction per call; no allocation except in
// SuppressedNote() when lines were held back.

#ifndef ZBROKERS_COMMON_LOG_LIMITER_H_
#define ZBROKERS_COMMON_LOG_LIMITER_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace zb {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    // Refill period: `burst` lines may be written per period on average.
    std::chrono::nanoseconds period = std::chrono::seconds(1);
    // Lines that may be written at once after a quiet time; at least 1.
    std::uint32_t burst = 10;
  };

  LogLimiter() : LogLimiter(Options{}) {}
  explicit LogLimiter(Options options);

  // True when a line may be written at `now` (it takes one token); false
  // when the line must be dropped, which is counted.  `now` must not go
  // backwards (use a monotonic clock).
  bool Admit(Clock::time_point now);

  // Lines refused since the last SuppressedNote() or Flush(); resets it.
  std::uint64_t TakeSuppressed();

  // " (N similar lines suppressed)" when lines were refused since the last
  // report (and resets the count), else "".  Append it to an admitted line.
  std::string SuppressedNote();

  // For the periodic sweep: when lines were refused and a full period has
  // passed since the last admitted line, returns their number (and resets
  // it) so the caller can log one summary line; otherwise 0.  Ensures a flood
  // that stops is still reported.
  std::uint64_t Flush(Clock::time_point now);

  // Every line refused since construction.
  std::uint64_t total_suppressed() const { return total_suppressed_; }

 private:
  Options options_;
  // Tokens are kept as "time when the bucket is full again" to avoid
  // fractional token arithmetic: each admitted line pushes it forward by
  // period / burst.
  Clock::time_point full_at_{};
  Clock::time_point last_admit_{};
  std::chrono::nanoseconds cost_;
  std::uint64_t suppressed_ = 0;
  std::uint64_t total_suppressed_ = 0;
};

}  // namespace zb

#endif  // ZBROKERS_COMMON_LOG_LIMITER_H_
