// Copyright delayq authors.
//
// Conformance tests of who holds a lease: Job::holder and Job::reserved_at,
// stored by Reserve() (and AckAndReserve()) from ReserveReport::holder and
// `now`, shown by Get() and List() while the job is reserved, kept by
// Touch(), and gone once the lease ends. See backend_conformance.h.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

// Reserves the one job due in `topic` at `now` for `holder`.
Lease ReserveFor(Backend& backend, const std::string& topic,
                 const std::string& holder, absl::Time now) {
  ReserveReport report;
  report.holder = holder;
  absl::StatusOr<std::vector<Lease>> leases =
      backend.Reserve(topic, 1, now, &report);
  EXPECT_OK(leases.status());
  if (!leases.ok() || leases->size() != 1) {
    ADD_FAILURE() << "no lease in " << topic;
    return Lease();
  }
  return (*leases)[0];
}

void ExpectNotHeld(Backend& backend, const std::string& id) {
  absl::StatusOr<Job> job = backend.Get(id);
  ASSERT_OK(job.status());
  EXPECT_EQ(job->holder, "") << id;
  EXPECT_EQ(job->reserved_at, absl::InfinitePast()) << id;
}

TEST_P(BackendConformanceTest, HolderAndReservedAtComeWithTheLease) {
  const std::string topic = Topic();
  AddOne(MakeJob("h1", topic));
  ExpectNotHeld(*backend_, "h1");
  const absl::Time now = At(absl::Seconds(3));
  const Lease lease = ReserveFor(*backend_, topic, "web-1:4242", now);
  EXPECT_EQ(lease.job.holder, "web-1:4242");
  EXPECT_EQ(lease.job.reserved_at, now);
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("h1"));
  EXPECT_EQ(job.holder, "web-1:4242");
  EXPECT_EQ(job.reserved_at, now);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> listed,
                       backend_->List(topic, JobState::kReserved, 10));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].holder, "web-1:4242");
  EXPECT_EQ(listed[0].reserved_at, now);
  // Touch() moves the deadline, not who holds the lease or since when.
  ASSERT_OK(backend_->Touch("h1", lease.token, At(absl::Seconds(20))).status());
  ASSERT_OK_AND_ASSIGN(job, backend_->Get("h1"));
  EXPECT_EQ(job.holder, "web-1:4242");
  EXPECT_EQ(job.reserved_at, now);
  EXPECT_EQ(job.deadline, At(absl::Seconds(20)) + job.ttr);
}

TEST_P(BackendConformanceTest, HolderIsEmptyWithoutAReport) {
  const std::string topic = Topic();
  AddOne(MakeJob("anon", topic));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(1))));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get("anon"));
  EXPECT_EQ(job.holder, "");
  EXPECT_EQ(job.reserved_at, At(absl::Seconds(1)));
}

TEST_P(BackendConformanceTest, HolderGoesWhenTheLeaseEnds) {
  const std::string topic = Topic();
  NewJob kept = MakeJob("{o}acked", topic);
  kept.keep_for = absl::Hours(1);
  kept.keep_at_most = 10;
  AddOne(kept);
  AddOne(MakeJob("{o}failed", topic));
  AddOne(MakeJob("{o}released", topic));
  AddOne(MakeJob("{o}expired", topic));
  std::vector<Lease> leases;
  for (int i = 0; i < 4; ++i) {
    leases.push_back(ReserveFor(*backend_, topic, "w", kT0));
  }
  ASSERT_OK(backend_->Ack("{o}acked", leases[0].token, "r", kT0));
  ASSERT_OK(
      backend_->Fail("{o}failed", leases[1].token, "e", At(absl::Hours(1)), kT0)
          .status());
  ASSERT_OK(backend_->Release("{o}released", leases[2].token, kT0, kT0));
  const absl::Time later = kT0 + leases[3].job.ttr + absl::Seconds(1);
  ASSERT_OK(backend_->PromoteDue(later, 100).status());
  for (const char* id :
       {"{o}acked", "{o}failed", "{o}released", "{o}expired"}) {
    ExpectNotHeld(*backend_, id);
  }
  // The next lease is the next holder's, from its own reservation.
  const Lease again = ReserveFor(*backend_, topic, "w2", later);
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get(again.job.id));
  EXPECT_EQ(job.holder, "w2");
  EXPECT_EQ(job.reserved_at, later);
}

TEST_P(BackendConformanceTest, AckAndReserveStoresTheHolder) {
  const std::string topic = Topic();
  AddOne(MakeJob("{o}first", topic));
  AddOne(MakeJob("{o}second", topic));
  const Lease first = ReserveFor(*backend_, topic, "w", kT0);
  ReserveReport report;
  report.holder = "w:next";
  const absl::Time now = At(absl::Seconds(2));
  AckReserved got = backend_->AckAndReserve(first.job.id, first.token, "",
                                            topic, 1, now, &report);
  ASSERT_OK(got.acked);
  ASSERT_OK(got.leases.status());
  ASSERT_EQ(got.leases->size(), 1u);
  EXPECT_EQ((*got.leases)[0].job.holder, "w:next");
  ASSERT_OK_AND_ASSIGN(Job job, backend_->Get((*got.leases)[0].job.id));
  EXPECT_EQ(job.holder, "w:next");
  EXPECT_EQ(job.reserved_at, now);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
