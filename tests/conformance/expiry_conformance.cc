// Copyright delayq authors.
//
// Conformance tests of expiry (a job not reserved by its expire_at lapses)
// and of dedup windows (an id stays taken for a while after its job left),
// and of what jobs carry for them and for backoff jitter. See
// backend_conformance.h.

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

using Kind = Transition::Kind;

std::vector<Kind> Kinds(const std::vector<Transition>& moved) {
  std::vector<Kind> kinds;
  for (const Transition& t : moved) kinds.push_back(t.kind);
  return kinds;
}

NewJob Expiring(NewJob job, absl::Duration expire_in, bool discard = false) {
  job.expire_at = kT0 + expire_in;
  job.discard_expired = discard;
  return job;
}

NewJob Unique(NewJob job, absl::Duration window) {
  job.unique_for = window;
  return job;
}

// ------------------------------------------------------------------ Expiry

TEST_P(BackendConformanceTest, JobsCarryTheirExpiryWindowAndJitter) {
  NewJob job = Unique(Expiring(MakeJob("j", Topic()), absl::Minutes(5), true),
                      absl::Hours(1));
  job.backoff =
      Backoff::Exponential(absl::Seconds(2), absl::Minutes(1)).WithJitter(0.25);
  AddOne(job);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.expire_at, At(absl::Minutes(5)));
  EXPECT_TRUE(got.discard_expired);
  EXPECT_EQ(got.unique_for, absl::Hours(1));
  EXPECT_EQ(got.backoff, job.backoff);
  EXPECT_EQ(got.backoff.jitter, 0.25);

  AddOne(MakeJob("plain", Topic()));
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("plain"));
  EXPECT_EQ(got.expire_at, absl::InfiniteFuture());
  EXPECT_FALSE(got.discard_expired);
  EXPECT_EQ(got.unique_for, absl::ZeroDuration());
  EXPECT_EQ(got.backoff.jitter, 0.0);
}

TEST_P(BackendConformanceTest, AReadyJobIsReservedUntilItsExpiry) {
  const std::string topic = Topic();
  AddOne(Expiring(MakeJob("j", topic), absl::Seconds(10)));
  const absl::Time before = At(absl::Seconds(10) - absl::Milliseconds(1));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, before));
  ASSERT_THAT(Ids(leases), ElementsAre("j"));
  EXPECT_EQ(leases[0].job.expire_at, At(absl::Seconds(10)));
  // Reserved, it runs on past its expiry and is acked as usual.
  EXPECT_OK(backend_->Ack("j", leases[0].token, /*result=*/"",
                          At(absl::Seconds(20))));
}

TEST_P(BackendConformanceTest, AReadyJobPastItsExpiryGoesDeadInsteadOfOut) {
  const std::string topic = Topic();
  AddOne(Expiring(MakeJob("j", topic), absl::Seconds(10)));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, At(absl::Seconds(10)), &moved));
  EXPECT_THAT(leases, IsEmpty());
  ASSERT_THAT(Kinds(moved), ElementsAre(Kind::kLapsed));
  EXPECT_EQ(moved[0].id, "j");
  EXPECT_EQ(moved[0].topic, topic);
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("j"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, ::delayq::internal::kJobExpired);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 0, 1}));
}

TEST_P(BackendConformanceTest, ADiscardedJobLeavesTheStoreWhenItExpires) {
  const std::string topic = Topic();
  AddOne(Expiring(MakeJob("j", topic), absl::Seconds(10), /*discard=*/true));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, At(absl::Seconds(11)), &moved));
  EXPECT_THAT(leases, IsEmpty());
  ASSERT_THAT(Kinds(moved), ElementsAre(Kind::kDiscarded));
  EXPECT_THAT(backend_->Get("j"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, IsEmpty());
  // The id was not held: it had no dedup window.
  EXPECT_OK(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(12))));
}

TEST_P(BackendConformanceTest, ExpiriesAreDueTimesThatPromotionLapses) {
  const std::string topic = Topic();
  // Ready, expiring at 10 s; delayed to 20 s, expiring at 15 s; delayed to
  // 5 s, expiring at 30 s.
  AddOne(Expiring(MakeJob("{o}ready", topic), absl::Seconds(10)));
  AddOne(Expiring(MakeJob("{o}late", topic, At(absl::Seconds(20))),
                  absl::Seconds(25)));
  NewJob early = Expiring(MakeJob("{o}early", topic, At(absl::Seconds(5))),
                          absl::Seconds(30), /*discard=*/true);
  AddOne(early);
  NewJob lapsing = MakeJob("{o}lapsing", topic, At(absl::Seconds(20)));
  lapsing.expire_at = At(absl::Seconds(15));
  AddOne(lapsing);
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(5)));

  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       backend_->PromoteDue(At(absl::Seconds(5)), 100));
  EXPECT_THAT(Kinds(r.transitions), ElementsAre(Kind::kPromoted));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(10)));  // the ready job's expiry

  ASSERT_OK_AND_ASSIGN(r, backend_->PromoteDue(At(absl::Seconds(10)), 100));
  ASSERT_THAT(Kinds(r.transitions), ElementsAre(Kind::kLapsed));
  EXPECT_EQ(r.transitions[0].id, "{o}ready");
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(15)));  // "lapsing" expires before its run

  ASSERT_OK_AND_ASSIGN(r, backend_->PromoteDue(At(absl::Seconds(15)), 100));
  ASSERT_THAT(Kinds(r.transitions), ElementsAre(Kind::kLapsed));
  EXPECT_EQ(r.transitions[0].id, "{o}lapsing");

  ASSERT_OK_AND_ASSIGN(r, backend_->PromoteDue(At(absl::Seconds(20)), 100));
  EXPECT_THAT(Kinds(r.transitions), ElementsAre(Kind::kPromoted));
  // "{o}early" (ready since 5 s) and "{o}late" (ready since 20 s) lapse at 30 s
  // and 25 s.
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(25)));
  ASSERT_OK_AND_ASSIGN(r, backend_->PromoteDue(At(absl::Seconds(40)), 100));
  EXPECT_THAT(Kinds(r.transitions),
              ElementsAre(Kind::kLapsed, Kind::kDiscarded));
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 0, 3}));
}

