// Copyright delayq authors.
//
// Conformance tests of the calls that end or extend a lease (Ack, Fail,
// Release, Touch) and of Cancel. See backend_conformance.h.

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

constexpr absl::StatusCode kStale = absl::StatusCode::kFailedPrecondition;

// ----------------------------------------------------------------- Reserve

// A caller whose clock is behind the one that promoted a job (another
// process's, or its own read before a wait) still gets the whole ttr,
// counted from when the job was due: its lease must not be born expired.
TEST_P(BackendConformanceTest, ALeaseRunsTtrFromRunAtWhenNowIsBehindIt) {
  const std::string topic = Topic();
  NewJob job = MakeJob("late", topic, At(absl::Seconds(90)));
  job.ttr = absl::Seconds(60);
  AddOne(job, kT0);
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(90)), 10).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(30))));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].deadline, At(absl::Seconds(150)));
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       backend_->PromoteDue(At(absl::Seconds(149)), 10));
  EXPECT_THAT(r.transitions, IsEmpty());
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("late"));
  EXPECT_EQ(got.state, JobState::kReserved);
  EXPECT_EQ(got.deadline, At(absl::Seconds(150)));

  // A caller that is on time gets ttr from now, as ever.
  NewJob now_due = MakeJob("on-time", topic, At(absl::Seconds(100)));
  now_due.ttr = absl::Seconds(60);
  AddOne(now_due, kT0);
  ASSERT_OK_AND_ASSIGN(leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(120))));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].deadline, At(absl::Seconds(180)));
}

// --------------------------------------------------------------------- Ack

TEST_P(BackendConformanceTest, AckDeletesTheJob) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  EXPECT_OK(
      backend_->Ack("j", lease.token, /*result=*/"", At(absl::Seconds(1))));
  EXPECT_THAT(backend_->Get("j"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, TopicStats{});
  // A second Ack of the same lease names a job that is gone.
  EXPECT_THAT(
      backend_->Ack("j", lease.token, /*result=*/"", At(absl::Seconds(1))),
      StatusIs(kStale));
}

TEST_P(BackendConformanceTest, LeaseCallsWithAWrongTokenChangeNothing) {
  Lease lease = AddAndReserve(MakeJob("j", Topic()), kT0);
  ExpectStale("j", lease.token + 1000, At(absl::Seconds(1)));
  ExpectStale("j", 0, At(absl::Seconds(1)));
  ExpectStale("unknown", lease.token, At(absl::Seconds(1)));
  EXPECT_OK(
      backend_->Ack("j", lease.token, /*result=*/"", At(absl::Seconds(1))));
}

