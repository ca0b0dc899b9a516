// Copyright delayq authors.
//
// Conformance tests of AckAndReserve(): an ack and the next reservation in
// one call, each part on the terms it has alone. See backend_conformance.h.

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

// Three ready jobs of `topic`, ids "{x}a", "{x}b", "{x}c" (one hash tag, so
// a sharded store keeps them together), enqueued in that order.
void AddThree(Backend& backend, const std::string& topic) {
  std::vector<NewJob> jobs;
  for (const char* id : {"{x}a", "{x}b", "{x}c"}) {
    NewJob job;
    job.id = id;
    job.topic = topic;
    job.payload = id;
    job.ttr = absl::Seconds(30);
    job.run_at = kT0;
    jobs.push_back(job);
  }
  ASSERT_OK(backend.Add(jobs, kT0));
}

Lease ReserveOne(Backend& backend, const std::string& topic, absl::Time now) {
  absl::StatusOr<std::vector<Lease>> leases = backend.Reserve(topic, 1, now);
  EXPECT_OK(leases.status());
  EXPECT_EQ(leases.ok() ? leases->size() : 0u, 1u);
  return leases.ok() && !leases->empty() ? leases->front() : Lease();
}

TEST_P(BackendConformanceTest, AckAndReserveAcksThenReservesTheNext) {
  const std::string topic = Topic();
  AddThree(*backend_, topic);
  const Lease a = ReserveOne(*backend_, topic, At(absl::Seconds(1)));
  ASSERT_EQ(a.job.id, "{x}a");
  ReserveReport report;
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(2)), &report);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}b"));
  EXPECT_THAT(report.moved, IsEmpty());
  EXPECT_EQ(report.limited_until, absl::InfinitePast());
  const Lease& b = r.leases->front();
  EXPECT_EQ(b.job.state, JobState::kReserved);
  EXPECT_EQ(b.job.attempts, 1);
  EXPECT_EQ(b.deadline, At(absl::Seconds(32)));
  EXPECT_NE(b.token, a.token);
  EXPECT_THAT(backend_->Get("{x}a").status(),
              StatusIs(absl::StatusCode::kNotFound));
  // The new lease is current: it acks, and the chain goes on to the last.
  r = backend_->AckAndReserve(b.job.id, b.token, "", topic, 5,
                              At(absl::Seconds(3)), nullptr);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}c"));
  const Lease c = r.leases->front();
  r = backend_->AckAndReserve(c.job.id, c.token, "", topic, 1,
                              At(absl::Seconds(4)), nullptr);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(*r.leases, IsEmpty());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed + stats.dead, 0);
}

// A stale ack is refused as Ack() refuses it, and changes nothing; the
// reservation goes ahead all the same, so the worker is not left idle and
// no job is reserved twice.
TEST_P(BackendConformanceTest, AckAndReserveWithAStaleTokenStillReserves) {
  const std::string topic = Topic();
  AddThree(*backend_, topic);
  const Lease a = ReserveOne(*backend_, topic, At(absl::Seconds(1)));
  ASSERT_OK(backend_->Ack(a.job.id, a.token, "", At(absl::Seconds(2))));
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(3)), nullptr);
  EXPECT_THAT(r.acked, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}b"));
  // A token of a live job that is not its current reservation: the same.
  r = backend_->AckAndReserve("{x}b", r.leases->front().token + 1, "", topic, 1,
                              At(absl::Seconds(4)), nullptr);
  EXPECT_THAT(r.acked, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}c"));
  ASSERT_OK_AND_ASSIGN(Job b, backend_->Get("{x}b"));
  EXPECT_EQ(b.state, JobState::kReserved);
  EXPECT_EQ(b.attempts, 1);
}

