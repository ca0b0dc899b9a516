// Copyright delayq authors.
//
// Conformance tests of what a store counts (Backend::Counts(),
// CountTotals()): every transition in the minute of its call, once, and
// minutes kept for the window. See backend_conformance.h.

#include <string>
#include <vector>

#include "delayq/counts.h"
#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The minute that holds kT0, and the ones after it.
absl::Time Minute(int n) { return MinuteOf(kT0) + absl::Minutes(n); }

// `topic`'s minutes from `from` to `to`, as (minute, counts).
std::vector<std::pair<absl::Time, JobCounts>> MinutesOf(
    Backend& backend, const std::string& topic, absl::Time from,
    absl::Time to) {
  std::vector<std::pair<absl::Time, JobCounts>> out;
  absl::StatusOr<std::vector<TopicMinute>> got = backend.Counts(from, to);
  EXPECT_OK(got.status());
  if (!got.ok()) return out;
  for (const TopicMinute& m : *got) {
    if (m.topic == topic) out.emplace_back(m.minute, m.counts);
  }
  return out;
}

// `topic`'s totals (all zero when it has none).
JobCounts TotalsOf(Backend& backend, const std::string& topic) {
  absl::StatusOr<std::vector<TopicTotals>> got = backend.CountTotals();
  EXPECT_OK(got.status());
  if (got.ok()) {
    for (const TopicTotals& t : *got) {
      if (t.topic == topic) return t.counts;
    }
  }
  return JobCounts();
}

JobCounts Counts(std::initializer_list<std::pair<const char*, int64_t>> kinds) {
  JobCounts c;
  for (const auto& [kind, n] : kinds) {
    const std::string k = kind;
    if (k == "enqueued") c.enqueued = n;
    if (k == "done") c.done = n;
    if (k == "failed") c.failed = n;
    if (k == "retried") c.retried = n;
    if (k == "expired") c.expired = n;
    if (k == "dead") c.dead = n;
    if (k == "lapsed") c.lapsed = n;
    if (k.rfind("late", 0) == 0) c.lateness[k[4] - '0'] = n;
  }
  return c;
}

