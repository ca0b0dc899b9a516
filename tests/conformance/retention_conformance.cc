// Copyright delayq authors.
//
// Conformance tests of done jobs (JobOptions::keep_for, Backend::Ack()):
// an acknowledged job with a keep_for stays, done, with its result, until
// its time is up or its topic keeps too many; dead jobs keep when they
// died. See backend_conformance.h.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;
constexpr absl::StatusCode kRefused = absl::StatusCode::kFailedPrecondition;

// A job kept `keep_for` once acknowledged, its topic keeping `keep_at_most`.
NewJob Kept(NewJob job, absl::Duration keep_for, int keep_at_most = 100) {
  job.keep_for = keep_for;
  job.keep_at_most = keep_at_most;
  return job;
}

TEST_P(BackendConformanceTest, AnAcknowledgedJobWithKeepForStaysDone) {
  const std::string topic = Topic();
  const Lease lease =
      AddAndReserve(Kept(MakeJob("{o}kept", topic), absl::Hours(1)), kT0);
  ASSERT_OK(backend_->Ack("{o}kept", lease.token, "the answer",
                          At(absl::Seconds(3))));

  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("{o}kept"));
  EXPECT_EQ(job.state, JobState::kDone);
  EXPECT_EQ(job.result, "the answer");
  EXPECT_EQ(job.finished_at, At(absl::Seconds(3)));
  EXPECT_EQ(job.deadline, absl::InfinitePast());
  EXPECT_EQ(job.attempts, 1);
  EXPECT_EQ(job.payload, lease.job.payload);
  EXPECT_EQ(job.keep_for, absl::Hours(1));
  EXPECT_EQ(job.keep_at_most, 100);

  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.done, 1);
  EXPECT_EQ(stats.total(), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> done,
                       backend_->List(topic, JobState::kDone, 10));
  EXPECT_THAT(Ids(done), ElementsAre("{o}kept"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, ::testing::Contains(topic));
  // A done job is never due, and nothing is left to reserve.
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(absl::InfiniteFuture()));
  EXPECT_THAT(backend_->Reserve(topic, 1, At(absl::Seconds(4))),
              IsOkAndHolds(IsEmpty()));
}

TEST_P(BackendConformanceTest, ADoneJobKeepsItsIdAndRefusesWhatMovesJobs) {
  const std::string topic = Topic();
  const Lease lease =
      AddAndReserve(Kept(MakeJob("{o}kept", topic), absl::Hours(1)), kT0);
  ASSERT_OK(backend_->Ack("{o}kept", lease.token, "r", kT0));

  EXPECT_THAT(backend_->Add({MakeJob("{o}kept", topic)}, At(absl::Seconds(1))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(backend_->KickJob("{o}kept", kT0), StatusIs(kRefused));
  EXPECT_THAT(backend_->PromoteJob("{o}kept", kT0), StatusIs(kRefused));
  ExpectStale("{o}kept", lease.token, At(absl::Seconds(1)));
  EXPECT_THAT(backend_->Get("{o}kept"),
              IsOkAndHolds(::testing::Field(&Job::state, JobState::kDone)));

  ASSERT_OK(backend_->Cancel("{o}kept", At(absl::Seconds(2))));
  EXPECT_THAT(backend_->Get("{o}kept"), StatusIs(kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.done, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, ::testing::Not(::testing::Contains(topic)));
}

TEST_P(BackendConformanceTest, AJobWithoutKeepForLeavesOnAckResultAndAll) {
  const std::string topic = Topic();
  const Lease lease = AddAndReserve(MakeJob("{o}gone", topic), kT0);
  ASSERT_OK(backend_->Ack("{o}gone", lease.token, "unkept", kT0));
  EXPECT_THAT(backend_->Get("{o}gone"), StatusIs(kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.done, 0);
}

TEST_P(BackendConformanceTest, DoneJobsLeaveWhenTheirTimeIsUp) {
  const std::string topic = Topic();
  const Lease a =
      AddAndReserve(Kept(MakeJob("{o}a", topic), absl::Seconds(10)), kT0);
  const Lease b =
      AddAndReserve(Kept(MakeJob("{o}b", topic), absl::Seconds(20)), kT0);
  ASSERT_OK(backend_->Ack("{o}a", a.token, "", kT0));
  ASSERT_OK(backend_->Ack("{o}b", b.token, "", kT0));

  // Before its time, a store call keeps it; at its time, PromoteDue() lets
  // it go.
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(9)), 100).status());
  EXPECT_OK(backend_->Get("{o}a").status());
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(10)), 100).status());
  EXPECT_THAT(backend_->Get("{o}a"), StatusIs(kNotFound));
  EXPECT_OK(backend_->Get("{o}b").status());
  // Its id is free again.
  ASSERT_OK(backend_->Add({MakeJob("{o}a", topic, At(absl::Hours(1)))},
                          At(absl::Seconds(11))));

  // An Ack() of its topic lets the next go.
  const Lease c = AddAndReserve(MakeJob("{o}c", topic), At(absl::Seconds(20)));
  ASSERT_OK(backend_->Ack("{o}c", c.token, "", At(absl::Seconds(20))));
  EXPECT_THAT(backend_->Get("{o}b"), StatusIs(kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.done, 0);
  EXPECT_EQ(stats.delayed, 1);
}