// A client must not work out another's token from its own: the tokens of
// two reserve calls in a row are far apart (random ones are within 2^20 of
// each other with probability 2^-31), and a stale one is still refused.
TEST_P(BackendConformanceTest, TokensOfSeparateReservesAreUnguessable) {
  const std::string topic = Topic();
  ASSERT_OK(
      backend_->Add({MakeJob("mine", topic), MakeJob("theirs", topic)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> mine,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> theirs,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_EQ(mine.size(), 1u);
  ASSERT_EQ(theirs.size(), 1u);
  const uint64_t a = mine[0].token, b = theirs[0].token;
  EXPECT_GT(a > b ? a - b : b - a, uint64_t{1} << 20) << a << " " << b;
  EXPECT_LT(a, uint64_t{1} << 52);
  EXPECT_LT(b, uint64_t{1} << 52);
  // Guessing from one's own token fails and changes nothing.
  for (uint64_t guess : {a - 1, a + 1, a + 2}) {
    ExpectStale(theirs[0].job.id, guess, At(absl::Seconds(1)));
  }
  EXPECT_OK(
      backend_->Ack(mine[0].job.id, a, /*result=*/"", At(absl::Seconds(1))));

  // After the lease lapses the job is reserved again under a new token;
  // the old one is refused.
  const Lease old = theirs[0];
  ASSERT_OK(backend_->PromoteDue(old.deadline, 10).status());
  ASSERT_OK_AND_ASSIGN(theirs, backend_->Reserve(topic, 1, old.deadline));
  ASSERT_EQ(theirs.size(), 1u);
  ASSERT_EQ(theirs[0].job.id, old.job.id);
  EXPECT_NE(theirs[0].token, old.token);
  ExpectStale(old.job.id, old.token, old.deadline);
  EXPECT_OK(
      backend_->Ack(old.job.id, theirs[0].token, /*result=*/"", old.deadline));
}

TEST_P(BackendConformanceTest, AckBatchAcksEachLeaseOnItsOwnTerms) {
  const std::string topic = Topic();
  const std::string other = Topic("other");
  ASSERT_OK(backend_->Add({MakeJob("a", topic), MakeJob("b", topic),
                           MakeJob("c", topic), MakeJob("d", other)},
                          kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> t, backend_->Reserve(topic, 3, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> u, backend_->Reserve(other, 1, kT0));
  ASSERT_EQ(t.size(), 3u);
  ASSERT_EQ(u.size(), 1u);
  Lease stale = t[1];
  stale.token += 1000;
  // t[0] twice: acked once, stale the second time; t[1] under a wrong
  // token; u[0] of another topic.
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch({t[0], stale, t[0], u[0]}, kT0));
  ASSERT_EQ(acked.size(), 4u);
  EXPECT_OK(acked[0]);
  EXPECT_THAT(acked[1], StatusIs(kStale));
  EXPECT_THAT(acked[2], StatusIs(kStale));
  EXPECT_OK(acked[3]);
  EXPECT_THAT(backend_->Get(t[0].job.id),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend_->Get(u[0].job.id),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Job b, backend_->Get(t[1].job.id));
  EXPECT_EQ(b.state, JobState::kReserved);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 2, 0}));
  ASSERT_OK_AND_ASSIGN(stats, backend_->Stats(other));
  EXPECT_EQ(stats, TopicStats{});

  ASSERT_OK_AND_ASSIGN(acked, backend_->AckBatch({t[1], t[2]}, kT0));
  EXPECT_THAT(acked, ElementsAre(absl::OkStatus(), absl::OkStatus()));
  ASSERT_OK_AND_ASSIGN(stats, backend_->Stats(topic));
  EXPECT_EQ(stats, TopicStats{});
  ASSERT_OK_AND_ASSIGN(acked, backend_->AckBatch({}, kT0));
  EXPECT_THAT(acked, IsEmpty());
}

TEST_P(BackendConformanceTest, StaleLeaseAfterRedeliveryChangesNothing) {
  const std::string topic = Topic();
  Lease first = AddAndReserve(MakeJob("j", topic), kT0);
  const absl::Time later = first.deadline + absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> second,
                       backend_->Reserve(topic, 1, later));
  ASSERT_THAT(Ids(second), ElementsAre("j"));
  ExpectStale("j", first.token, later);
  // The current lease still works.
  ASSERT_OK_AND_ASSIGN(absl::Time deadline,
                       backend_->Touch("j", second[0].token, later));
  EXPECT_EQ(deadline, later + absl::Seconds(30));
  EXPECT_OK(backend_->Ack("j", second[0].token, /*result=*/"", later));
}

TEST_P(BackendConformanceTest, LeaseOfAJobNoLongerReservedIsStale) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  ASSERT_OK(backend_->Release("j", lease.token, kT0, kT0));
  ExpectStale("j", lease.token, kT0);  // ready now
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(again), ElementsAre("j"));
  ASSERT_OK_AND_ASSIGN(
      FailOutcome outcome,
      backend_->Fail("j", again[0].token, "e", At(absl::Seconds(9)), kT0));
  ASSERT_EQ(outcome, FailOutcome::kRetry);
  ExpectStale("j", again[0].token, kT0);  // delayed now
}

