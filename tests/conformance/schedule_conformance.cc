// Copyright delayq authors.
//
// Conformance tests of the schedule calls: PutSchedule, RemoveSchedule,
// ListSchedules and FireSchedule. See backend_conformance.h.

#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A schedule with every field set to something other than its default.
ScheduleRecord MakeSchedule(const std::string& name, const std::string& topic) {
  ScheduleRecord s;
  s.name = name;
  s.spec = "*/5 * * * *";
  s.topic = topic;
  s.payload = std::string("bin\0ary\xff", 8);
  s.options.time_zone = "Europe/Berlin";
  s.options.missed = MissedPolicy::All(7);
  s.options.jitter = absl::Milliseconds(1500);
  s.options.job.priority = -3;
  s.options.job.ttr = absl::Seconds(45);
  s.options.job.max_attempts = 9;
  s.options.job.backoff = Backoff::Fixed(absl::Seconds(12));
  return s;
}

std::vector<std::string> Names(const std::vector<ScheduleRecord>& schedules) {
  std::vector<std::string> names;
  for (const ScheduleRecord& s : schedules) names.push_back(s.name);
  return names;
}

// The stored schedule named `name`; fails the test when there is none.
ScheduleRecord Stored(Backend& backend, const std::string& name) {
  absl::StatusOr<std::vector<ScheduleRecord>> all = backend.ListSchedules();
  EXPECT_OK(all.status());
  if (all.ok()) {
    for (const ScheduleRecord& s : *all) {
      if (s.name == name) return s;
    }
  }
  ADD_FAILURE() << "no schedule " << name;
  return ScheduleRecord();
}

TEST_P(BackendConformanceTest, SchedulesAreStoredWholeAndListedByName) {
  const std::string topic = Topic();
  ScheduleRecord b = MakeSchedule(Topic("b"), topic);
  ScheduleRecord a = MakeSchedule(Topic("a"), topic);
  a.spec = "@every 90s";
  a.payload = "";
  a.options.time_zone = "UTC";
  a.options.missed = MissedPolicy::Skip();
  a.options.jitter = absl::ZeroDuration();
  a.options.job.backoff =
      Backoff::Exponential(absl::Milliseconds(250), absl::Minutes(3));
  ASSERT_OK(backend_->PutSchedule(b, At(absl::Seconds(1))));
  ASSERT_OK(backend_->PutSchedule(a, At(absl::Seconds(2))));

  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> all,
                       backend_->ListSchedules());
  ASSERT_THAT(Names(all), ElementsAre(a.name, b.name));
  for (const auto& [got, want, at] :
       {std::make_tuple(all[0], a, At(absl::Seconds(2))),
        std::make_tuple(all[1], b, At(absl::Seconds(1)))}) {
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.spec, want.spec);
    EXPECT_EQ(got.topic, want.topic);
    EXPECT_EQ(got.payload, want.payload);
    EXPECT_EQ(got.options.time_zone, want.options.time_zone);
    EXPECT_EQ(got.options.missed, want.options.missed);
    EXPECT_EQ(got.options.jitter, want.options.jitter);
    EXPECT_EQ(got.options.job.priority, want.options.job.priority);
    EXPECT_EQ(got.options.job.ttr, want.options.job.ttr);
    EXPECT_EQ(got.options.job.max_attempts, want.options.job.max_attempts);
    EXPECT_EQ(got.options.job.backoff, want.options.job.backoff);
    // A new schedule counts its occurrences from when it was stored.
    EXPECT_EQ(got.done_through, at);
  }
}

TEST_P(BackendConformanceTest, RemoveScheduleDeletesItOnly) {
  const std::string topic = Topic();
  const ScheduleRecord a = MakeSchedule(Topic("a"), topic);
  const ScheduleRecord b = MakeSchedule(Topic("b"), topic);
  ASSERT_OK(backend_->PutSchedule(a, kT0));
  ASSERT_OK(backend_->PutSchedule(b, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> all,
                       backend_->ListSchedules());
  ASSERT_EQ(all.size(), 2u);
  ASSERT_OK(backend_->FireSchedule(a.name, all[0].revision,
                                   At(absl::Minutes(5)),
                                   {MakeJob("a-job", topic)}, kT0));

  ASSERT_OK(backend_->RemoveSchedule(a.name, kT0));
  ASSERT_OK_AND_ASSIGN(all, backend_->ListSchedules());
  EXPECT_THAT(Names(all), ElementsAre(b.name));
  // What it enqueued stays.
  EXPECT_OK(backend_->Get("a-job").status());
  EXPECT_EQ(backend_->RemoveSchedule(a.name, kT0).code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK(backend_->RemoveSchedule(b.name, kT0));
  ASSERT_OK_AND_ASSIGN(all, backend_->ListSchedules());
  EXPECT_THAT(all, IsEmpty());
}

TEST_P(BackendConformanceTest, FireScheduleAddsItsJobsAndMovesDoneThrough) {
  const std::string topic = Topic();
  const ScheduleRecord s = MakeSchedule(Topic("s"), topic);
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> all,
                       backend_->ListSchedules());
  ASSERT_EQ(all.size(), 1u);
  const int64_t revision = all[0].revision;

  const absl::Time now = At(absl::Minutes(10));
  ASSERT_OK(backend_->FireSchedule(
      s.name, revision, At(absl::Minutes(10)),
      {MakeJob("s@5", topic, At(absl::Minutes(5))),
       MakeJob("s@10", topic, At(absl::Minutes(10) + absl::Seconds(1)))},
      now));
  ASSERT_OK_AND_ASSIGN(Job first, backend_->Get("s@5"));
  EXPECT_EQ(first.state, JobState::kReady);
  EXPECT_EQ(first.payload, "payload of s@5");
  ASSERT_OK_AND_ASSIGN(Job second, backend_->Get("s@10"));
  EXPECT_EQ(second.state, JobState::kDelayed);
  EXPECT_EQ(second.run_at, At(absl::Minutes(10) + absl::Seconds(1)));
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Minutes(10) + absl::Seconds(1)));

  ASSERT_OK_AND_ASSIGN(all, backend_->ListSchedules());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].done_through, At(absl::Minutes(10)));
  EXPECT_NE(all[0].revision, revision);
  // The ready job is reserved like any other.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 5, now));
  EXPECT_EQ(Ids(leases), std::vector<std::string>{"s@5"});
}