TEST_P(BackendConformanceTest, ATopicKeepsAtMostItsNewestDoneJobs) {
  const std::string topic = Topic();
  for (int i = 1; i <= 3; ++i) {
    const std::string id = "{o}done-" + std::to_string(i);
    const absl::Time at = At(absl::Seconds(i));
    const Lease lease =
        AddAndReserve(Kept(MakeJob(id, topic, at), absl::Hours(1), 2), at);
    ASSERT_OK(backend_->Ack(id, lease.token, "r" + std::to_string(i), at));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Job> done,
                       backend_->List(topic, JobState::kDone, 10));
  EXPECT_THAT(Ids(done), ElementsAre("{o}done-2", "{o}done-3"));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].result, "r3");
  EXPECT_THAT(backend_->Get("{o}done-1"), StatusIs(kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.done, 2);
}

TEST_P(BackendConformanceTest, AckBatchKeepsJobsWithoutAResult) {
  const std::string topic = Topic();
  const Lease lease =
      AddAndReserve(Kept(MakeJob("{o}batch", topic), absl::Hours(1)), kT0);
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch({lease}, At(absl::Seconds(1))));
  ASSERT_EQ(acked.size(), 1u);
  EXPECT_OK(acked[0]);
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("{o}batch"));
  EXPECT_EQ(job.state, JobState::kDone);
  EXPECT_EQ(job.result, "");
  EXPECT_EQ(job.finished_at, At(absl::Seconds(1)));
}

TEST_P(BackendConformanceTest, DeadJobsKeepWhenTheyDied) {
  const std::string topic = Topic();
  NewJob failing = MakeJob("{o}failed", topic);
  failing.max_attempts = 1;
  const Lease f = AddAndReserve(failing, kT0);
  ASSERT_OK(backend_
                ->Fail("{o}failed", f.token, "boom", At(absl::Seconds(5)),
                       At(absl::Seconds(2)))
                .status());
  ASSERT_OK_AND_ASSIGN(Job dead, backend_->Get("{o}failed"));
  EXPECT_EQ(dead.state, JobState::kDead);
  EXPECT_EQ(dead.finished_at, At(absl::Seconds(2)));

  NewJob expiring = MakeJob("{o}expired", topic);
  expiring.max_attempts = 1;
  expiring.ttr = absl::Seconds(10);
  AddAndReserve(expiring, kT0);
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(12)), 100).status());
  ASSERT_OK_AND_ASSIGN(dead, backend_->Get("{o}expired"));
  EXPECT_EQ(dead.state, JobState::kDead);
  EXPECT_EQ(dead.finished_at, At(absl::Seconds(12)));

  // A live job has not finished.
  AddOne(MakeJob("{o}waiting", topic, At(absl::Hours(1))));
  ASSERT_OK_AND_ASSIGN(Job waiting, backend_->Get("{o}waiting"));
  EXPECT_EQ(waiting.finished_at, absl::InfinitePast());
}

}  // namespace
}  // namespace testing
}  // namespace delayq
