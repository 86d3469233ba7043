// Copyright 2026 The zbrokers Authors.
//
// zb::bench: the command-line flags and the median of the plain bench
// programs (the ones that print their own numbers, not the Google Benchmark
// harnesses), so that each reads its flags the same way.
//
//   const int rounds = std::max(1, bench::IntFlag(argc, argv, "--rounds", 6));
//   const std::vector<int> sizes =
//       bench::ListFlag(argc, argv, "--sizes", {64, 16384});
//
// Contract:
//   * A flag is an argument equal to its name followed by its value as the
//     next argument ("--rounds 6"; not "--rounds=6").  The first occurrence
//     counts; a name given as the last argument, with no value, counts as
//     not given.
//   * A flag not given yields `fallback`.  Every other argument is ignored,
//     so that scripts/bench can pass Google Benchmark's flags to every
//     *_bench.
//   * Values are not validated: IntFlag reads with atoi (a value that is not
//     a number reads as 0), and the caller clamps or rejects what it cannot
//     use.  ListFlag reads "1,2,4" as {1, 2, 4}, each item with atoi; an
//     empty value is an empty list, not the fallback.
//   * Median(v) is the middle element of v sorted, the mean of the two
//     middle ones for an even count, and 0 for an empty v.
//
// Header only, no state; nothing here allocates except the returned values.

#ifndef ZBROKERS_BENCH_FLAGS_H_
#define ZBROKERS_BENCH_FLAGS_H_

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace zb::bench {

// The value of flag `name`, or nullptr when it is not given.
inline const char* FlagValue(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return nullptr;
}

inline int IntFlag(int argc, char** argv, const char* name, int fallback) {
  const char* value = FlagValue(argc, argv, name);
  return value == nullptr ? fallback : std::atoi(value);
}

inline std::string StringFlag(int argc, char** argv, const char* name,
                              std::string fallback) {
  const char* value = FlagValue(argc, argv, name);
  return value == nullptr ? fallback : std::string(value);
}

inline std::vector<int> ListFlag(int argc, char** argv, const char* name,
                                 std::vector<int> fallback) {
  const char* value = FlagValue(argc, argv, name);
  if (value == nullptr) return fallback;
  std::vector<int> out;
  for (const char* p = value; *p != '\0';) {
    out.push_back(std::atoi(p));
    while (*p != '\0' && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace zb::bench

#endif  // ZBROKERS_BENCH_FLAGS_H_