// The ack comes first: a lease whose deadline passed, which nobody moved,
// is still current and is acked, not taken back by the reservation's
// promotion step and delivered again.
TEST_P(BackendConformanceTest, AckAndReserveAcksAnExpiredLeaseFirst) {
  const std::string topic = Topic();
  AddThree(*backend_, topic);
  const Lease a = ReserveOne(*backend_, topic, At(absl::Seconds(1)));
  ReserveReport report;
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(60)), &report);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}b"));
  EXPECT_THAT(report.moved, IsEmpty());
  EXPECT_THAT(backend_->Get("{x}a").status(),
              StatusIs(absl::StatusCode::kNotFound));
}

// The reservation step promotes what came due in the topic, as Reserve()
// does, and reports it.
TEST_P(BackendConformanceTest, AckAndReservePromotesWhatCameDue) {
  const std::string topic = Topic();
  const Lease a = AddAndReserve(MakeJob("{x}a", topic), kT0);
  AddOne(MakeJob("{x}later", topic, At(absl::Seconds(10))), kT0);
  ReserveReport report;
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(5)), &report);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(*r.leases, IsEmpty());
  r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                              At(absl::Seconds(10)), &report);
  EXPECT_THAT(r.acked, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}later"));
  ASSERT_EQ(report.moved.size(), 1u);
  EXPECT_EQ(report.moved[0].id, "{x}later");
  EXPECT_EQ(report.moved[0].kind, Transition::Kind::kPromoted);
}

// The ack frees its place under a concurrency cap before the reservation
// counts the topic's reservations.
TEST_P(BackendConformanceTest, AckAndReserveFreesTheCapBeforeReserving) {
  const std::string topic = Topic();
  TopicLimit cap;
  cap.concurrency = 1;
  if (Share(cap).concurrency != 1) GTEST_SKIP() << "the store shares caps";
  ASSERT_OK(backend_->SetLimit(topic, cap, kT0));
  AddThree(*backend_, topic);
  const Lease a = ReserveOne(*backend_, topic, At(absl::Seconds(1)));
  ReserveReport report;
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(2)), &report);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}b"));
  // A stale ack frees nothing: the cap holds the next job back.
  r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                              At(absl::Seconds(3)), &report);
  EXPECT_THAT(r.acked, StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(*r.leases, IsEmpty());
  EXPECT_EQ(report.limited_until, absl::InfiniteFuture());
}

// A paused topic hands out nothing; the ack still goes.
TEST_P(BackendConformanceTest, AckAndReserveOfAPausedTopicOnlyAcks) {
  const std::string topic = Topic();
  AddThree(*backend_, topic);
  const Lease a = ReserveOne(*backend_, topic, At(absl::Seconds(1)));
  ASSERT_OK(backend_->SetPaused(topic, true, At(absl::Seconds(1))));
  AckReserved r = backend_->AckAndReserve(a.job.id, a.token, "", topic, 1,
                                          At(absl::Seconds(2)), nullptr);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(*r.leases, IsEmpty());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats.ready, 2);
  EXPECT_EQ(stats.reserved, 0);
}

// The next job may come from another topic than the acked one's; a kept
// job is kept with its result, as by Ack().
TEST_P(BackendConformanceTest, AckAndReserveAcrossTopicsKeepsTheResult) {
  const std::string first = Topic("first");
  const std::string second = Topic("second");
  NewJob kept = MakeJob("{x}kept", first);
  kept.keep_for = absl::Hours(1);
  kept.keep_at_most = 10;
  const Lease a = AddAndReserve(kept, kT0);
  AddOne(MakeJob("{x}other", second), kT0);
  AckReserved r =
      backend_->AckAndReserve(a.job.id, a.token, "the result", second, 1,
                              At(absl::Seconds(1)), nullptr);
  EXPECT_OK(r.acked);
  ASSERT_OK(r.leases.status());
  EXPECT_THAT(Ids(*r.leases), ElementsAre("{x}other"));
  ASSERT_OK_AND_ASSIGN(Job done, backend_->Get("{x}kept"));
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, "the result");
}

}  // namespace
}  // namespace testing
}  // namespace delayq
