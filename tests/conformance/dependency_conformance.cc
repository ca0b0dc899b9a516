// Copyright delayq authors.
//
// Conformance tests of jobs that wait for others: held waiting until every
// dependency is acknowledged, then ready (or delayed) exactly once; a
// dependency's death or departure applies the waiting job's policy in the
// same step. See dependency_conformance.h.

#include "tests/conformance/dependency_conformance.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr absl::StatusCode kNotFound = absl::StatusCode::kNotFound;

// `job` waiting for `after`, with `policy` for a failed dependency.
NewJob After(NewJob job, std::vector<std::string> after,
             DependencyFailure policy = DependencyFailure::kFail) {
  job.after = std::move(after);
  job.on_dependency_failure = policy;
  return job;
}

// A job that goes dead at its first failure.
NewJob OneAttempt(NewJob job) {
  job.max_attempts = 1;
  return job;
}

JobState StateOf(Backend& backend, absl::string_view id) {
  absl::StatusOr<Job> job = backend.Get(id);
  EXPECT_OK(job.status()) << id;
  return job.ok() ? job->state : JobState::kDead;
}

TEST_P(DependencyConformanceTest, AJobWaitsUntilEveryDependencyIsDone) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}a", topic));
  AddOne(MakeJob("{f}b", topic));
  AddOne(After(MakeJob("{f}w", topic), {"{f}a", "{f}b"}));

  ASSERT_OK_AND_ASSIGN(Job waiting, backend_->Get("{f}w"));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.waiting, 1);
  EXPECT_EQ(stats.ready, 2);
  EXPECT_EQ(stats.total(), 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> listed,
                       backend_->List(topic, JobState::kWaiting, 10));
  EXPECT_THAT(Ids(listed), ElementsAre("{f}w"));
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(absl::InfiniteFuture()));

  // Only the dependencies can be reserved.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, At(absl::Seconds(1))));
  ASSERT_THAT(Ids(leases), UnorderedElementsAre("{f}a", "{f}b"));
  const Lease& a = leases[0].job.id == "{f}a" ? leases[0] : leases[1];
  const Lease& b = leases[0].job.id == "{f}a" ? leases[1] : leases[0];

  ASSERT_OK(backend_->Ack("{f}a", a.token, "", At(absl::Seconds(2))));
  EXPECT_EQ(StateOf(*backend_, "{f}w"), JobState::kWaiting);
  EXPECT_THAT(backend_->Reserve(topic, 10, At(absl::Seconds(2))),
              IsOkAndHolds(IsEmpty()));

  ASSERT_OK(backend_->Ack("{f}b", b.token, "", At(absl::Seconds(3))));
  EXPECT_EQ(StateOf(*backend_, "{f}w"), JobState::kReady);
  ASSERT_OK_AND_ASSIGN(stats, backend_->Stats(topic));
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.ready, 1);
  ASSERT_OK_AND_ASSIGN(leases,
                       backend_->Reserve(topic, 10, At(absl::Seconds(4))));
  EXPECT_THAT(Ids(leases), ElementsAre("{f}w"));
  EXPECT_THAT(backend_->Reserve(topic, 10, At(absl::Seconds(5))),
              IsOkAndHolds(IsEmpty()));
}

TEST_P(DependencyConformanceTest, DependenciesAckedInOneBatchReleaseOnce) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}a", topic));
  AddOne(MakeJob("{f}b", topic));
  AddOne(After(MakeJob("{f}w", Topic("parent")), {"{f}a", "{f}b"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 2u);
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch(leases, At(absl::Seconds(2))));
  for (const absl::Status& s : acked) EXPECT_OK(s);

  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> parent,
      backend_->Reserve(Topic("parent"), 10, At(absl::Seconds(3))));
  EXPECT_THAT(Ids(parent), ElementsAre("{f}w"));
  EXPECT_THAT(backend_->Reserve(Topic("parent"), 10, At(absl::Seconds(4))),
              IsOkAndHolds(IsEmpty()));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(Topic("parent")));
  EXPECT_EQ(stats.reserved, 1);
  EXPECT_EQ(stats.total(), 1);
}

