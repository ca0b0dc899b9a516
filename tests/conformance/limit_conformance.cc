// Copyright delayq authors.
//
// Conformance tests of topic limits: a rate (token bucket) and a
// concurrency cap checked inside Reserve(), and the report of when a
// limited topic may be reserved again. See backend_conformance.h. The jobs
// of a test share a "{tag}" in their ids, so a store that keeps a topic in
// parts keeps them in one, and the tests expect that part's share of the
// limit (Share(); the limit itself on most stores).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TopicLimit Rate(int64_t rate, absl::Duration period, int64_t burst = 1) {
  TopicLimit limit;
  limit.rate = rate;
  limit.period = period;
  limit.burst = burst;
  return limit;
}

TopicLimit Cap(int64_t concurrency) {
  TopicLimit limit;
  limit.concurrency = concurrency;
  return limit;
}

// Reserves up to `max` of `topic` at `now`; returns how many, and the
// report's limited_until in *until.
int ReserveCount(Backend& backend, const std::string& topic, int max,
                 absl::Time now, absl::Time* until) {
  ReserveReport report;
  absl::StatusOr<std::vector<Lease>> leases =
      backend.Reserve(topic, max, now, &report);
  EXPECT_OK(leases.status());
  *until = report.limited_until;
  return leases.ok() ? static_cast<int>(leases->size()) : -1;
}

// The spacing of a rate limit's reservations.
absl::Duration Gap(const TopicLimit& limit) {
  return limit.period / limit.rate;
}

// `n` ready jobs of `topic`, ttr 30 s, whose ids share the tag "{topic}".
std::vector<NewJob> ReadyJobs(const std::string& topic, int n) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    NewJob job;
    job.id = absl::StrCat("{", topic, "}-", i);
    job.topic = topic;
    job.payload = "p";
    job.ttr = absl::Seconds(30);
    job.run_at = kT0;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST_P(BackendConformanceTest, ARateLimitSpacesReservationsAndSaysWhenNext) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add(ReadyJobs(topic, 5), kT0));
  ASSERT_OK(backend_->SetLimit(topic, Rate(2, absl::Seconds(1)), kT0));
  // 500 ms apart on a store that enforces the limit as set.
  const absl::Duration gap = Gap(Share(Rate(2, absl::Seconds(1))));
  absl::Time until;
  EXPECT_EQ(ReserveCount(*backend_, topic, 10, kT0, &until), 1);
  EXPECT_EQ(until, kT0 + gap);
  EXPECT_EQ(ReserveCount(*backend_, topic, 10,
                         kT0 + gap - absl::Milliseconds(1), &until),
            0);
  EXPECT_EQ(until, kT0 + gap);
  EXPECT_EQ(ReserveCount(*backend_, topic, 10, kT0 + gap, &until), 1);
  EXPECT_EQ(until, kT0 + 2 * gap);
  // After a quiet spell a burst of 1 still lets one through at a time.
  EXPECT_EQ(ReserveCount(*backend_, topic, 10, kT0 + 10 * gap, &until), 1);
  EXPECT_EQ(until, kT0 + 11 * gap);
}

TEST_P(BackendConformanceTest, ABurstLetsThatManyGoAtOnce) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add(ReadyJobs(topic, 6), kT0));
  ASSERT_OK(backend_->SetLimit(topic, Rate(10, absl::Seconds(1), 3), kT0));
  // 3 at once, then one per 100 ms, on a store that enforces it as set.
  const TopicLimit share = Share(Rate(10, absl::Seconds(1), 3));
  const absl::Duration gap = Gap(share);
  absl::Time until;
  EXPECT_EQ(ReserveCount(*backend_, topic, 10, kT0, &until), share.burst);
  EXPECT_EQ(until, kT0 + gap);
  EXPECT_EQ(ReserveCount(*backend_, topic, 10, kT0 + gap, &until), 1);
  EXPECT_EQ(until, kT0 + 2 * gap);
}