TEST_P(BackendConformanceTest, LeaseOfACancelledJobIsStale) {
  Lease lease = AddAndReserve(MakeJob("j", Topic()), kT0);
  ASSERT_OK(backend_->Cancel("j", kT0));
  ExpectStale("j", lease.token, kT0);
  // Not even a new job under the same id accepts the old lease.
  AddOne(MakeJob("j", Topic()));
  ExpectStale("j", lease.token, kT0);
}

TEST_P(BackendConformanceTest, ExpiredLeaseNobodyMovedIsStillCurrent) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  const absl::Time late = lease.deadline + absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(absl::Time deadline,
                       backend_->Touch("j", lease.token, late));
  EXPECT_EQ(deadline, late + absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> none,
                       backend_->Reserve(topic, 1, late + absl::Seconds(1)));
  EXPECT_THAT(none, IsEmpty()) << "the touch prevented redelivery";
  EXPECT_OK(
      backend_->Ack("j", lease.token, /*result=*/"", late + absl::Seconds(1)));
}

// -------------------------------------------------------------------- Fail

TEST_P(BackendConformanceTest, FailWithAttemptsLeftDelaysUntilRetryAt) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  const absl::Time now = At(absl::Seconds(1));
  const absl::Time retry_at = At(absl::Milliseconds(6500));
  ASSERT_OK_AND_ASSIGN(
      FailOutcome outcome,
      backend_->Fail("j", lease.token, "it broke", retry_at, now));
  EXPECT_EQ(outcome, FailOutcome::kRetry);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  EXPECT_EQ(got.run_at, retry_at);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.last_error, "it broke");
  EXPECT_EQ(got.deadline, absl::InfinitePast());

  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> none,
      backend_->Reserve(topic, 1, retry_at - absl::Milliseconds(1)));
  EXPECT_THAT(none, IsEmpty());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, retry_at));
  ASSERT_THAT(Ids(again), ElementsAre("j"));
  EXPECT_EQ(again[0].job.attempts, 2);
  EXPECT_EQ(again[0].job.last_error, "it broke");
}

TEST_P(BackendConformanceTest, FailWithRetryAtNotAfterNowIsReady) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  const absl::Time now = At(absl::Seconds(2));
  ASSERT_OK_AND_ASSIGN(FailOutcome outcome,
                       backend_->Fail("j", lease.token, "again", now, now));
  EXPECT_EQ(outcome, FailOutcome::kRetry);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.run_at, now);
  EXPECT_EQ(got.last_error, "again");
}

TEST_P(BackendConformanceTest, FailOnTheLastAttemptGoesDead) {
  const std::string topic = Topic();
  NewJob job = MakeJob("j", topic);
  job.max_attempts = 2;
  AddOne(job);
  absl::Time now = kT0;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend_->Reserve(topic, 1, now));
    ASSERT_THAT(Ids(leases), ElementsAre("j"));
    ASSERT_EQ(leases[0].job.attempts, attempt);
    ASSERT_OK_AND_ASSIGN(
        FailOutcome outcome,
        backend_->Fail("j", leases[0].token, "fail " + std::to_string(attempt),
                       now, now));
    EXPECT_EQ(outcome, attempt < 2 ? FailOutcome::kRetry : FailOutcome::kDead);
    now += absl::Seconds(1);
  }
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kDead);
  EXPECT_EQ(got.attempts, 2);
  EXPECT_EQ(got.last_error, "fail 2");
  EXPECT_EQ(got.deadline, absl::InfinitePast());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> none,
                       backend_->Reserve(topic, 1, At(absl::Hours(1))));
  EXPECT_THAT(none, IsEmpty());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 0, 1}));
}

// ----------------------------------------------------------------- Release

