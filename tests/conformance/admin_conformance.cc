// Copyright delayq authors.
//
// Conformance tests of the calls that inspect or move many jobs: List,
// Stats, Topics, Kick, KickJob, PromoteDue, NextDue, and pausing a topic.
// See backend_conformance.h.

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "src/common/contract_errors.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::vector<std::string> TransitionIds(const PromoteResult& result) {
  std::vector<std::string> ids;
  for (const Transition& t : result.transitions) ids.push_back(t.id);
  return ids;
}

// Makes a job of `topic` dead at `now` by failing its only attempt.
void KillJob(Backend& backend, const std::string& id, const std::string& topic,
             absl::Time now) {
  NewJob job;
  job.id = id;
  job.topic = topic;
  job.payload = "p";
  job.max_attempts = 1;
  job.run_at = now;
  ASSERT_OK(backend.Add({job}, now));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend.Reserve(topic, 1, now));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(leases[0].job.id, id);
  ASSERT_OK_AND_ASSIGN(
      FailOutcome outcome,
      backend.Fail(id, leases[0].token, "died " + id, now, now));
  ASSERT_EQ(outcome, FailOutcome::kDead);
}

// ------------------------------------------------------------------- List

TEST_P(BackendConformanceTest, ListReturnsEachStateInItsOrder) {
  const std::string topic = Topic();
  auto job = [&](const char* id, int priority, absl::Duration run_at,
                 absl::Duration ttr = absl::Seconds(30)) {
    NewJob j = MakeJob(id, topic, At(run_at));
    j.priority = priority;
    j.ttr = ttr;
    return j;
  };
  // Reserved first (by deadline): long ttr reserved first.
  ASSERT_OK(
      backend_->Add({job("{o}r-long", -9, -absl::Seconds(2), absl::Hours(2)),
                     job("{o}r-short", -9, -absl::Seconds(1), absl::Hours(1))},
                    kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("{o}r-long", "{o}r-short"));
  KillJob(*backend_, "{o}dead-first", topic, At(absl::Seconds(1)));
  KillJob(*backend_, "{o}dead-second", topic, At(absl::Seconds(2)));
  ASSERT_OK(backend_->Add({job("{o}ready-p1", 1, -absl::Seconds(9)),
                           job("{o}ready-p0-late", 0, -absl::Seconds(1)),
                           job("{o}ready-p0-early", 0, -absl::Seconds(3)),
                           job("{o}delayed-late", -5, absl::Seconds(50)),
                           job("{o}delayed-early", 5, absl::Seconds(10))},
                          kT0));

  ASSERT_OK_AND_ASSIGN(std::vector<Job> jobs,
                       backend_->List(topic, JobState::kReady, 10));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}ready-p0-early", "{o}ready-p0-late",
                                     "{o}ready-p1"));
  for (const Job& j : jobs) EXPECT_EQ(j.state, JobState::kReady);
  ASSERT_OK_AND_ASSIGN(jobs, backend_->List(topic, JobState::kDelayed, 10));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}delayed-early", "{o}delayed-late"));
  ASSERT_OK_AND_ASSIGN(jobs, backend_->List(topic, JobState::kReserved, 10));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}r-short", "{o}r-long"));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].deadline, kT0 + absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(jobs, backend_->List(topic, JobState::kDead, 10));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}dead-first", "{o}dead-second"));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].last_error, "died {o}dead-first");
  EXPECT_EQ(jobs[0].payload, "p");

  ASSERT_OK_AND_ASSIGN(jobs, backend_->List(topic, JobState::kReady, 2));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}ready-p0-early", "{o}ready-p0-late"));
  ASSERT_OK_AND_ASSIGN(jobs, backend_->List(topic, JobState::kDead, 1));
  EXPECT_THAT(Ids(jobs), ElementsAre("{o}dead-first"));
  ASSERT_OK_AND_ASSIGN(jobs,
                       backend_->List(Topic("other"), JobState::kReady, 10));
  EXPECT_THAT(jobs, IsEmpty());
}