TEST_P(BackendConformanceTest, AConcurrencyCapCountsTheReservedJobs) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add(ReadyJobs(topic, 4), kT0));
  ASSERT_OK(backend_->SetLimit(topic, Cap(2), kT0));
  const int cap = static_cast<int>(Share(Cap(2)).concurrency);
  ReserveReport report;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 5, kT0, &report));
  ASSERT_EQ(static_cast<int>(leases.size()), cap);
  EXPECT_EQ(report.limited_until, absl::InfiniteFuture());
  absl::Time until;
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, kT0, &until), 0);
  EXPECT_EQ(until, absl::InfiniteFuture());
  ASSERT_OK(
      backend_->Ack(leases[0].job.id, leases[0].token, /*result=*/"", kT0));
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, kT0, &until), 1);
  // A lease that ran out no longer counts: the reserve moves it first.
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, At(absl::Seconds(30)), &until),
            cap);
}

TEST_P(BackendConformanceTest, ALimitThatHoldsNothingBackIsNotReported) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add(ReadyJobs(topic, 1), kT0));
  ASSERT_OK(backend_->SetLimit(topic, Rate(1, absl::Seconds(1)), kT0));
  absl::Time until;
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, kT0, &until), 1);
  EXPECT_EQ(until, absl::InfinitePast());
  // Nor does a paused topic report its limit.
  ASSERT_OK(backend_->Add(ReadyJobs(Topic("paused"), 1), kT0));
  ASSERT_OK(backend_->SetLimit(Topic("paused"), Cap(1), kT0));
  ASSERT_OK(backend_->SetPaused(Topic("paused"), true, kT0));
  EXPECT_EQ(ReserveCount(*backend_, Topic("paused"), 5, kT0, &until), 0);
  EXPECT_EQ(until, absl::InfinitePast());
}

TEST_P(BackendConformanceTest, LimitsAreListedReplacedAndCleared) {
  TopicLimit both = Rate(50, absl::Seconds(1), 5);
  both.concurrency = 10;
  ASSERT_OK(backend_->SetLimit("b.topic", both, kT0));
  ASSERT_OK(backend_->SetLimit("a.topic", Cap(3), kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<LimitedTopic> limits, backend_->Limits());
  ASSERT_EQ(limits.size(), 2u);
  EXPECT_EQ(limits[0].topic, "a.topic");
  EXPECT_EQ(limits[0].limit, Cap(3));
  EXPECT_EQ(limits[1].topic, "b.topic");
  EXPECT_EQ(limits[1].limit, both);

  ASSERT_OK(backend_->SetLimit("a.topic", Cap(4), kT0));
  ASSERT_OK(backend_->ClearLimit("b.topic", kT0));
  ASSERT_OK(backend_->ClearLimit("never.limited", kT0));
  ASSERT_OK_AND_ASSIGN(limits, backend_->Limits());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].topic, "a.topic");
  EXPECT_EQ(limits[0].limit, Cap(4));
}

TEST_P(BackendConformanceTest, ReplacingALimitKeepsItsBucket) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add(ReadyJobs(topic, 3), kT0));
  ASSERT_OK(backend_->SetLimit(topic, Rate(1, absl::Seconds(10)), kT0));
  const absl::Duration gap = Gap(Share(Rate(1, absl::Seconds(10))));
  absl::Time until;
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, kT0, &until), 1);
  ASSERT_OK(backend_->SetLimit(topic, Rate(1, absl::Seconds(10)), kT0));
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, At(absl::Seconds(1)), &until), 0);
  EXPECT_EQ(until, kT0 + gap);
  ASSERT_OK(backend_->ClearLimit(topic, kT0));
  EXPECT_EQ(ReserveCount(*backend_, topic, 5, At(absl::Seconds(1)), &until), 2);
  EXPECT_EQ(until, absl::InfinitePast());
}

}  // namespace
}  // namespace testing
}  // namespace delayq