TEST_P(BackendConformanceTest, ReleaseGivesTheAttemptBackAndDelays) {
  const std::string topic = Topic();
  NewJob job = MakeJob("j", topic);
  job.max_attempts = 1;
  Lease lease = AddAndReserve(job, kT0);
  const absl::Time run_at = At(absl::Seconds(20));
  ASSERT_OK(backend_->Release("j", lease.token, run_at, At(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.run_at, run_at);
  EXPECT_EQ(got.deadline, absl::InfinitePast());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> none,
                       backend_->Reserve(topic, 1, At(absl::Seconds(19))));
  EXPECT_THAT(none, IsEmpty());
  // max_attempts is 1: only because the release gave the attempt back can
  // the job be reserved and failed once more before it dies.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, run_at));
  ASSERT_THAT(Ids(again), ElementsAre("j"));
  EXPECT_EQ(again[0].job.attempts, 1);
}

TEST_P(BackendConformanceTest, ReleaseWithRunAtNotAfterNowIsReady) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  ASSERT_OK(backend_->Fail("j", lease.token, "kept", kT0, kT0).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(again), ElementsAre("j"));
  const absl::Time now = At(absl::Seconds(3));
  ASSERT_OK(backend_->Release("j", again[0].token, At(absl::Seconds(2)), now));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.run_at, At(absl::Seconds(2)));
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.last_error, "kept");
}

// ------------------------------------------------------------------- Touch

TEST_P(BackendConformanceTest, TouchExtendsTheDeadlineAndPreventsRedelivery) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("j", topic), kT0);
  const absl::Time now = At(absl::Seconds(20));
  ASSERT_OK_AND_ASSIGN(absl::Time deadline,
                       backend_->Touch("j", lease.token, now));
  EXPECT_EQ(deadline, now + absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.deadline, deadline);
  EXPECT_EQ(got.attempts, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> none,
                       backend_->Reserve(topic, 1, lease.deadline));
  EXPECT_THAT(none, IsEmpty());
  ASSERT_OK_AND_ASSIGN(
      PromoteResult promoted,
      backend_->PromoteDue(deadline - absl::Milliseconds(1), 10));
  EXPECT_THAT(promoted.transitions, IsEmpty());
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, deadline);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again,
                       backend_->Reserve(topic, 1, deadline));
  EXPECT_THAT(Ids(again), ElementsAre("j"));
}

// ------------------------------------------------------------------ Cancel

TEST_P(BackendConformanceTest, CancelDeletesAJobInEveryState) {
  const std::string topic = Topic();
  NewJob dead = MakeJob("{o}dead", topic);
  dead.max_attempts = 1;
  ASSERT_OK(backend_->Add(
      {dead, MakeJob("{o}reserved", topic), MakeJob("{o}ready", topic),
       MakeJob("{o}delayed", topic, At(absl::Hours(1)))},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("{o}dead", "{o}reserved"));
  ASSERT_OK(backend_->Fail("{o}dead", leases[0].token, "x", kT0, kT0).status());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  ASSERT_EQ(stats, (TopicStats{1, 1, 1, 1}));

  for (const char* id : {"{o}dead", "{o}reserved", "{o}ready", "{o}delayed"}) {
    EXPECT_OK(backend_->Cancel(id, kT0)) << id;
    EXPECT_THAT(backend_->Get(id), StatusIs(absl::StatusCode::kNotFound));
  }
  ExpectStale("{o}reserved", leases[1].token, kT0);
  ASSERT_OK_AND_ASSIGN(stats, backend_->Stats(topic));
  EXPECT_EQ(stats, TopicStats{});
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
}

TEST_P(BackendConformanceTest, CancelOfAnUnknownOrGoneJobIsNotFound) {
  EXPECT_THAT(backend_->Cancel("never", kT0),
              StatusIs(absl::StatusCode::kNotFound));
  AddOne(MakeJob("j", Topic()));
  ASSERT_OK(backend_->Cancel("j", kT0));
  EXPECT_THAT(backend_->Cancel("j", kT0),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
