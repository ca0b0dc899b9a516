// Copyright delayq authors.
//
// Conformance tests of the settled jobs a store reports (Settled in
// delayq/backend.h): every call whose transition settles jobs that wait
// for it names them, with the state they went to, so that the caller can
// tell their events; a call that settles nothing reports nothing. The
// batch's completion job is in batch_conformance.cc.

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
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

NewJob After(NewJob job, std::vector<std::string> after,
             DependencyFailure policy = DependencyFailure::kFail) {
  job.after = std::move(after);
  job.on_dependency_failure = policy;
  return job;
}

NewJob OneAttempt(NewJob job) {
  job.max_attempts = 1;
  return job;
}

// "state id topic" of each settled job, in order: what the tests compare.
std::vector<std::string> Told(const std::vector<Settled>& settled) {
  std::vector<std::string> out;
  for (const Settled& s : settled) {
    const char* state = s.kind == Settled::Kind::kReady     ? "ready"
                        : s.kind == Settled::Kind::kDelayed ? "delayed"
                        : s.kind == Settled::Kind::kDead    ? "dead"
                                                            : "cancelled";
    out.push_back(absl::StrCat(state, " ", s.id, " ", s.topic));
  }
  return out;
}

// The entry of `id` among `settled`, failing the test when there is none.
Settled Find(const std::vector<Settled>& settled, absl::string_view id) {
  for (const Settled& s : settled) {
    if (s.id == id) return s;
  }
  ADD_FAILURE() << id << " was not reported";
  return Settled();
}

// The position of `id` among `settled` (its size when absent).
size_t PositionOf(const std::vector<Settled>& settled, absl::string_view id) {
  size_t i = 0;
  while (i < settled.size() && settled[i].id != id) ++i;
  return i;
}

TEST_P(DependencyConformanceTest, AnAckReportsTheDependantsItReleases) {
  const std::string topic = Topic();
  const std::string later = Topic("later");
  AddOne(MakeJob("{f}a", topic));
  AddOne(After(MakeJob("{f}now", topic), {"{f}a"}));
  AddOne(After(MakeJob("{f}soon", later, At(absl::Hours(1))), {"{f}a"}));
  AddOne(MakeJob("{f}plain", Topic("plain")));

  // A job nobody waits for settles nothing.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> plain,
                       backend_->Reserve(Topic("plain"), 1, kT0));
  ASSERT_EQ(plain.size(), 1u);
  std::vector<Settled> settled;
  ASSERT_OK(backend_->Ack("{f}plain", plain[0].token, "", At(absl::Seconds(1)),
                          &settled));
  EXPECT_THAT(settled, IsEmpty());

  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_THAT(Ids(leases), ElementsAre("{f}a"));
  // A stale ack reports nothing.
  EXPECT_THAT(backend_->Ack("{f}a", leases[0].token + 1, "",
                            At(absl::Seconds(2)), &settled),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(settled, IsEmpty());
  ASSERT_OK(backend_->Ack("{f}a", leases[0].token, "", At(absl::Seconds(2)),
                          &settled));
  EXPECT_THAT(Told(settled), UnorderedElementsAre("ready {f}now " + topic,
                                                  "delayed {f}soon " + later));
  EXPECT_EQ(Find(settled, "{f}now").error, "");
}

