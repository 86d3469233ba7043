// Copyright 2026 The zbrokers Authors.
//
// zb::TimerQueue with an injected clock: every rule is checked at exact
// instants, without sleeping.

#include "zbrokers/reactor/timer_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace zb {
namespace {

using std::chrono::milliseconds;
using testing::ElementsAre;
using Clock = TimerQueue::Clock;

// An arbitrary, fixed origin for the fake clock.
const Clock::time_point kT0 = Clock::time_point(std::chrono::hours(1000));

class TimerQueueTest : public testing::Test {
 protected:
  // Fires everything due at kT0 + ms; exceptions are recorded.
  int FireAt(int ms) {
    return timers_.FireDue(kT0 + milliseconds(ms),
                           [this](std::exception_ptr e) {
                             try {
                               std::rethrow_exception(e);
                             } catch (const std::exception& ex) {
                               errors_.push_back(ex.what());
                             }
                           });
  }
  // A one-shot timer at kT0 + ms that logs `name`.
  TimerId Once(int ms, std::string name) {
    return timers_.Add(kT0 + milliseconds(ms), Clock::duration::zero(),
                       [this, name] { log_.push_back(name); });
  }

  TimerQueue timers_;
  std::vector<std::string> log_;
  std::vector<std::string> errors_;
};

TEST_F(TimerQueueTest, FiresInDeadlineOrderWhateverTheInsertionOrder) {
  Once(30, "c");
  Once(10, "a");
  Once(40, "d");
  Once(20, "b");
  EXPECT_EQ(timers_.size(), 4u);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(10));
  EXPECT_EQ(FireAt(25), 2);
  EXPECT_THAT(log_, ElementsAre("a", "b"));
  EXPECT_EQ(FireAt(100), 2);
  EXPECT_THAT(log_, ElementsAre("a", "b", "c", "d"));
  EXPECT_TRUE(timers_.empty());
  EXPECT_EQ(timers_.next_deadline(), Clock::time_point::max());
}

TEST_F(TimerQueueTest, NothingFiresBeforeItsDeadline) {
  Once(10, "a");
  EXPECT_EQ(FireAt(9), 0);
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(FireAt(10), 1);  // deadline <= now is due
  EXPECT_THAT(log_, ElementsAre("a"));
}

TEST_F(TimerQueueTest, EqualDeadlinesFireInInsertionOrder) {
  // Interleave other deadlines so that the ties are not simply appended.
  Once(10, "t1");
  Once(20, "late");
  Once(10, "t2");
  Once(5, "early");
  Once(10, "t3");
  Once(10, "t4");
  FireAt(100);
  EXPECT_THAT(log_, ElementsAre("early", "t1", "t2", "t3", "t4", "late"));
}

TEST_F(TimerQueueTest, ManyRandomTimersFireSortedAndStable) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> ms(0, 50);  // many ties
  std::vector<std::pair<int, int>> expected;     // (deadline, insertion)
  std::vector<std::pair<int, int>> fired;
  for (int i = 0; i < 2000; ++i) {
    const int d = ms(rng);
    expected.emplace_back(d, i);
    timers_.Add(kT0 + milliseconds(d), Clock::duration::zero(),
                [&fired, d, i] { fired.emplace_back(d, i); });
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(FireAt(50), 2000);
  EXPECT_EQ(fired, expected);
}

TEST_F(TimerQueueTest, CancelledTimerNeverFires) {
  Once(10, "a");
  const TimerId b = Once(10, "b");
  Once(10, "c");
  EXPECT_TRUE(timers_.Cancel(b));
  EXPECT_EQ(timers_.size(), 2u);
  FireAt(10);
  EXPECT_THAT(log_, ElementsAre("a", "c"));
}

TEST_F(TimerQueueTest, CancelUnknownFiredOrCancelledIdReturnsFalse) {
  EXPECT_FALSE(timers_.Cancel(0));
  EXPECT_FALSE(timers_.Cancel(12345));
  EXPECT_FALSE(timers_.Cancel(~TimerId{0}));
  const TimerId a = Once(10, "a");
  FireAt(10);
  EXPECT_FALSE(timers_.Cancel(a));  // already fired
  const TimerId b = Once(20, "b");
  EXPECT_TRUE(timers_.Cancel(b));
  EXPECT_FALSE(timers_.Cancel(b));  // already cancelled
}