TEST_P(BackendConformanceTest, ALeaseThatRunsOutAfterTheExpiryLapses) {
  const std::string topic = Topic();
  NewJob job = Expiring(MakeJob("j", topic), absl::Seconds(10));
  job.ttr = absl::Seconds(20);
  Lease lease = AddAndReserve(job, kT0);
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       backend_->PromoteDue(At(absl::Seconds(20)), 100));
  ASSERT_THAT(Kinds(r.transitions), ElementsAre(Kind::kLapsed));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kDead);
  EXPECT_EQ(got.last_error, ::delayq::internal::kJobExpired);
  ExpectStale("j", lease.token, At(absl::Seconds(21)));
}

TEST_P(BackendConformanceTest, ALeaseThatRunsOutBeforeTheExpiryIsRedelivered) {
  const std::string topic = Topic();
  NewJob job = Expiring(MakeJob("j", topic), absl::Seconds(60));
  job.ttr = absl::Seconds(20);
  AddAndReserve(job, kT0);
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, At(absl::Seconds(30)), &moved));
  EXPECT_THAT(Kinds(moved), ElementsAre(Kind::kExpired));
  ASSERT_THAT(Ids(leases), ElementsAre("j"));
  EXPECT_EQ(leases[0].job.attempts, 2);
}

TEST_P(BackendConformanceTest, ARetryDueAfterTheExpiryLapses) {
  const std::string topic = Topic();
  Lease lease =
      AddAndReserve(Expiring(MakeJob("j", topic), absl::Seconds(10)), kT0);
  ASSERT_OK_AND_ASSIGN(
      FailOutcome outcome,
      backend_->Fail("j", lease.token, "boom", At(absl::Seconds(20)),
                     At(absl::Seconds(1))));
  EXPECT_EQ(outcome, FailOutcome::kRetry);
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, At(absl::Seconds(10)));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, At(absl::Seconds(20)), &moved));
  EXPECT_THAT(leases, IsEmpty());
  EXPECT_THAT(Kinds(moved), ElementsAre(Kind::kLapsed));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.last_error, ::delayq::internal::kJobExpired);
}

TEST_P(BackendConformanceTest, AKickedJobNoLongerExpires) {
  const std::string topic = Topic();
  AddOne(Expiring(MakeJob("j", topic), absl::Seconds(10)));
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(10)), 100).status());
  ASSERT_OK_AND_ASSIGN(int kicked,
                       backend_->Kick(topic, 10, At(absl::Seconds(20))));
  EXPECT_EQ(kicked, 1);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.expire_at, absl::InfiniteFuture());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(30))));
  EXPECT_THAT(Ids(leases), ElementsAre("j"));
}

// ------------------------------------------------------------ Dedup window

TEST_P(BackendConformanceTest, AnAckedIdStaysTakenForItsWindow) {
  const std::string topic = Topic();
  Lease lease =
      AddAndReserve(Unique(MakeJob("j", topic), absl::Seconds(60)), kT0);
  ASSERT_OK(
      backend_->Ack("j", lease.token, /*result=*/"", At(absl::Seconds(1))));
  EXPECT_THAT(backend_->Get("j"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(30))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(backend_->Add({MakeJob("j", topic)},
                            At(absl::Seconds(61) - absl::Milliseconds(1))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_OK(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(61))));
}

TEST_P(BackendConformanceTest, ACancelledIdStaysTakenForItsWindow) {
  const std::string topic = Topic();
  AddOne(Unique(MakeJob("j", topic), absl::Seconds(60)));
  AddOne(MakeJob("free", topic));
  ASSERT_OK(backend_->Cancel("j", At(absl::Seconds(5))));
  ASSERT_OK(backend_->Cancel("free", At(absl::Seconds(5))));
  // Without a window the id is free at once.
  EXPECT_OK(backend_->Add({MakeJob("free", topic)}, At(absl::Seconds(6))));
  // A batch with a held id stores nothing.
  EXPECT_THAT(backend_->Add({MakeJob("other", topic), MakeJob("j", topic)},
                            At(absl::Seconds(6))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(backend_->Get("other"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(65))));
}

TEST_P(BackendConformanceTest, ADiscardedExpiredJobHoldsItsId) {
  const std::string topic = Topic();
  AddOne(Unique(Expiring(MakeJob("j", topic), absl::Seconds(10), true),
                absl::Seconds(60)));
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(10)), 100).status());
  EXPECT_THAT(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(69))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_OK(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(70))));
}

TEST_P(BackendConformanceTest, ADeadJobHoldsItsIdOnlyOnceItLeaves) {
  const std::string topic = Topic();
  NewJob job = Unique(MakeJob("j", topic), absl::Seconds(60));
  job.max_attempts = 1;
  Lease lease = AddAndReserve(job, kT0);
  ASSERT_OK(backend_->Fail("j", lease.token, "x", kT0, kT0).status());
  // Dead is live: taken as any live id, then held after the cancel.
  EXPECT_THAT(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(1))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK(backend_->Cancel("j", At(absl::Seconds(100))));
  EXPECT_THAT(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(159))),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_OK(backend_->Add({MakeJob("j", topic)}, At(absl::Seconds(160))));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