TEST_P(BackendConformanceTest, FireScheduleWithNoJobsPassesOccurrencesOver) {
  const ScheduleRecord s = MakeSchedule(Topic("s"), Topic());
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> all,
                       backend_->ListSchedules());
  ASSERT_OK(backend_->FireSchedule(s.name, all[0].revision, At(absl::Hours(3)),
                                   {}, At(absl::Hours(3))));
  ASSERT_OK_AND_ASSIGN(all, backend_->ListSchedules());
  EXPECT_EQ(all[0].done_through, At(absl::Hours(3)));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, IsEmpty());
}

// Two processes read the schedule at the same revision and both try to
// enqueue the same occurrence: exactly one does.
TEST_P(BackendConformanceTest, FireScheduleOfAStaleRevisionChangesNothing) {
  const std::string topic = Topic();
  const ScheduleRecord s = MakeSchedule(Topic("s"), topic);
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> seen,
                       backend_->ListSchedules());
  const int64_t revision = seen[0].revision;
  const absl::Time now = At(absl::Minutes(5));

  ASSERT_OK(backend_->FireSchedule(s.name, revision, now,
                                   {MakeJob("first", topic, now)}, now));
  EXPECT_EQ(backend_
                ->FireSchedule(s.name, revision, now,
                               {MakeJob("second", topic, now)}, now)
                .code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(backend_->Get("second").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.ready, 1);
}

TEST_P(BackendConformanceTest, PutScheduleMakesEarlierReadsStale) {
  const std::string topic = Topic();
  ScheduleRecord s = MakeSchedule(Topic("s"), topic);
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> seen,
                       backend_->ListSchedules());
  s.payload = "new";
  ASSERT_OK(backend_->PutSchedule(s, At(absl::Seconds(1))));
  EXPECT_EQ(backend_
                ->FireSchedule(s.name, seen[0].revision, At(absl::Minutes(5)),
                               {MakeJob("j", topic)}, At(absl::Minutes(5)))
                .code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(backend_->Get("j").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(BackendConformanceTest, FireScheduleWithALiveIdChangesNothing) {
  const std::string topic = Topic();
  const ScheduleRecord s = MakeSchedule(Topic("s"), topic);
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  AddOne(MakeJob("taken", topic));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> seen,
                       backend_->ListSchedules());
  const absl::Time now = At(absl::Minutes(5));
  EXPECT_EQ(
      backend_
          ->FireSchedule(s.name, seen[0].revision, now,
                         {MakeJob("free", topic), MakeJob("taken", topic)}, now)
          .code(),
      absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(backend_->Get("free").status().code(), absl::StatusCode::kNotFound);
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> after,
                       backend_->ListSchedules());
  EXPECT_EQ(after[0].done_through, kT0);
  EXPECT_EQ(after[0].revision, seen[0].revision);
}

TEST_P(BackendConformanceTest, FireScheduleOfAnUnknownNameIsNotFound) {
  EXPECT_EQ(backend_->FireSchedule("nope", 1, kT0, {}, kT0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->FireSchedule("nope", 1, kT0, {MakeJob("j", Topic())}, kT0)
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(backend_->Get("j").status().code(), absl::StatusCode::kNotFound);
}

// Storing the same spec again (every process does at its start) keeps what
// was enqueued; a new spec or time zone counts from the time it is stored.
TEST_P(BackendConformanceTest, PutScheduleKeepsDoneThroughUnlessRespecified) {
  const std::string topic = Topic();
  ScheduleRecord s = MakeSchedule(Topic("s"), topic);
  ASSERT_OK(backend_->PutSchedule(s, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> seen,
                       backend_->ListSchedules());
  ASSERT_OK(backend_->FireSchedule(s.name, seen[0].revision,
                                   At(absl::Minutes(5)), {},
                                   At(absl::Minutes(5))));

  s.payload = "other payload";
  s.options.job.priority = 4;
  s.options.missed = MissedPolicy::Once();
  ASSERT_OK(backend_->PutSchedule(s, At(absl::Hours(1))));
  ScheduleRecord got = Stored(*backend_, s.name);
  EXPECT_EQ(got.done_through, At(absl::Minutes(5)));
  EXPECT_EQ(got.payload, "other payload");
  EXPECT_EQ(got.options.job.priority, 4);
  EXPECT_EQ(got.options.missed, MissedPolicy::Once());

  s.spec = "0 * * * *";
  ASSERT_OK(backend_->PutSchedule(s, At(absl::Hours(2))));
  got = Stored(*backend_, s.name);
  EXPECT_EQ(got.spec, "0 * * * *");
  EXPECT_EQ(got.done_through, At(absl::Hours(2)));

  s.options.time_zone = "America/New_York";
  ASSERT_OK(backend_->PutSchedule(s, At(absl::Hours(3))));
  got = Stored(*backend_, s.name);
  EXPECT_EQ(got.options.time_zone, "America/New_York");
  EXPECT_EQ(got.done_through, At(absl::Hours(3)));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