TEST_P(DependencyConformanceTest, ADoneDependencyCountsAsMet) {
  const std::string topic = Topic();
  NewJob kept = MakeJob("{f}kept", topic);
  kept.keep_for = absl::Hours(1);
  kept.keep_at_most = 10;
  const Lease lease = AddAndReserve(kept, kT0);
  ASSERT_OK(backend_->Ack("{f}kept", lease.token, "42", At(absl::Seconds(1))));

  AddOne(After(MakeJob("{f}w", topic, At(absl::Seconds(2))), {"{f}kept"}),
         At(absl::Seconds(2)));
  EXPECT_EQ(StateOf(*backend_, "{f}w"), JobState::kReady);
}

TEST_P(DependencyConformanceTest,
       AnUnknownDependencyIsRefusedAndNothingStored) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}a", topic));
  const absl::Status one =
      backend_->Add({After(MakeJob("{f}w", topic), {"{f}a", "{f}nope"})}, kT0);
  EXPECT_EQ(one.code(), kNotFound) << one;
  EXPECT_THAT(std::string(one.message()), HasSubstr("{f}nope"));
  const absl::Status batch = backend_->Add(
      {MakeJob("{f}x", topic), After(MakeJob("{f}y", topic), {"{f}gone"})},
      kT0);
  EXPECT_EQ(batch.code(), kNotFound) << batch;

  for (const char* id : {"{f}w", "{f}x", "{f}y"}) {
    EXPECT_EQ(backend_->Get(id).status().code(), kNotFound) << id;
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.total(), 1);
  EXPECT_EQ(stats.waiting, 0);
}

TEST_P(DependencyConformanceTest, ABatchMayWaitForItsOwnEarlierJobs) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}d", topic));
  ASSERT_OK(backend_->Add({MakeJob("{f}child", topic),
                           After(MakeJob("{f}p1", topic), {"{f}d", "{f}child"}),
                           After(MakeJob("{f}p2", topic), {"{f}d"})},
                          kT0));
  EXPECT_EQ(StateOf(*backend_, "{f}p1"), JobState::kWaiting);
  EXPECT_EQ(StateOf(*backend_, "{f}p2"), JobState::kWaiting);
  // A job may not wait for a later one of its batch: no cycle can form.
  const absl::Status later =
      backend_->Add({After(MakeJob("{f}first", topic), {"{f}second"}),
                     MakeJob("{f}second", topic)},
                    kT0);
  EXPECT_EQ(later.code(), kNotFound) << later;

  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, At(absl::Seconds(1))));
  ASSERT_THAT(Ids(leases), UnorderedElementsAre("{f}d", "{f}child"));
  for (const Lease& l : leases) {
    if (l.job.id == "{f}d") {
      ASSERT_OK(backend_->Ack(l.job.id, l.token, "", At(absl::Seconds(2))));
    }
  }
  EXPECT_EQ(StateOf(*backend_, "{f}p1"), JobState::kWaiting);
  EXPECT_EQ(StateOf(*backend_, "{f}p2"), JobState::kReady);
  for (const Lease& l : leases) {
    if (l.job.id == "{f}child") {
      ASSERT_OK(backend_->Ack(l.job.id, l.token, "", At(absl::Seconds(3))));
    }
  }
  EXPECT_EQ(StateOf(*backend_, "{f}p1"), JobState::kReady);
}

TEST_P(DependencyConformanceTest, ADeadDependencyAppliesEachPolicy) {
  const std::string topic = Topic();
  const Lease dep = AddAndReserve(OneAttempt(MakeJob("{f}d", topic)), kT0);
  const std::string parents = Topic("parents");
  AddOne(
      After(MakeJob("{f}fail", parents), {"{f}d"}, DependencyFailure::kFail));
  AddOne(After(MakeJob("{f}cancel", parents), {"{f}d"},
               DependencyFailure::kCancel));
  AddOne(After(MakeJob("{f}run", parents), {"{f}d"}, DependencyFailure::kRun));

  ASSERT_THAT(backend_->Fail("{f}d", dep.token, "boom", At(absl::Seconds(5)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));

  ASSERT_OK_AND_ASSIGN(Job failed, backend_->Get("{f}fail"));
  EXPECT_EQ(failed.state, JobState::kDead);
  EXPECT_EQ(failed.last_error, "dependency '{f}d' failed");
  EXPECT_EQ(failed.finished_at, At(absl::Seconds(1)));
  EXPECT_EQ(backend_->Get("{f}cancel").status().code(), kNotFound);
  EXPECT_EQ(StateOf(*backend_, "{f}run"), JobState::kReady);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(parents));
  EXPECT_EQ(stats.dead, 1);
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.waiting, 0);
}

