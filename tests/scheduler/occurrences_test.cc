// Copyright delayq authors.
//
// The pure part of running schedules: which occurrences a schedule has
// between two times, and the ids and jitter of their jobs.

#include "src/scheduler/occurrences.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kDay = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01Z

ScheduleSpec Spec(const char* text) {
  absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse(text);
  EXPECT_OK(spec.status());
  return *spec;
}

TEST(LatestOccurrencesTest, AreTheLastOnesInTheRangeEarliestFirst) {
  const ScheduleSpec hourly = Spec("0 * * * *");
  const absl::TimeZone utc = absl::UTCTimeZone();
  auto hours = [](std::vector<absl::Time> ts) {
    std::vector<int64_t> out;
    for (absl::Time t : ts) out.push_back((t - kDay) / absl::Hours(1));
    return out;
  };
  // (after, through]: 00:00 is not after itself; 05:00 is through.
  EXPECT_THAT(
      hours(LatestOccurrences(hourly, utc, kDay, kDay + absl::Hours(5), 3)),
      ElementsAre(3, 4, 5));
  EXPECT_THAT(
      hours(LatestOccurrences(hourly, utc, kDay, kDay + absl::Hours(5), 100)),
      ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(LatestOccurrences(hourly, utc, kDay, kDay + absl::Minutes(59), 3),
              IsEmpty());
  EXPECT_THAT(LatestOccurrences(hourly, utc, kDay, kDay, 3), IsEmpty());
}

// Ten years of a schedule every second, missed: the last three, found
// without walking through the 315 million in between.
TEST(LatestOccurrencesTest, LookBackFromTheEnd) {
  const absl::Time end = kDay + absl::Hours(24 * 3650);
  EXPECT_THAT(
      LatestOccurrences(Spec("@every 1s"), absl::UTCTimeZone(), kDay, end, 3),
      ElementsAre(end - absl::Seconds(2), end - absl::Seconds(1), end));
}

TEST(LatestOccurrencesTest, NoneForASpecThatNeverMatches) {
  // June 31st, from the beginning of time.
  const ScheduleSpec never = Spec("59 23 31 6 *");
  EXPECT_THAT(LatestOccurrences(never, absl::UTCTimeZone(),
                                absl::InfinitePast(), kDay, 3),
              IsEmpty());
  EXPECT_THAT(PlanOccurrences(never, absl::UTCTimeZone(), absl::InfinitePast(),
                              kDay, MissedPolicy::All(3))
                  .run,
              IsEmpty());
}

TEST(LatestOccurrencesTest, NoneBeforeTheEndOfTime) {
  // There is no latest one (the search back from InfiniteFuture never
  // ended).
  EXPECT_THAT(LatestOccurrences(Spec("* * * * * *"), absl::UTCTimeZone(), kDay,
                                absl::InfiniteFuture(), 3),
              IsEmpty());
  EXPECT_THAT(LatestOccurrences(Spec("0 0 30 2 *"), absl::UTCTimeZone(), kDay,
                                absl::InfiniteFuture(), 3),
              IsEmpty());
}

TEST(PlanOccurrencesTest, OnTimeRunsAndMissedOnesAsThePolicySays) {
  const ScheduleSpec hourly = Spec("0 * * * *");
  const absl::TimeZone utc = absl::UTCTimeZone();
  // Just after 03:00 (on time); 01:00 and 02:00 were missed.
  const absl::Time now = kDay + absl::Hours(3) + absl::Milliseconds(400);
  OccurrencePlan plan =
      PlanOccurrences(hourly, utc, kDay, now, MissedPolicy::Skip());
  EXPECT_THAT(plan.run, ElementsAre(kDay + absl::Hours(3)));
  EXPECT_EQ(plan.through, kDay + absl::Hours(3));
  plan = PlanOccurrences(hourly, utc, kDay, now, MissedPolicy::Once());
  EXPECT_THAT(plan.run,
              ElementsAre(kDay + absl::Hours(2), kDay + absl::Hours(3)));
  // Late: everything found was missed.
  plan = PlanOccurrences(hourly, utc, kDay, now + absl::Minutes(1),
                         MissedPolicy::Skip());
  EXPECT_THAT(plan.run, IsEmpty());
  EXPECT_EQ(plan.through, kDay + absl::Hours(3));
  // Nothing due.
  plan = PlanOccurrences(hourly, utc, kDay, kDay + absl::Minutes(30),
                         MissedPolicy::All(5));
  EXPECT_THAT(plan.run, IsEmpty());
  EXPECT_EQ(plan.through, absl::InfinitePast());
}

TEST(OccurrenceIdTest, IsTheNameAndTheTimeInUtc) {
  EXPECT_EQ(OccurrenceId("nightly", kDay + absl::Hours(3)),
            "nightly@2026-01-01T03:00:00Z");
  EXPECT_EQ(OccurrenceId("fast", kDay + absl::Milliseconds(1500)),
            "fast@2026-01-01T00:00:01.5Z");
}

TEST(JitterOfTest, IsWithinTheRangeAndFixedByNameAndTime) {
  const absl::Duration jitter = absl::Minutes(5);
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const absl::Time at = kDay + absl::Minutes(i);
    const absl::Duration a = JitterOf("a", at, jitter);
    EXPECT_GE(a, absl::ZeroDuration());
    EXPECT_LT(a, jitter);
    EXPECT_EQ(a, JitterOf("a", at, jitter));
    if (a != JitterOf("b", at, jitter)) ++differ;
  }
  EXPECT_GT(differ, 90);
  EXPECT_EQ(JitterOf("a", kDay, absl::ZeroDuration()), absl::ZeroDuration());
  // The same in every process and build (FNV-1a of the name and the
  // occurrence's µs, little-endian, modulo the range in µs).
  EXPECT_EQ(JitterOf("a", kDay, jitter), absl::Microseconds(13505081));
}

}  // namespace
}  // namespace internal
}  // namespace delayq