// ------------------------------------------------------- Stats and Topics

TEST_P(BackendConformanceTest, StatsCountEveryTransition) {
  const std::string topic = Topic();
  auto expect = [&](TopicStats want, const char* when) {
    absl::StatusOr<TopicStats> got = backend_->Stats(topic);
    ASSERT_OK(got.status());
    EXPECT_EQ(*got, want) << when << ": delayed " << got->delayed << " ready "
                          << got->ready << " reserved " << got->reserved
                          << " dead " << got->dead;
  };
  expect({}, "empty");
  NewJob once = MakeJob("{o}once", topic);
  once.max_attempts = 1;
  ASSERT_OK(backend_->Add({once, MakeJob("{o}a", topic),
                           MakeJob("{o}d", topic, At(absl::Seconds(5)))},
                          kT0));
  expect({1, 2, 0, 0}, "added");
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  expect({1, 0, 2, 0}, "reserved");
  ASSERT_OK(backend_->Fail("{o}once", leases[0].token, "x", kT0, kT0).status());
  expect({1, 0, 1, 1}, "dead");
  ASSERT_OK(
      backend_->Release("{o}a", leases[1].token, At(absl::Seconds(9)), kT0));
  expect({2, 0, 0, 1}, "released");
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(5)), 10).status());
  expect({1, 1, 0, 1}, "promoted");
  ASSERT_OK(backend_->Kick(topic, 10, At(absl::Seconds(5))).status());
  expect({1, 2, 0, 0}, "kicked");
  ASSERT_OK(backend_->Cancel("{o}a", kT0));
  expect({0, 2, 0, 0}, "cancelled");
  ASSERT_OK_AND_ASSIGN(TopicStats other, backend_->Stats(Topic("none")));
  EXPECT_EQ(other, TopicStats{});
}

TEST_P(BackendConformanceTest, TopicsAreSortedAndOnlyThoseWithLiveJobs) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, IsEmpty());
  ASSERT_OK(backend_->Add(
      {MakeJob("c", "topic.c"), MakeJob("a", "topic.a"),
       MakeJob("b", "topic.b", At(absl::Hours(1))), MakeJob("a2", "topic.a")},
      kT0));
  KillJob(*backend_, "d", "topic.d", kT0);
  ASSERT_OK_AND_ASSIGN(topics, backend_->Topics());
  EXPECT_THAT(topics, ElementsAre("topic.a", "topic.b", "topic.c", "topic.d"));
  ASSERT_OK(backend_->Cancel("c", kT0));
  ASSERT_OK(backend_->Cancel("a", kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("topic.a", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK_AND_ASSIGN(topics, backend_->Topics());
  EXPECT_THAT(topics, ElementsAre("topic.a", "topic.b", "topic.d"));
  ASSERT_OK(backend_->Ack("a2", leases[0].token, /*result=*/"", kT0));
  ASSERT_OK(backend_->Cancel("d", kT0));
  ASSERT_OK_AND_ASSIGN(topics, backend_->Topics());
  EXPECT_THAT(topics, ElementsAre("topic.b"));
}

// ---------------------------------------------------------------- Replace

TEST_P(BackendConformanceTest, ReplaceMovesADelayedOrReadyJobInOneStep) {
  NewJob later = MakeJob("debounced", "boss", At(absl::Seconds(90)));
  later.payload = "hit 1";
  ASSERT_OK(backend_->Add({later, MakeJob("first", "boss")}, kT0));
  // Another hit: the respawn moves to 90 s after it, with the new payload.
  NewJob again = later;
  again.payload = "hit 2";
  again.run_at = At(absl::Seconds(100));
  ASSERT_OK(backend_->Replace(again, At(absl::Seconds(10))));
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("debounced"));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.payload, "hit 2");
  EXPECT_EQ(job.run_at, At(absl::Seconds(100)));
  EXPECT_EQ(job.enqueued_at, kT0);
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(100))) << "the old due time is gone";
  ASSERT_OK_AND_ASSIGN(PromoteResult none,
                       backend_->PromoteDue(At(absl::Seconds(95)), 10));
  EXPECT_THAT(none.transitions, IsEmpty());

  // Replaced to now: ready at once.
  again.payload = "now";
  again.run_at = At(absl::Seconds(20));
  ASSERT_OK(backend_->Replace(again, At(absl::Seconds(20))));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats("boss"));
  EXPECT_EQ(stats.ready, 2);
  EXPECT_EQ(stats.delayed, 0);
  // A ready job can be replaced too (moved back to delayed).
  again.payload = "later again";
  again.run_at = At(absl::Seconds(300));
  ASSERT_OK(backend_->Replace(again, At(absl::Seconds(20))));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("boss", 10, At(absl::Seconds(20))));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "first");
  ASSERT_OK_AND_ASSIGN(job, backend_->Get("debounced"));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.payload, "later again");
}