TEST_F(TimerQueueTest, StaleIdDoesNotCancelTheTimerThatReusedItsSlot) {
  const TimerId a = Once(10, "a");
  ASSERT_TRUE(timers_.Cancel(a));
  const TimerId b = Once(10, "b");  // reuses a's slot
  EXPECT_NE(a, b);
  EXPECT_NE(b, 0u);
  EXPECT_FALSE(timers_.Cancel(a));
  FireAt(10);
  EXPECT_THAT(log_, ElementsAre("b"));
}

TEST_F(TimerQueueTest, CancelFindsTheRightTimerAmongTies) {
  std::vector<TimerId> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(Once(10, std::to_string(i)));
  EXPECT_TRUE(timers_.Cancel(ids[3]));
  EXPECT_TRUE(timers_.Cancel(ids[0]));
  EXPECT_TRUE(timers_.Cancel(ids[9]));
  FireAt(10);
  EXPECT_THAT(log_, ElementsAre("1", "2", "4", "5", "6", "7", "8"));
}

TEST_F(TimerQueueTest, OneShotCancellingItselfWhileFiringReturnsFalse) {
  TimerId self = 0;
  bool cancel_result = true;
  self = timers_.Add(kT0 + milliseconds(10), Clock::duration::zero(),
                     [&] { cancel_result = timers_.Cancel(self); });
  EXPECT_EQ(FireAt(10), 1);
  EXPECT_FALSE(cancel_result);
  EXPECT_TRUE(timers_.empty());
}

TEST_F(TimerQueueTest, CallbackCancelsASiblingDueInTheSameRound) {
  TimerId sibling = 0;
  timers_.Add(kT0 + milliseconds(10), Clock::duration::zero(), [&] {
    log_.push_back("first");
    EXPECT_TRUE(timers_.Cancel(sibling));
  });
  sibling = Once(10, "sibling");  // same deadline, after "first"
  Once(5, "before");
  EXPECT_EQ(FireAt(20), 2);
  EXPECT_THAT(log_, ElementsAre("before", "first"));
  EXPECT_TRUE(timers_.empty());
}

TEST_F(TimerQueueTest, PeriodicTimerCancellingItselfStops) {
  int calls = 0;
  TimerId self = 0;
  self = timers_.Add(kT0 + milliseconds(10), milliseconds(10), [&] {
    if (++calls == 3) {
      EXPECT_TRUE(timers_.Cancel(self));
    }
  });
  for (int t = 10; t <= 100; t += 10) FireAt(t);
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(timers_.empty());
  EXPECT_FALSE(timers_.Cancel(self));
}

TEST_F(TimerQueueTest, PeriodicTimerRearmsOnItsOriginalGrid) {
  std::vector<Clock::time_point> deadlines;
  timers_.Add(kT0 + milliseconds(10), milliseconds(10),
              [&] { deadlines.push_back(timers_.next_deadline()); });
  // Fire a little late every time: the grid must not drift.
  EXPECT_EQ(FireAt(13), 1);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(20));
  EXPECT_EQ(FireAt(19), 0);
  EXPECT_EQ(FireAt(27), 1);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(30));
  EXPECT_EQ(FireAt(30), 1);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(40));
  EXPECT_EQ(timers_.size(), 1u);
}

TEST_F(TimerQueueTest, PeriodicTimerSkipsMissedPeriodsInsteadOfBursting) {
  int calls = 0;
  timers_.Add(kT0 + milliseconds(10), milliseconds(10), [&] { ++calls; });
  // 45 ms late: the deadlines 20, 30, 40 and 50 were missed.  It fires once,
  // and the next deadline is the first grid point strictly after now.
  EXPECT_EQ(FireAt(55), 1);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(60));
  // Landing exactly on a grid point: that point is not in the future, so the
  // next deadline is the one after it.
  EXPECT_EQ(FireAt(80), 1);
  EXPECT_EQ(timers_.next_deadline(), kT0 + milliseconds(90));
  EXPECT_EQ(calls, 2);
}

TEST_F(TimerQueueTest, RearmedPeriodicTimerWaitsForTheNextCall) {
  // Even with now far ahead, one call fires a periodic timer once.
  int calls = 0;
  timers_.Add(kT0, milliseconds(1), [&] { ++calls; });
  EXPECT_EQ(FireAt(1000), 1);
  EXPECT_EQ(FireAt(1000), 0);  // re-armed to 1001
  EXPECT_EQ(FireAt(1001), 1);
  EXPECT_EQ(calls, 2);
}

