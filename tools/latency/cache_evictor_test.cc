// Copyright 2026 The zbrokers Authors.

#include "tools/latency/cache_evictor.h"

#include <cstddef>
#include <cstdint>

#include "gtest/gtest.h"

namespace zb::latency {
namespace {

TEST(CacheEvictorTest, EachEvictWritesEveryLineOfTheBuffer) {
  CacheEvictor evictor(1000);  // rounded up to 16 lines
  ASSERT_EQ(evictor.bytes(), 16 * CacheEvictor::kLineBytes);
  for (int round = 1; round <= 3; ++round) {
    evictor.Evict();
    const auto& b = evictor.buffer();
    for (std::size_t i = 0; i < b.size(); ++i) {
      // The first byte of each line counts the rounds; the rest are
      // untouched.
      const std::uint8_t want = i % CacheEvictor::kLineBytes == 0 ? round : 0;
      ASSERT_EQ(b[i], want) << "byte " << i << " after round " << round;
    }
  }
}

TEST(CacheEvictorTest, ZeroBytesEvictsNothing) {
  CacheEvictor evictor(0);
  EXPECT_EQ(evictor.bytes(), 0u);
  evictor.Evict();  // must not touch anything
  EXPECT_TRUE(evictor.buffer().empty());
}

}  // namespace
}  // namespace zb::latency
