// Copyright 2026 The zbrokers Authors.

#include "tools/latency/cache_evictor.h"

namespace zb::latency {

CacheEvictor::CacheEvictor(std::size_t bytes)
    : buffer_((bytes + kLineBytes - 1) / kLineBytes * kLineBytes, 0) {}

void CacheEvictor::Evict() {
  // volatile: the writes are the point, and nothing reads them back.
  volatile std::uint8_t* p = buffer_.data();
  const std::size_t n = buffer_.size();
  for (std::size_t i = 0; i < n; i += kLineBytes) {
    p[i] = static_cast<std::uint8_t>(p[i] + 1);
  }
}

}  // namespace zb::latency
