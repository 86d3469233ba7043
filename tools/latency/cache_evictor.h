// Copyright 2026 The zbrokers Authors.
//
// Evicting the CPU caches before a round trip, for --evict-cache.
//
// On one core the latency test's working set (every worker's sockets,
// libzmq pipes and engines, kernel socket buffers and the brokers' own
// records) stays in the core's caches between round trips while it is
// small, and stops fitting as workers are added: the first steps run
// warm, the last ones cold, and the latency curve bends whoever brokers
// (docs/performance.md, "What bends the one-core tcp curve").  Writing a
// buffer larger than the caches before each round trip starts every round
// trip with caches that hold none of that working set.  (What a round
// trip touches twice, on the way out and back, still misses only once
// its working set outgrows the caches: that part of the bend stays.)
//
//   CacheEvictor evictor(8 << 20);
//   for (...) { evictor.Evict(); const auto t0 = Clock::now(); ... }
//
// Thread-safety: one object per thread (each client has its own).

#ifndef TOOLS_LATENCY_CACHE_EVICTOR_H_
#define TOOLS_LATENCY_CACHE_EVICTOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zb::latency {

class CacheEvictor {
 public:
  // A cache line on x86-64 and on most other targets.
  static constexpr std::size_t kLineBytes = 64;

  // Evicts with a buffer of `bytes` (rounded up to whole lines); 0: Evict()
  // does nothing.  Allocates and touches the buffer once, here.
  explicit CacheEvictor(std::size_t bytes);

  // Writes one byte of every line of the buffer, so that each line is
  // brought in (and the lines it displaces are evicted) in the order of
  // the buffer.
  void Evict();

  std::size_t bytes() const { return buffer_.size(); }
  // The buffer, to check that Evict() wrote every line.
  const std::vector<std::uint8_t>& buffer() const { return buffer_; }

 private:
  std::vector<std::uint8_t> buffer_;
};

}  // namespace zb::latency

#endif  // TOOLS_LATENCY_CACHE_EVICTOR_H_
