// Copyright 2026 The zbrokers Authors.
//
// zb::test::Must: the value of a StatusOr a test cannot go on without, for
// the Create() factories.
//
//   std::unique_ptr<zb::MdpWorker> worker =
//       zb::test::Must(zb::MdpWorker::Create(reactor, ctx, ep, "echo", h));
//
// A failed StatusOr throws std::runtime_error naming the status and the
// caller's line; GoogleTest reports an exception thrown in a test body as
// that test's failure and carries on with the next test.

#ifndef ZBROKERS_TEST_TESTING_MUST_H_
#define ZBROKERS_TEST_TESTING_MUST_H_

#include <source_location>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace zb::test {

template <typename T>
T Must(absl::StatusOr<T> value,
       std::source_location where = std::source_location::current()) {
  if (!value.ok()) {
    throw std::runtime_error(absl::StrCat(where.file_name(), ":", where.line(),
                                          ": ", value.status().ToString()));
  }
  return *std::move(value);
}

}  // namespace zb::test

#endif  // ZBROKERS_TEST_TESTING_MUST_H_
