// Copyright delayq authors.
//
// Conformance tests of the results a job's dependencies hand on: a lease of
// a job with JobOptions::after carries, in Lease::dependency_results, the
// result each dependency kept done left at its Ack(), filled by the
// reservation itself (Reserve() and AckAndReserve()). See
// dependency_conformance.h.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// `job` kept done for an hour once acked.
NewJob Kept(NewJob job) {
  job.keep_for = absl::Hours(1);
  job.keep_at_most = 100;
  return job;
}

NewJob WaitingFor(NewJob job, std::vector<std::string> after,
                  DependencyFailure policy = DependencyFailure::kFail) {
  job.after = std::move(after);
  job.on_dependency_failure = policy;
  return job;
}

// The one job of `topic` due at `now`, reserved.
Lease ReserveOne(Backend& backend, const std::string& topic, absl::Time now) {
  absl::StatusOr<std::vector<Lease>> leases = backend.Reserve(topic, 10, now);
  EXPECT_OK(leases.status());
  if (!leases.ok() || leases->size() != 1) {
    ADD_FAILURE() << "expected one lease of " << topic;
    return Lease();
  }
  return std::move((*leases)[0]);
}

TEST_P(DependencyResultsTest, ALeaseCarriesTheResultsOfItsKeptDependencies) {
  const std::string deps = Topic("deps");
  const Lease a = AddAndReserve(Kept(MakeJob("{f}a", deps)), kT0);
  const Lease b = AddAndReserve(Kept(MakeJob("{f}b", deps)), kT0);
  const Lease c = AddAndReserve(MakeJob("{f}c", deps), kT0);
  const std::string parent = Topic("parent");
  AddOne(WaitingFor(MakeJob("{f}w", parent), {"{f}a", "{f}b", "{f}c"}));
  // Results are bytes: an empty one and one that is not text count too.
  const std::string bytes("r\0\xff", 3);
  ASSERT_OK(backend_->Ack("{f}a", a.token, bytes, At(absl::Seconds(1))));
  ASSERT_OK(backend_->Ack("{f}b", b.token, "", At(absl::Seconds(2))));
  // Acked without keep_for: met, but its result is not kept.
  ASSERT_OK(backend_->Ack("{f}c", c.token, "lost", At(absl::Seconds(3))));

  const Lease w = ReserveOne(*backend_, parent, At(absl::Seconds(4)));
  EXPECT_EQ(w.job.id, "{f}w");
  EXPECT_THAT(w.dependency_results,
              UnorderedElementsAre(Pair("{f}a", bytes), Pair("{f}b", "")));
}

TEST_P(DependencyResultsTest, ADependencyDoneBeforeTheEnqueueHandsItsResultOn) {
  const std::string topic = Topic();
  const Lease d = AddAndReserve(Kept(MakeJob("{f}d", topic)), kT0);
  ASSERT_OK(backend_->Ack("{f}d", d.token, "42", At(absl::Seconds(1))));
  AddOne(WaitingFor(MakeJob("{f}w", topic, At(absl::Seconds(2))), {"{f}d"}),
         At(absl::Seconds(2)));
  const Lease w = ReserveOne(*backend_, topic, At(absl::Seconds(2)));
  EXPECT_THAT(w.dependency_results, ElementsAre(Pair("{f}d", "42")));
}

TEST_P(DependencyResultsTest, EveryAttemptCarriesTheResultsStillKept) {
  const std::string topic = Topic();
  const Lease d = AddAndReserve(Kept(MakeJob("{f}d", topic)), kT0);
  NewJob w = WaitingFor(MakeJob("{f}w", topic), {"{f}d"});
  w.max_attempts = 3;
  AddOne(w);
  ASSERT_OK(backend_->Ack("{f}d", d.token, "first", At(absl::Seconds(1))));
  const Lease one = ReserveOne(*backend_, topic, At(absl::Seconds(2)));
  ASSERT_THAT(backend_->Fail("{f}w", one.token, "again", At(absl::Seconds(3)),
                             At(absl::Seconds(2))),
              IsOkAndHolds(FailOutcome::kRetry));
  const Lease two = ReserveOne(*backend_, topic, At(absl::Seconds(3)));
  EXPECT_EQ(two.job.attempts, 2);
  EXPECT_THAT(two.dependency_results, ElementsAre(Pair("{f}d", "first")));
  // Once the dependency has left the store, its result is no longer there.
  ASSERT_OK(backend_->Cancel("{f}d", At(absl::Seconds(4))));
  ASSERT_OK(backend_->Release("{f}w", two.token, At(absl::Seconds(4)),
                              At(absl::Seconds(4))));
  const Lease three = ReserveOne(*backend_, topic, At(absl::Seconds(4)));
  EXPECT_THAT(three.dependency_results, IsEmpty());
}