TEST_P(DependencyConformanceTest, ADependencyWhoseLastLeaseRunsOutFailsIt) {
  const std::string topic = Topic();
  AddAndReserve(OneAttempt(MakeJob("{f}d", topic)), kT0);
  AddOne(After(MakeJob("{f}w", Topic("parent")), {"{f}d"}));
  ASSERT_OK(backend_->PromoteDue(At(absl::Minutes(5)), 100).status());
  EXPECT_EQ(StateOf(*backend_, "{f}d"), JobState::kDead);
  ASSERT_OK_AND_ASSIGN(Job w, backend_->Get("{f}w"));
  EXPECT_EQ(w.state, JobState::kDead);
  EXPECT_EQ(w.last_error, "dependency '{f}d' failed");
}

TEST_P(DependencyConformanceTest, ACancelledDependencyAppliesEachPolicy) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}d", topic, At(absl::Hours(1))));
  AddOne(After(MakeJob("{f}fail", topic), {"{f}d"}, DependencyFailure::kFail));
  AddOne(
      After(MakeJob("{f}cancel", topic), {"{f}d"}, DependencyFailure::kCancel));
  AddOne(After(MakeJob("{f}run", topic), {"{f}d"}, DependencyFailure::kRun));

  ASSERT_OK(backend_->Cancel("{f}d", At(absl::Seconds(1))));

  ASSERT_OK_AND_ASSIGN(Job failed, backend_->Get("{f}fail"));
  EXPECT_EQ(failed.state, JobState::kDead);
  EXPECT_EQ(failed.last_error, "dependency '{f}d' was cancelled");
  EXPECT_EQ(backend_->Get("{f}cancel").status().code(), kNotFound);
  EXPECT_EQ(StateOf(*backend_, "{f}run"), JobState::kReady);
}

TEST_P(DependencyConformanceTest,
       ADeadDependencyAtEnqueueAppliesThePolicyAtOnce) {
  const std::string topic = Topic();
  const Lease dep = AddAndReserve(OneAttempt(MakeJob("{f}d", topic)), kT0);
  ASSERT_THAT(backend_->Fail("{f}d", dep.token, "boom", At(absl::Seconds(5)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));

  const absl::Time t = At(absl::Seconds(2));
  ASSERT_OK(backend_->Add(
      {After(MakeJob("{f}fail", topic, t), {"{f}d"}, DependencyFailure::kFail),
       After(MakeJob("{f}cancel", topic, t), {"{f}d"},
             DependencyFailure::kCancel),
       After(MakeJob("{f}run", topic, t), {"{f}d"}, DependencyFailure::kRun)},
      t));
  ASSERT_OK_AND_ASSIGN(Job failed, backend_->Get("{f}fail"));
  EXPECT_EQ(failed.state, JobState::kDead);
  EXPECT_EQ(failed.last_error, "dependency '{f}d' failed");
  EXPECT_EQ(backend_->Get("{f}cancel").status().code(), kNotFound);
  EXPECT_EQ(StateOf(*backend_, "{f}run"), JobState::kReady);
}

TEST_P(DependencyConformanceTest, AFailureRunsDownAChain) {
  const std::string topic = Topic();
  const Lease dep = AddAndReserve(OneAttempt(MakeJob("{f}a", topic)), kT0);
  AddOne(After(MakeJob("{f}b", topic), {"{f}a"}, DependencyFailure::kCancel));
  AddOne(After(MakeJob("{f}c", topic), {"{f}b"}, DependencyFailure::kFail));
  AddOne(After(MakeJob("{f}d", topic), {"{f}c"}, DependencyFailure::kFail));
  ASSERT_THAT(backend_->Fail("{f}a", dep.token, "boom", At(absl::Seconds(5)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  EXPECT_EQ(backend_->Get("{f}b").status().code(), kNotFound);
  ASSERT_OK_AND_ASSIGN(Job c, backend_->Get("{f}c"));
  EXPECT_EQ(c.state, JobState::kDead);
  EXPECT_EQ(c.last_error, "dependency '{f}b' was cancelled");
  ASSERT_OK_AND_ASSIGN(Job d, backend_->Get("{f}d"));
  EXPECT_EQ(d.state, JobState::kDead);
  EXPECT_EQ(d.last_error, "dependency '{f}c' failed");
}

TEST_P(DependencyConformanceTest, AWaitingJobDueLaterBecomesDelayed) {
  const std::string topic = Topic();
  const Lease dep = AddAndReserve(MakeJob("{f}d", topic), kT0);
  AddOne(After(MakeJob("{f}w", topic, At(absl::Hours(1))), {"{f}d"}));
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(dep.deadline));
  ASSERT_OK(backend_->Ack("{f}d", dep.token, "", At(absl::Seconds(1))));

  ASSERT_OK_AND_ASSIGN(Job w, backend_->Get("{f}w"));
  EXPECT_EQ(w.state, JobState::kDelayed);
  EXPECT_EQ(w.run_at, At(absl::Hours(1)));
  EXPECT_THAT(backend_->NextDue(), IsOkAndHolds(At(absl::Hours(1))));
  EXPECT_THAT(backend_->Reserve(topic, 1, At(absl::Minutes(59))),
              IsOkAndHolds(IsEmpty()));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Hours(1))));
  EXPECT_THAT(Ids(leases), ElementsAre("{f}w"));
}

