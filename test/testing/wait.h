// Copyright 2026 The zbrokers Authors.
//
// Bounded waits for tests.  Nothing here asserts on timing: a limit is how
// long a test waits before it gives up and fails, chosen generously for a
// loaded machine.

#ifndef TEST_TESTING_WAIT_H_
#define TEST_TESTING_WAIT_H_

#include <chrono>
#include <functional>

#include "zbrokers/reactor/reactor.h"

namespace zb::test {

// Runs `reactor` on the calling thread (its owner thread) one step of at
// most `step` at a time until done() holds or `limit` has passed; returns
// done().  A failing step is a test failure (EXPECT), not a reason to stop.
bool RunUntil(Reactor& reactor, const std::function<bool()>& done,
              std::chrono::milliseconds limit = std::chrono::seconds(5),
              std::chrono::milliseconds step = std::chrono::milliseconds(10));

// Runs `reactor` on the calling thread for `d`, whatever happens.
void RunFor(Reactor& reactor, std::chrono::milliseconds d);

// Polls pred() every 2 ms, from the calling thread, until it holds or
// `limit` has passed; returns pred().  For state that other threads change.
bool WaitFor(const std::function<bool()>& pred,
             std::chrono::milliseconds limit = std::chrono::seconds(10));

// For races: runs first() on a thread of its own and, after a pause that
// varies with `round` (0, 250, 500, 750 or 1000 µs), second() on the
// calling thread; returns when both have returned.
void RunBothAtOnce(int round, const std::function<void()>& first,
                   const std::function<void()>& second);

}  // namespace zb::test

#endif  // TEST_TESTING_WAIT_H_