TEST(LatenessBucketTest, BoundsBelongToTheirBucket) {
  EXPECT_EQ(LatenessBucket(-5), 0);
  EXPECT_EQ(LatenessBucket(10'000), 0);
  EXPECT_EQ(LatenessBucket(10'001), 1);
  EXPECT_EQ(LatenessBucket(1'000'000), 2);
  EXPECT_EQ(LatenessBucket(60'000'000), 4);
  EXPECT_EQ(LatenessBucket(60'000'001), 5);
}

TEST_P(BackendConformanceTest, EachTransitionIsCountedInTheMinuteOfItsCall) {
  const std::string topic = Topic();
  // Minute 0: three jobs, two due now and one in two minutes; both due
  // ones delivered 5 s late; one acked, one failed with attempts left.
  ASSERT_OK(backend_->Add({MakeJob("{o}a", topic), MakeJob("{o}b", topic),
                           MakeJob("{o}c", topic, Minute(2))},
                          kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0 + absl::Seconds(5)));
  ASSERT_EQ(leases.size(), 2u);
  ASSERT_OK(backend_->Ack(leases[0].job.id, leases[0].token, /*result=*/"",
                          kT0 + absl::Seconds(6)));
  ASSERT_OK_AND_ASSIGN(FailOutcome outcome,
                       backend_->Fail(leases[1].job.id, leases[1].token, "no",
                                      Minute(3), kT0 + absl::Seconds(6)));
  ASSERT_EQ(outcome, FailOutcome::kRetry);
  // Minute 2: "c" comes due and is delivered 30 s late; its lease runs out
  // (30 s) in minute 3, when the retried "b" comes due (not counted).
  ASSERT_OK_AND_ASSIGN(
      leases, backend_->Reserve(topic, 1, Minute(2) + absl::Seconds(30)));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK_AND_ASSIGN(PromoteResult moved,
                       backend_->PromoteDue(Minute(3) + absl::Seconds(1), 10));
  ASSERT_EQ(moved.transitions.size(), 2u);  // "b" promoted, "c" expired

  EXPECT_THAT(MinutesOf(*backend_, topic, kT0, Minute(10)),
              ElementsAre(std::make_pair(Minute(0), Counts({{"enqueued", 3},
                                                            {"late3", 2},
                                                            {"done", 1},
                                                            {"failed", 1},
                                                            {"retried", 1}})),
                          std::make_pair(Minute(2), Counts({{"late4", 1}})),
                          std::make_pair(Minute(3), Counts({{"expired", 1}}))));
  EXPECT_EQ(TotalsOf(*backend_, topic), Counts({{"enqueued", 3},
                                                {"late3", 2},
                                                {"late4", 1},
                                                {"done", 1},
                                                {"failed", 1},
                                                {"retried", 1},
                                                {"expired", 1}}));
}

TEST_P(BackendConformanceTest, DeathsAndLapsesAreCountedWithTheirCause) {
  const std::string topic = Topic();
  NewJob fails = MakeJob("{o}fails", topic);
  fails.max_attempts = 1;
  NewJob times_out = MakeJob("{o}times-out", topic);
  times_out.max_attempts = 1;
  NewJob lapses = MakeJob("{o}lapses", topic, Minute(5));
  lapses.expire_at = Minute(1);
  NewJob discarded = MakeJob("{o}discarded", topic, Minute(5));
  discarded.expire_at = Minute(1);
  discarded.discard_expired = true;
  ASSERT_OK(backend_->Add({fails, times_out, lapses, discarded}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_EQ(leases.size(), 2u);
  for (const Lease& l : leases) {
    if (l.job.id != fails.id) continue;
    ASSERT_OK_AND_ASSIGN(FailOutcome outcome,
                         backend_->Fail(l.job.id, l.token, "no", kT0, kT0));
    EXPECT_EQ(outcome, FailOutcome::kDead);
  }
  // Minute 1: the lapses; the lease (30 s from kT0) ran out before.
  ASSERT_OK_AND_ASSIGN(PromoteResult moved,
                       backend_->PromoteDue(Minute(1) + absl::Seconds(1), 10));
  EXPECT_EQ(moved.transitions.size(), 3u);

  EXPECT_THAT(
      MinutesOf(*backend_, topic, kT0, Minute(10)),
      ElementsAre(std::make_pair(Minute(0), Counts({{"enqueued", 4},
                                                    {"late0", 2},
                                                    {"failed", 1},
                                                    {"dead", 1}})),
                  std::make_pair(
                      Minute(1),
                      Counts({{"expired", 1}, {"dead", 2}, {"lapsed", 2}}))));
}

TEST_P(BackendConformanceTest, BatchesCountEachJobUnderItsTopic) {
  const std::string a = Topic("a"), b = Topic("b");
  ASSERT_OK(backend_->Add(
      {MakeJob("{o}1", a), MakeJob("{o}2", a), MakeJob("{o}3", b)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, backend_->Reserve(a, 2, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> more, backend_->Reserve(b, 2, kT0));
  leases.insert(leases.end(), more.begin(), more.end());
  leases.push_back(leases[0]);  // twice: counted once
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch(leases, kT0));
  ASSERT_EQ(acked.size(), 4u);
  EXPECT_EQ(TotalsOf(*backend_, a),
            Counts({{"enqueued", 2}, {"late0", 2}, {"done", 2}}));
  EXPECT_EQ(TotalsOf(*backend_, b),
            Counts({{"enqueued", 1}, {"late0", 1}, {"done", 1}}));
}

TEST_P(BackendConformanceTest, CallsThatMoveNothingCountNothing) {
  const std::string topic = Topic();
  Lease lease = AddAndReserve(MakeJob("{o}b", topic), kT0);
  ASSERT_OK(backend_->Add({MakeJob("{o}a", topic)}, kT0));
  ASSERT_OK(backend_->Touch(lease.job.id, lease.token, kT0).status());
  ASSERT_OK(backend_->Release(lease.job.id, lease.token, kT0, kT0));
  ASSERT_OK(backend_->Cancel("{o}a", kT0));
  // A stale ack changes nothing, so counts nothing.
  EXPECT_FALSE(
      backend_->Ack(lease.job.id, lease.token, /*result=*/"", kT0).ok());
  EXPECT_EQ(TotalsOf(*backend_, topic),
            Counts({{"enqueued", 2}, {"late0", 1}}));
}

// Processes' clocks differ: a call may count in a minute that another
// process's calls have already left behind. It counts there, once, and in
// the totals, however the store keeps them.
TEST_P(BackendConformanceTest, ACallWhoseClockIsBehindCountsInItsMinute) {
  const std::string topic = Topic();
  AddOne(MakeJob("{o}a", topic), Minute(1));
  AddOne(MakeJob("{o}b", topic), Minute(0));
  AddOne(MakeJob("{o}c", topic), Minute(2));
  AddOne(MakeJob("{o}d", topic), Minute(0) + absl::Seconds(30));
  AddOne(MakeJob("{o}e", topic), Minute(1) + absl::Seconds(30));
  EXPECT_EQ(TotalsOf(*backend_, topic), Counts({{"enqueued", 5}}));
  AddOne(MakeJob("{o}f", topic), Minute(3));
  EXPECT_THAT(
      MinutesOf(*backend_, topic, kT0, Minute(10)),
      ElementsAre(std::make_pair(Minute(0), Counts({{"enqueued", 2}})),
                  std::make_pair(Minute(1), Counts({{"enqueued", 2}})),
                  std::make_pair(Minute(2), Counts({{"enqueued", 1}})),
                  std::make_pair(Minute(3), Counts({{"enqueued", 1}}))));
  EXPECT_EQ(TotalsOf(*backend_, topic), Counts({{"enqueued", 6}}));
}

TEST_P(BackendConformanceTest, MinutesOlderThanTheWindowGo) {
  const std::string topic = Topic();
  AddOne(MakeJob("{o}old", topic), kT0);
  // A day later (the default window), the first minute is gone; the totals
  // keep it.
  const absl::Time later = kT0 + absl::Hours(24) + absl::Minutes(1);
  AddOne(MakeJob("{o}new", topic), later);
  EXPECT_THAT(
      MinutesOf(*backend_, topic, kT0 - absl::Hours(1), later),
      ElementsAre(std::make_pair(MinuteOf(later), Counts({{"enqueued", 1}}))));
  EXPECT_THAT(MinutesOf(*backend_, topic, kT0, kT0 + absl::Hours(1)),
              IsEmpty());
  EXPECT_EQ(TotalsOf(*backend_, topic), Counts({{"enqueued", 2}}));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
