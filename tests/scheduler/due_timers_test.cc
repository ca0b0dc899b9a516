// Copyright delayq authors.
//
// DueTimers: the scheduler's three timers, rounded to its tick.

#include "src/scheduler/due_timers.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace delayq {
namespace internal {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);
const absl::Duration kTick = absl::Milliseconds(1);

absl::Time At(double ms) { return kT0 + absl::Microseconds(ms * 1000); }

TEST(DueTimersTest, NeverEarlyAndAtMostOneTickLate) {
  DueTimers timers(kT0, kTick);
  EXPECT_EQ(timers.NextWake(), absl::InfiniteFuture());
  timers.Arm(At(10.5));
  EXPECT_EQ(timers.LocalAt(), At(10.5));
  EXPECT_EQ(timers.NextWake(), At(11));  // rounded up to the tick
  EXPECT_EQ(timers.Advance(At(10.9)), 0u);
  EXPECT_EQ(timers.Advance(At(11)), 1u);
  EXPECT_EQ(timers.LocalAt(), absl::InfiniteFuture());
  EXPECT_EQ(timers.NextWake(), absl::InfiniteFuture());
  EXPECT_EQ(timers.Advance(At(50)), 0u) << "a fired timer fires once";
}

TEST(DueTimersTest, LocalAndNewsKeepTheEarliestThePollIsReplaced) {
  DueTimers timers(kT0, kTick);
  timers.Arm(At(30));
  timers.Arm(At(40));  // later: no change
  EXPECT_EQ(timers.LocalAt(), At(30));
  timers.ArmNews(At(25));
  timers.ArmNews(At(35));
  EXPECT_EQ(timers.NextWake(), At(25));
  timers.ArmPoll(At(5));
  EXPECT_EQ(timers.NextWake(), At(5));
  timers.ArmPoll(At(50));  // replaces 5
  EXPECT_EQ(timers.NextWake(), At(25));
  EXPECT_EQ(timers.Advance(At(29)), 1u);  // the news
  EXPECT_EQ(timers.NextWake(), At(30));
  EXPECT_EQ(timers.Advance(At(60)), 2u);  // the local one and the poll
  EXPECT_EQ(timers.NextWake(), absl::InfiniteFuture());
}

TEST(DueTimersTest, TheirTimeNeverGoesBack) {
  DueTimers timers(kT0, kTick);
  EXPECT_EQ(timers.Advance(At(20)), 0u);
  timers.Arm(At(5));  // already past
  EXPECT_EQ(timers.NextWake(), At(20));
  EXPECT_EQ(timers.Advance(At(19)), 0u);
  EXPECT_EQ(timers.Advance(At(20)), 1u);
}

}  // namespace
}  // namespace internal
}  // namespace delayq