TEST_P(BackendConformanceTest, ReplaceRefusesWhatItCannotMove) {
  EXPECT_THAT(backend_->Replace(MakeJob("nobody", "t"), kT0),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(backend_->Add({MakeJob("r", "t")}, kT0));
  EXPECT_THAT(backend_->Replace(MakeJob("r", "other"), kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  const absl::Status busy = backend_->Replace(MakeJob("r", "t"), kT0);
  EXPECT_THAT(busy, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(busy.message(),
            ::delayq::internal::NotReplaceable("r", "reserved").message());
  KillJob(*backend_, "d", "t", kT0);
  EXPECT_THAT(backend_->Replace(MakeJob("d", "t"), kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // The refused calls changed nothing.
  ASSERT_OK(backend_->Ack("r", leases[0].token, /*result=*/"", kT0));
}

// ------------------------------------------------------------------ Pause

TEST_P(BackendConformanceTest, APausedTopicDeliversNothingUntilResumed) {
  ASSERT_OK(backend_->Add({MakeJob("{o}ready", "mail"),
                           MakeJob("{o}later", "mail", At(absl::Seconds(10))),
                           MakeJob("{o}other", "sms")},
                          kT0));
  ASSERT_OK(backend_->SetPaused("mail", true, kT0));
  ASSERT_OK(backend_->SetPaused("mail", true, kT0));  // twice: no change
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> paused,
                       backend_->PausedTopics());
  EXPECT_THAT(paused, ElementsAre("mail"));
  // Nothing of it is reserved, though what comes due still moves to ready;
  // other topics go on.
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve("mail", 10, At(absl::Seconds(10)), &moved));
  EXPECT_THAT(leases, IsEmpty());
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].id, "{o}later");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats("mail"));
  EXPECT_EQ(stats.ready, 2);
  ASSERT_OK_AND_ASSIGN(leases, backend_->Reserve("sms", 10, kT0));
  EXPECT_EQ(leases.size(), 1u);

  ASSERT_OK(backend_->SetPaused("mail", false, At(absl::Seconds(10))));
  ASSERT_OK_AND_ASSIGN(paused, backend_->PausedTopics());
  EXPECT_THAT(paused, IsEmpty());
  ASSERT_OK_AND_ASSIGN(leases,
                       backend_->Reserve("mail", 10, At(absl::Seconds(10))));
  std::vector<std::string> ids;
  for (const Lease& l : leases) ids.push_back(l.job.id);
  EXPECT_THAT(ids, ElementsAre("{o}ready", "{o}later"));
}

// -------------------------------------------------------------------- Kick

TEST_P(BackendConformanceTest, KickRevivesOldestDeathsFirst) {
  const std::string topic = Topic();
  KillJob(*backend_, "{o}first", topic, At(absl::Seconds(1)));
  KillJob(*backend_, "{o}second", topic, At(absl::Seconds(2)));
  KillJob(*backend_, "{o}third", topic, At(absl::Seconds(3)));
  KillJob(*backend_, "{o}elsewhere", Topic("other"), At(absl::Seconds(3)));
  const absl::Time now = At(absl::Seconds(10));
  ASSERT_OK_AND_ASSIGN(int moved, backend_->Kick(topic, 2, now));
  EXPECT_EQ(moved, 2);
  for (const char* id : {"{o}first", "{o}second"}) {
    ASSERT_OK_AND_ASSIGN(Job got, backend_->Get(id));
    EXPECT_EQ(got.state, JobState::kReady) << id;
    EXPECT_EQ(got.attempts, 0) << id;
    EXPECT_EQ(got.run_at, now) << id;
    EXPECT_EQ(got.last_error, std::string("died ") + id);
  }
  ASSERT_OK_AND_ASSIGN(Job third, backend_->Get("{o}third"));
  EXPECT_EQ(third.state, JobState::kDead);
  ASSERT_OK_AND_ASSIGN(moved, backend_->Kick(topic, 5, now));
  EXPECT_EQ(moved, 1);
  ASSERT_OK_AND_ASSIGN(moved, backend_->Kick(topic, 5, now));
  EXPECT_EQ(moved, 0);
  ASSERT_OK_AND_ASSIGN(Job other, backend_->Get("{o}elsewhere"));
  EXPECT_EQ(other.state, JobState::kDead);
  // Revived jobs get a full budget again (max_attempts is 1).
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 5, now));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}first", "{o}second", "{o}third"));
  EXPECT_EQ(leases[0].job.attempts, 1);
}