TEST_P(DependencyConformanceTest, ACancelledWaitingJobLeavesItsDependencies) {
  const std::string topic = Topic();
  const Lease dep = AddAndReserve(MakeJob("{f}d", topic), kT0);
  AddOne(After(MakeJob("{f}w", topic), {"{f}d"}));
  ASSERT_OK(backend_->Cancel("{f}w", At(absl::Seconds(1))));
  EXPECT_EQ(backend_->Get("{f}w").status().code(), kNotFound);
  ASSERT_OK(backend_->Ack("{f}d", dep.token, "", At(absl::Seconds(2))));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.total(), 0);
  // The id is free again, and a new job with it waits for nothing gone.
  AddOne(MakeJob("{f}w", topic), At(absl::Seconds(3)));
  EXPECT_EQ(StateOf(*backend_, "{f}w"), JobState::kReady);
}

// Job::after: the ids the job was enqueued with, in their order, in every
// state of its life, and nothing once the job has left.
TEST_P(DependencyConformanceTest, AJobSaysWhatItWaitsFor) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}c", topic));
  AddOne(MakeJob("{f}a", topic));
  AddOne(MakeJob("{f}plain", Topic("plain")));
  NewJob w = After(MakeJob("{f}w", Topic("parent")), {"{f}c", "{f}a"});
  w.keep_for = absl::Hours(1);
  w.keep_at_most = 10;
  AddOne(w);
  const auto names_both = ElementsAre("{f}c", "{f}a");

  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{f}w"));
  EXPECT_THAT(got.after, names_both);
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{f}plain"));
  EXPECT_THAT(got.after, IsEmpty());
  ASSERT_OK_AND_ASSIGN(std::vector<Job> listed,
                       backend_->List(Topic("parent"), JobState::kWaiting, 10));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_THAT(listed[0].after, names_both);

  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, At(absl::Seconds(1))));
  for (const Lease& lease : leases) {
    EXPECT_THAT(lease.job.after, IsEmpty());
    ASSERT_OK(
        backend_->Ack(lease.job.id, lease.token, "", At(absl::Seconds(2))));
  }
  ASSERT_OK_AND_ASSIGN(listed,
                       backend_->List(Topic("parent"), JobState::kReady, 10));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_THAT(listed[0].after, names_both);
  ASSERT_OK_AND_ASSIGN(
      leases, backend_->Reserve(Topic("parent"), 10, At(absl::Seconds(3))));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_THAT(leases[0].job.after, names_both);
  ASSERT_OK(backend_->Ack("{f}w", leases[0].token, "", At(absl::Seconds(4))));
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{f}w"));
  EXPECT_EQ(got.state, JobState::kDone);
  EXPECT_THAT(got.after, names_both);

  // Gone with its job: a new job of the id waits for nothing.
  ASSERT_OK(backend_->Cancel("{f}w", At(absl::Seconds(5))));
  AddOne(MakeJob("{f}w", Topic("parent")), At(absl::Seconds(5)));
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{f}w"));
  EXPECT_THAT(got.after, IsEmpty());
}