TEST_F(TimerQueueTest, TimersAddedDuringARoundFireInALaterRound) {
  timers_.Add(kT0 + milliseconds(10), Clock::duration::zero(), [&] {
    log_.push_back("a");
    Once(0, "past");     // deadline long gone
    Once(20, "at-now");  // due exactly at this round's now
    Once(25, "future");  // not due yet
  });
  Once(12, "b");
  EXPECT_EQ(FireAt(20), 2);
  EXPECT_THAT(log_, ElementsAre("a", "b"));
  // "past" counts as due at 20, so it queued behind the already-due "b"
  // rather than in front of it (which would have ended the round early).
  EXPECT_EQ(FireAt(20), 2);
  EXPECT_THAT(log_, ElementsAre("a", "b", "past", "at-now"));
  EXPECT_EQ(FireAt(25), 1);
  EXPECT_THAT(log_, ElementsAre("a", "b", "past", "at-now", "future"));
}

TEST_F(TimerQueueTest, PastDeadlineAddedBeforeARoundFiresInThatRound) {
  Once(20, "b");
  Once(-1000, "past");  // before any round: simply the earliest
  EXPECT_EQ(FireAt(20), 2);
  EXPECT_THAT(log_, ElementsAre("past", "b"));
}

TEST_F(TimerQueueTest, SelfReaddingCallbackCannotSpinOneRound) {
  int calls = 0;
  std::function<void()> again = [&] {
    ++calls;
    timers_.Add(kT0, Clock::duration::zero(), again);
  };
  timers_.Add(kT0, Clock::duration::zero(), again);
  EXPECT_EQ(FireAt(0), 1);
  EXPECT_EQ(FireAt(0), 1);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(timers_.size(), 1u);
}

TEST_F(TimerQueueTest, CallbackAddingManyTimersDoesNotInvalidateTheRound) {
  // Forces slots_ and queue_ to reallocate while a callback runs.
  int fired_children = 0;
  timers_.Add(kT0 + milliseconds(1), milliseconds(100), [&] {
    for (int i = 0; i < 1000; ++i) {
      timers_.Add(kT0 + milliseconds(2), Clock::duration::zero(),
                  [&] { ++fired_children; });
    }
  });
  Once(1, "sibling");
  EXPECT_EQ(FireAt(2), 2);
  EXPECT_THAT(log_, ElementsAre("sibling"));
  EXPECT_EQ(FireAt(2), 1000);
  EXPECT_EQ(fired_children, 1000);
  // The periodic timer kept its callback across the reallocation.
  // (and added another thousand children).
  EXPECT_EQ(FireAt(101), 1);
  EXPECT_EQ(timers_.size(), 1001u);
}

TEST_F(TimerQueueTest, ExceptionsGoToTheSinkAndTheRoundContinues) {
  Once(1, "a");
  timers_.Add(kT0 + milliseconds(2), Clock::duration::zero(),
              [] { throw std::runtime_error("boom"); });
  int periodic_calls = 0;
  timers_.Add(kT0 + milliseconds(3), milliseconds(10), [&] {
    ++periodic_calls;
    throw std::runtime_error("periodic boom");
  });
  Once(4, "b");
  EXPECT_EQ(FireAt(5), 4);
  EXPECT_THAT(log_, ElementsAre("a", "b"));
  EXPECT_THAT(errors_, ElementsAre("boom", "periodic boom"));
  // A periodic timer whose callback threw stays armed with its callback.
  EXPECT_EQ(FireAt(13), 1);
  EXPECT_EQ(periodic_calls, 2);
}

TEST_F(TimerQueueTest, NonPositivePeriodMeansOneShot) {
  timers_.Add(kT0, -milliseconds(5), [&] { log_.push_back("x"); });
  EXPECT_EQ(FireAt(0), 1);
  EXPECT_TRUE(timers_.empty());
}

TEST_F(TimerQueueTest, HugePeriodDoesNotWrapIntoThePast) {
  int calls = 0;
  timers_.Add(kT0, Clock::duration::max(), [&] { ++calls; });
  EXPECT_EQ(FireAt(0), 1);
  EXPECT_EQ(timers_.next_deadline(), Clock::time_point::max());
  EXPECT_EQ(FireAt(1'000'000), 0);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace zb