TEST_P(BackendConformanceTest, KickIdsNamesTheJobsItMoves) {
  const std::string topic = Topic();
  KillJob(*backend_, "{o}first", topic, At(absl::Seconds(1)));
  KillJob(*backend_, "{o}second", topic, At(absl::Seconds(2)));
  KillJob(*backend_, "{o}third", topic, At(absl::Seconds(3)));
  const absl::Time now = At(absl::Seconds(10));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids,
                       backend_->KickIds(topic, 2, now));
  EXPECT_THAT(ids, ElementsAre("{o}first", "{o}second"));
  ASSERT_OK_AND_ASSIGN(ids, backend_->KickIds(topic, 5, now));
  EXPECT_THAT(ids, ElementsAre("{o}third"));
  ASSERT_OK_AND_ASSIGN(ids, backend_->KickIds(topic, 5, now));
  EXPECT_THAT(ids, IsEmpty());
  ASSERT_OK_AND_ASSIGN(ids, backend_->KickIds(Topic("none"), 5, now));
  EXPECT_THAT(ids, IsEmpty());
  ASSERT_OK_AND_ASSIGN(Job first, backend_->Get("{o}first"));
  EXPECT_EQ(first.state, JobState::kReady);
}

TEST_P(BackendConformanceTest, KickJobRevivesOneDeadJob) {
  const std::string topic = Topic();
  EXPECT_THAT(backend_->KickJob("nope", kT0),
              StatusIs(absl::StatusCode::kNotFound));
  KillJob(*backend_, "dead", topic, kT0);
  ASSERT_OK(backend_->Add(
      {MakeJob("ready", topic), MakeJob("delayed", topic, At(absl::Hours(1)))},
      kT0));
  EXPECT_THAT(backend_->KickJob("ready", kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend_->KickJob("delayed", kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("ready"));
  EXPECT_THAT(backend_->KickJob("ready", kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(Job still, backend_->Get("ready"));
  EXPECT_EQ(still.state, JobState::kReserved);

  const absl::Time now = At(absl::Seconds(4));
  EXPECT_OK(backend_->KickJob("dead", now));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("dead"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.run_at, now);
  EXPECT_THAT(backend_->KickJob("dead", now),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// ---------------------------------------------------- PromoteJob, PurgeDead

TEST_P(BackendConformanceTest, PromoteJobRunsADelayedJobNow) {
  const std::string topic = Topic();
  AddOne(MakeJob("{o}later", topic, At(absl::Hours(1))), kT0);
  AddOne(MakeJob("{o}now", topic, kT0), kT0);
  const absl::Time now = At(absl::Seconds(5));
  ASSERT_OK(backend_->PromoteJob("{o}later", now));
  ASSERT_OK_AND_ASSIGN(Job promoted, backend_->Get("{o}later"));
  EXPECT_EQ(promoted.state, JobState::kReady);
  EXPECT_EQ(promoted.run_at, now);
  EXPECT_EQ(promoted.attempts, 0);
  // Enqueue order is kept: it was added first, but runs at now, after the
  // job that was due at kT0.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, now));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}now", "{o}later"));
  // Nothing is due any more.
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, leases[0].deadline);
}

TEST_P(BackendConformanceTest, PromoteJobRunsARetryNowWithItsAttempts) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("{o}r", topic), kT0);
  ASSERT_OK_AND_ASSIGN(
      FailOutcome outcome,
      backend_->Fail("{o}r", lease.token, "boom", At(absl::Minutes(10)), kT0));
  ASSERT_EQ(outcome, FailOutcome::kRetry);
  ASSERT_OK(backend_->PromoteJob("{o}r", At(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].job.attempts, 2);
  EXPECT_EQ(again[0].job.last_error, "boom");
}

TEST_P(BackendConformanceTest, PromoteJobRefusesAJobThatIsNotDelayed) {
  const std::string topic = Topic();
  AddOne(MakeJob("{o}ready", topic), kT0);
  const absl::Status refused = backend_->PromoteJob("{o}ready", kT0);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("is ready, not delayed"));
  EXPECT_THAT(backend_->PromoteJob("{o}missing", kT0),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("{o}ready"));
  EXPECT_EQ(job.run_at, kT0);
}

TEST_P(BackendConformanceTest, PurgeDeadDeletesOldestDeathsFirst) {
  const std::string topic = Topic();
  for (const char* id : {"{o}d1", "{o}d2", "{o}d3"}) {
    KillJob(*backend_, id, topic, kT0);
  }
  NewJob unique = MakeJob("{o}kept-id", topic);
  unique.max_attempts = 1;
  unique.unique_for = absl::Hours(1);
  Lease lease = AddAndReserve(unique, kT0);
  ASSERT_OK(backend_->Fail(unique.id, lease.token, "x", kT0, kT0).status());
  AddOne(MakeJob("{o}alive", topic), kT0);

  ASSERT_OK_AND_ASSIGN(int purged, backend_->PurgeDead(topic, 2, kT0));
  EXPECT_EQ(purged, 2);
  EXPECT_THAT(backend_->Get("{o}d1"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend_->Get("{o}d2"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(purged, backend_->PurgeDead(topic, 100, kT0));
  EXPECT_EQ(purged, 2);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.dead, 0);
  EXPECT_EQ(stats.ready, 1);
  // A purged job's id stays held for its dedup window, as Cancel() holds it.
  EXPECT_THAT(backend_->Add({MakeJob("{o}kept-id", topic)}, kT0),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK_AND_ASSIGN(purged, backend_->PurgeDead(Topic("none"), 5, kT0));
  EXPECT_EQ(purged, 0);
}

TEST_P(BackendConformanceTest, PurgingTheLastJobsDropsTheTopic) {
  const std::string topic = Topic();
  KillJob(*backend_, "{o}only", topic, kT0);
  ASSERT_OK_AND_ASSIGN(int purged, backend_->PurgeDead(topic, 10, kT0));
  EXPECT_EQ(purged, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, ::testing::Not(::testing::Contains(topic)));
}

// -------------------------------------------------------------- PromoteDue

TEST_P(BackendConformanceTest, PromoteDueMovesDueDelayedJobsToReady) {
  const std::string a = Topic("a"), b = Topic("b");
  ASSERT_OK(backend_->Add({MakeJob("{o}a1", a, At(absl::Seconds(1))),
                           MakeJob("{o}b1", b, At(absl::Seconds(2))),
                           MakeJob("{o}a2", a, At(absl::Seconds(3)))},
                          kT0));
  ASSERT_OK_AND_ASSIGN(PromoteResult result,
                       backend_->PromoteDue(At(absl::Seconds(2)), 10));
  EXPECT_FALSE(result.more);
  EXPECT_THAT(TransitionIds(result), ElementsAre("{o}a1", "{o}b1"));
  ASSERT_EQ(result.transitions.size(), 2u);
  EXPECT_EQ(result.transitions[0].kind, Transition::Kind::kPromoted);
  EXPECT_EQ(result.transitions[0].topic, a);
  EXPECT_EQ(result.transitions[0].attempts, 0);
  EXPECT_EQ(result.transitions[1].topic, b);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{o}b1"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.run_at, At(absl::Seconds(2)));
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{o}a2"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  ASSERT_OK_AND_ASSIGN(result, backend_->PromoteDue(At(absl::Seconds(2)), 10));
  EXPECT_THAT(result.transitions, IsEmpty());
  EXPECT_FALSE(result.more);
}

TEST_P(BackendConformanceTest, PromoteDueReturnsExpiredLeasesOrKillsThem) {
  const std::string topic = Topic();
  NewJob once = MakeJob("{o}once", topic);
  once.max_attempts = 1;
  NewJob twice = MakeJob("{o}twice", topic);
  twice.ttr = absl::Seconds(10);
  ASSERT_OK(backend_->Add({twice, once}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("{o}twice", "{o}once"));

  ASSERT_OK_AND_ASSIGN(PromoteResult result,
                       backend_->PromoteDue(At(absl::Seconds(10)), 10));
  ASSERT_THAT(TransitionIds(result), ElementsAre("{o}twice"));
  EXPECT_EQ(result.transitions[0].kind, Transition::Kind::kExpired);
  EXPECT_EQ(result.transitions[0].attempts, 1);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{o}twice"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.run_at, kT0);
  EXPECT_EQ(got.deadline, absl::InfinitePast());
  ExpectStale("{o}twice", leases[0].token, At(absl::Seconds(10)));

  ASSERT_OK_AND_ASSIGN(result, backend_->PromoteDue(At(absl::Seconds(30)), 10));
  ASSERT_THAT(TransitionIds(result), ElementsAre("{o}once"));
  EXPECT_EQ(result.transitions[0].kind, Transition::Kind::kDead);
  EXPECT_EQ(result.transitions[0].topic, topic);
  EXPECT_EQ(result.transitions[0].attempts, 1);
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{o}once"));
  EXPECT_EQ(got.state, JobState::kDead);
  EXPECT_EQ(got.last_error, "lease expired");
  ExpectStale("{o}once", leases[1].token, At(absl::Seconds(30)));
}

// A job leaves the store only by ack or cancel: however many die, every dead
// job stays (more than the 10,000 a Redis store once kept per topic).
TEST_P(BackendConformanceTest, EveryDeadJobStaysUntilCancelled) {
  const std::string topic = Topic();
  constexpr int kJobs = 10'050;
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) {
    NewJob job = MakeJob("d" + std::to_string(i), topic);
    job.max_attempts = 1;
    jobs.push_back(std::move(job));
  }
  ASSERT_OK(backend_->Add(jobs, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, kJobs, kT0));
  ASSERT_EQ(leases.size(), static_cast<size_t>(kJobs));
  // Half die by Fail, half by their leases expiring.
  for (int i = 0; i < kJobs; i += 2) {
    ASSERT_OK_AND_ASSIGN(
        FailOutcome outcome,
        backend_->Fail(leases[i].job.id, leases[i].token, "boom", kT0, kT0));
    ASSERT_EQ(outcome, FailOutcome::kDead);
  }
  PromoteResult result;
  do {
    ASSERT_OK_AND_ASSIGN(result,
                         backend_->PromoteDue(At(absl::Hours(1)), 1000));
  } while (result.more);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 0, kJobs}));
  for (const char* id : {"d0", "d1", "d10048", "d10049"}) {
    ASSERT_OK_AND_ASSIGN(Job got, backend_->Get(id));
    EXPECT_EQ(got.state, JobState::kDead) << id;
  }
  ASSERT_OK(backend_->Cancel("d0", At(absl::Hours(1))));
  EXPECT_THAT(backend_->Get("d0"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(BackendConformanceTest, PromoteDueStopsAtLimitEarliestFirst) {
  const std::string topic = Topic();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 7; ++i) {
    // Added in reverse due order: the store must order by due time.
    jobs.push_back(
        MakeJob("{o}j" + std::to_string(i), topic, At(absl::Seconds(7 - i))));
  }
  NewJob reserved = MakeJob("{o}lease", topic);
  reserved.ttr = absl::Milliseconds(3500);
  ASSERT_OK(backend_->Add({reserved}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("{o}lease"));
  ASSERT_OK(backend_->Add(jobs, kT0));

  const absl::Time now = At(absl::Seconds(10));
  ASSERT_OK_AND_ASSIGN(PromoteResult result, backend_->PromoteDue(now, 3));
  EXPECT_TRUE(result.more);
  EXPECT_THAT(TransitionIds(result), ElementsAre("{o}j6", "{o}j5", "{o}j4"));
  ASSERT_OK_AND_ASSIGN(result, backend_->PromoteDue(now, 2));
  EXPECT_TRUE(result.more);
  EXPECT_THAT(TransitionIds(result), ElementsAre("{o}lease", "{o}j3"));
  // Looping until `more` is clear moves the rest.
  std::vector<std::string> rest;
  for (int calls = 0; calls < 10; ++calls) {
    ASSERT_OK_AND_ASSIGN(result, backend_->PromoteDue(now, 1));
    for (const std::string& id : TransitionIds(result)) rest.push_back(id);
    if (!result.more) break;
  }
  EXPECT_FALSE(result.more);
  EXPECT_THAT(rest, ElementsAre("{o}j2", "{o}j1", "{o}j0"));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 8, 0, 0}));
}

// ----------------------------------------------------------------- NextDue

TEST_P(BackendConformanceTest, NextDueIsTheEarliestRunAtOrDeadline) {
  const std::string topic = Topic();
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  AddOne(MakeJob("ready", topic, At(-absl::Seconds(5))));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture()) << "ready jobs are not due work";
  ASSERT_OK(backend_->Add({MakeJob("d40", topic, At(absl::Seconds(40))),
                           MakeJob("d50", Topic("b"), At(absl::Seconds(50)))},
                          kT0));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(40)));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_THAT(Ids(leases), ElementsAre("ready"));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(31))) << "the lease deadline";
  ASSERT_OK(backend_->Ack("ready", leases[0].token, /*result=*/"",
                          At(absl::Seconds(2))));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(40)));
  ASSERT_OK(backend_->Cancel("d40", kT0));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(50)));
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(50)), 10).status());
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
}

TEST_P(BackendConformanceTest, NextDueCanBeInThePast) {
  const std::string topic = Topic();
  AddOne(MakeJob("d", topic, At(absl::Seconds(1))), kT0);
  // Nobody promoted it: its run_at is still the next due time.
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(1)));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("d"));
  EXPECT_EQ(got.state, JobState::kDelayed);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