TEST_P(DependencyConformanceTest, AckBatchAndAckAndReserveReportTheirs) {
  const std::string topic = Topic();
  const std::string parent = Topic("parent");
  AddOne(MakeJob("{f}a", topic));
  AddOne(MakeJob("{f}b", topic));
  AddOne(After(MakeJob("{f}wa", parent), {"{f}a"}));
  AddOne(After(MakeJob("{f}wb", parent), {"{f}b"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 2u);
  const Lease& a = leases[0].job.id == "{f}a" ? leases[0] : leases[1];
  const Lease& b = leases[0].job.id == "{f}a" ? leases[1] : leases[0];

  std::vector<Settled> settled;
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch({a}, At(absl::Seconds(2)), &settled));
  EXPECT_THAT(acked, ElementsAre(absl::OkStatus()));
  EXPECT_THAT(Told(settled), ElementsAre("ready {f}wa " + parent));

  // The ack's first, then what the reservation's own step settled (here
  // nothing); the reservation takes the job the ack released.
  ReserveReport report;
  AckReserved both = backend_->AckAndReserve("{f}b", b.token, "", parent, 10,
                                             At(absl::Seconds(3)), &report);
  ASSERT_OK(both.acked);
  ASSERT_OK(both.leases.status());
  EXPECT_THAT(Ids(*both.leases), UnorderedElementsAre("{f}wa", "{f}wb"));
  EXPECT_THAT(Told(report.settled), ElementsAre("ready {f}wb " + parent));
}

TEST_P(DependencyConformanceTest, ADeathReportsEachPolicysOutcome) {
  const std::string topic = Topic();
  const std::string waits = Topic("waits");
  AddOne(OneAttempt(MakeJob("{f}a", topic)));
  AddOne(After(MakeJob("{f}fail", waits), {"{f}a"}, DependencyFailure::kFail));
  AddOne(
      After(MakeJob("{f}cancel", waits), {"{f}a"}, DependencyFailure::kCancel));
  AddOne(After(MakeJob("{f}run", waits), {"{f}a"}, DependencyFailure::kRun));
  // Fails in turn when {f}fail does.
  AddOne(After(MakeJob("{f}next", waits), {"{f}fail"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_THAT(Ids(leases), ElementsAre("{f}a"));

  std::vector<Settled> settled;
  ASSERT_THAT(
      backend_->Fail("{f}a", leases[0].token, "boom", At(absl::Seconds(5)),
                     At(absl::Seconds(2)), &settled),
      IsOkAndHolds(FailOutcome::kDead));
  EXPECT_THAT(Told(settled),
              UnorderedElementsAre(
                  "dead {f}fail " + waits, "cancelled {f}cancel " + waits,
                  "ready {f}run " + waits, "dead {f}next " + waits));
  EXPECT_THAT(Find(settled, "{f}fail").error, HasSubstr("{f}a"));
  EXPECT_THAT(Find(settled, "{f}next").error, HasSubstr("{f}fail"));
  EXPECT_EQ(Find(settled, "{f}cancel").error, "");
  EXPECT_LT(PositionOf(settled, "{f}fail"), PositionOf(settled, "{f}next"));
  // What they say is what the store did.
  ASSERT_OK_AND_ASSIGN(Job fail, backend_->Get("{f}fail"));
  EXPECT_EQ(fail.state, JobState::kDead);
  EXPECT_EQ(fail.last_error, Find(settled, "{f}fail").error);
  EXPECT_THAT(backend_->Get("{f}cancel"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(DependencyConformanceTest, ARetryReportsNothing) {
  const std::string topic = Topic();
  AddOne(MakeJob("{f}a", topic));
  AddOne(After(MakeJob("{f}w", Topic("w")), {"{f}a"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 1u);
  std::vector<Settled> settled;
  ASSERT_THAT(
      backend_->Fail("{f}a", leases[0].token, "boom", At(absl::Seconds(5)),
                     At(absl::Seconds(2)), &settled),
      IsOkAndHolds(FailOutcome::kRetry));
  EXPECT_THAT(settled, IsEmpty());
}

TEST_P(DependencyConformanceTest, ACancelReportsTheDependantsItSettles) {
  const std::string topic = Topic();
  const std::string waits = Topic("waits");
  AddOne(MakeJob("{f}a", topic));
  AddOne(After(MakeJob("{f}fail", waits), {"{f}a"}));
  AddOne(After(MakeJob("{f}run", waits, At(absl::Hours(1))), {"{f}a"},
               DependencyFailure::kRun));
  std::vector<Settled> settled;
  ASSERT_OK(backend_->Cancel("{f}a", At(absl::Seconds(1)), &settled));
  EXPECT_THAT(Told(settled), UnorderedElementsAre("dead {f}fail " + waits,
                                                  "delayed {f}run " + waits));
  EXPECT_THAT(Find(settled, "{f}fail").error, HasSubstr("{f}a"));
  EXPECT_THAT(backend_->Cancel("{f}a", At(absl::Seconds(2)), &settled),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(settled.size(), 2u);
}

TEST_P(DependencyConformanceTest, AnExpiredLastLeaseReportsItsDependants) {
  const std::string topic = Topic();
  const std::string waits = Topic("waits");
  NewJob a = OneAttempt(MakeJob("{f}a", topic));
  a.ttr = absl::Seconds(10);
  AddOne(a);
  AddOne(After(MakeJob("{f}w", waits), {"{f}a"}));
  NewJob b = OneAttempt(MakeJob("{f}b", topic));
  b.ttr = absl::Seconds(12);
  AddOne(b);
  AddOne(After(MakeJob("{f}v", waits), {"{f}b"}, DependencyFailure::kRun));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_EQ(leases.size(), 2u);

  // A promotion finds the one lease dead...
  ASSERT_OK_AND_ASSIGN(PromoteResult promoted,
                       backend_->PromoteDue(At(absl::Seconds(11)), 100));
  EXPECT_THAT(Told(promoted.settled), ElementsAre("dead {f}w " + waits));
  // ... and a reservation's own step the other.
  ReserveReport report;
  ASSERT_OK(
      backend_->Reserve(topic, 1, At(absl::Seconds(20)), &report).status());
  EXPECT_THAT(Told(report.settled), ElementsAre("ready {f}v " + waits));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