// A job that a dependency's failure sends dead at once still names it.
TEST_P(DependencyConformanceTest, ADeadWaiterSaysWhatItWaitedFor) {
  const std::string topic = Topic();
  const Lease d = AddAndReserve(OneAttempt(MakeJob("{f}d", topic)), kT0);
  ASSERT_THAT(backend_->Fail("{f}d", d.token, "boom", At(absl::Seconds(5)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  AddOne(After(MakeJob("{f}w", topic), {"{f}d"}), At(absl::Seconds(2)));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{f}w"));
  EXPECT_EQ(got.state, JobState::kDead);
  EXPECT_THAT(got.after, ElementsAre("{f}d"));
}

TEST_P(DependencyConformanceTest, AWaitingJobIsNeitherPromotedNorKicked) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}d", topic, At(absl::Hours(1))));
  AddOne(After(MakeJob("{f}w", topic), {"{f}d"}));
  EXPECT_EQ(backend_->PromoteJob("{f}w", kT0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(backend_->KickJob("{f}w", kT0).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_OK_AND_ASSIGN(PromoteResult moved,
                       backend_->PromoteDue(At(absl::Minutes(1)), 100));
  EXPECT_THAT(moved.transitions, IsEmpty());
  EXPECT_EQ(StateOf(*backend_, "{f}w"), JobState::kWaiting);
}

// A job that dies because a dependency died or was cancelled (the kFail
// policy) is counted dead under its topic in the store's counts, in the
// same step, like any death; one deleted under kCancel is not.
TEST_P(DependencyConformanceTest, ADependantThatDiesSoIsCountedDead) {
  const std::string topic = Topic();
  const std::string parents = Topic("parent");
  AddOne(OneAttempt(MakeJob("{f}dies", topic)));
  AddOne(MakeJob("{f}cancelled", topic));
  AddOne(After(MakeJob("{f}w1", parents), {"{f}dies"}));
  AddOne(After(MakeJob("{f}w2", parents), {"{f}cancelled"}));
  AddOne(After(MakeJob("{f}w3", parents), {"{f}cancelled"},
               DependencyFailure::kCancel));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(leases[0].job.id, "{f}dies");
  ASSERT_THAT(backend_->Fail("{f}dies", leases[0].token, "boom",
                             At(absl::Seconds(2)), At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  ASSERT_OK(backend_->Cancel("{f}cancelled", At(absl::Seconds(2))));
  EXPECT_EQ(StateOf(*backend_, "{f}w1"), JobState::kDead);
  EXPECT_EQ(StateOf(*backend_, "{f}w2"), JobState::kDead);

  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals,
                       backend_->CountTotals());
  int64_t parents_dead = -1, topic_dead = -1;
  for (const TopicTotals& t : totals) {
    if (t.topic == parents) parents_dead = t.counts.dead;
    if (t.topic == topic) topic_dead = t.counts.dead;
  }
  EXPECT_EQ(parents_dead, 2);
  EXPECT_EQ(topic_dead, 1);
}

// As many dependencies as a job may have (kMaxDependencies), each stored,
// acknowledged and counted off: no step of a store handles them all at
// once where a bounded one is required (a Redis script spreads at most a
// few thousand values in one call).
TEST_P(DependencyConformanceTest, AJobMayWaitForTheMostDependenciesAllowed) {
  const std::string topic = Topic();
  std::vector<NewJob> children;
  std::vector<std::string> ids;
  for (int i = 0; i < kMaxDependencies; ++i) {
    ids.push_back(absl::StrCat("{f}c", i));
    children.push_back(MakeJob(ids.back(), topic));
  }
  ASSERT_OK(backend_->Add(children, kT0));
  AddOne(After(MakeJob("{f}w", Topic("parent")), ids));
  int acked = 0;
  while (acked < kMaxDependencies) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend_->Reserve(topic, 1000, At(absl::Seconds(1))));
    ASSERT_FALSE(leases.empty()) << "after " << acked << " acks";
    EXPECT_THAT(backend_->Reserve(Topic("parent"), 1, At(absl::Seconds(1))),
                IsOkAndHolds(IsEmpty()));
    ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> done,
                         backend_->AckBatch(leases, At(absl::Seconds(1))));
    for (const absl::Status& s : done) ASSERT_OK(s);
    acked += static_cast<int>(leases.size());
  }
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> parent,
      backend_->Reserve(Topic("parent"), 10, At(absl::Seconds(2))));
  EXPECT_THAT(Ids(parent), ElementsAre("{f}w"));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