TEST_P(DependencyResultsTest, AckAndReserveCarriesThemToo) {
  const std::string topic = Topic();
  const Lease d = AddAndReserve(Kept(MakeJob("{f}d", topic)), kT0);
  AddOne(WaitingFor(MakeJob("{f}w", topic), {"{f}d"}));
  // The ack releases the waiting job and the same call reserves it.
  AckReserved both = backend_->AckAndReserve(
      "{f}d", d.token, "handed on", topic, 10, At(absl::Seconds(1)), nullptr);
  ASSERT_OK(both.acked);
  ASSERT_OK(both.leases.status());
  ASSERT_EQ(both.leases->size(), 1u);
  EXPECT_EQ((*both.leases)[0].job.id, "{f}w");
  EXPECT_THAT((*both.leases)[0].dependency_results,
              ElementsAre(Pair("{f}d", "handed on")));
}

TEST_P(DependencyResultsTest, ADeadDependencyUnderKRunLeavesNoResult) {
  const std::string topic = Topic();
  NewJob dead = MakeJob("{f}d", topic);
  dead.max_attempts = 1;
  const Lease d = AddAndReserve(Kept(dead), kT0);
  const Lease k = AddAndReserve(Kept(MakeJob("{f}k", topic)), kT0);
  AddOne(WaitingFor(MakeJob("{f}w", Topic("parent")), {"{f}d", "{f}k"},
                    DependencyFailure::kRun));
  ASSERT_THAT(backend_->Fail("{f}d", d.token, "boom", At(absl::Seconds(5)),
                             At(absl::Seconds(1))),
              IsOkAndHolds(FailOutcome::kDead));
  ASSERT_OK(backend_->Ack("{f}k", k.token, "ok", At(absl::Seconds(2))));
  const Lease w = ReserveOne(*backend_, Topic("parent"), At(absl::Seconds(3)));
  EXPECT_THAT(w.dependency_results, ElementsAre(Pair("{f}k", "ok")));
}

// A lease of a job with as many dependencies as allowed carries every
// result kept (a Redis script reads them a bounded slice at a time).
TEST_P(DependencyResultsTest, TheResultsOfTheMostDependenciesAllowedArrive) {
  const std::string topic = Topic();
  std::vector<NewJob> children;
  std::vector<std::string> ids;
  for (int i = 0; i < kMaxDependencies; ++i) {
    ids.push_back(absl::StrCat("{f}c", i));
    children.push_back(Kept(MakeJob(ids.back(), topic)));
    children.back().keep_at_most = kMaxDependencies;
  }
  ASSERT_OK(backend_->Add(children, kT0));
  AddOne(WaitingFor(MakeJob("{f}w", Topic("parent")), ids));
  for (int acked = 0; acked < kMaxDependencies;) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend_->Reserve(topic, 1000, At(absl::Seconds(1))));
    ASSERT_FALSE(leases.empty()) << "after " << acked << " acks";
    for (const Lease& l : leases) {
      ASSERT_OK(backend_->Ack(l.job.id, l.token, "r-" + l.job.id,
                              At(absl::Seconds(1))));
    }
    acked += static_cast<int>(leases.size());
  }
  const Lease w = ReserveOne(*backend_, Topic("parent"), At(absl::Seconds(2)));
  ASSERT_EQ(w.dependency_results.size(), ids.size());
  EXPECT_EQ(w.dependency_results.at("{f}c0"), "r-{f}c0");
  EXPECT_EQ(w.dependency_results.at(ids.back()), "r-" + ids.back());
}

TEST_P(DependencyResultsTest, AJobWithoutDependenciesCarriesNone) {
  const std::string topic = Topic();
  const Lease d = AddAndReserve(Kept(MakeJob("{f}d", topic)), kT0);
  ASSERT_OK(backend_->Ack("{f}d", d.token, "x", At(absl::Seconds(1))));
  AddOne(MakeJob("{f}plain", topic, At(absl::Seconds(1))),
         At(absl::Seconds(1)));
  const Lease plain = ReserveOne(*backend_, topic, At(absl::Seconds(2)));
  EXPECT_THAT(plain.dependency_results, IsEmpty());
}

}  // namespace
}  // namespace testing
}  // namespace delayq
