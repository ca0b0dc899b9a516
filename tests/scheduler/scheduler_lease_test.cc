// Copyright delayq authors.
//
// Leases: ack (alone and in batches), fail with backoff, release, touch,
// expiry, fencing of stale tokens, cancel, batches, and what Stats(),
// Topics() and List() show.
// On the memory store and a simulated clock: nothing here depends on
// real time, so every test is deterministic.

#include <memory>
#include <string>
#include <vector>

#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::IsOkAndHolds;
using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(SchedulerTest, ImmediateJobRoundTrip) {
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("mail", "hello"));
  Lease lease = MustReserve("mail");
  EXPECT_EQ(lease.job.id, id);
  EXPECT_EQ(lease.job.payload, "hello");
  EXPECT_EQ(lease.job.attempts, 1);
  EXPECT_EQ(lease.deadline, kStart + absl::Seconds(60));
  EXPECT_TRUE(NothingReady("mail"));
  ASSERT_OK(scheduler_->Ack(lease));
  EXPECT_THAT(scheduler_->Get(id), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SchedulerTest, StaleLeaseIsFenced) {
  JobOptions options;
  options.id = "j";
  options.ttr = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  Lease first = MustReserve("t");
  clock_.Advance(absl::Seconds(10));
  Lease second = MustReserve("t");  // the first lease expired
  EXPECT_NE(first.token, second.token);
  EXPECT_EQ(second.job.attempts, 2);
  const auto kStale = absl::StatusCode::kFailedPrecondition;
  EXPECT_THAT(scheduler_->Ack(first), StatusIs(kStale));
  EXPECT_THAT(scheduler_->Fail(first, "late"), StatusIs(kStale));
  EXPECT_THAT(scheduler_->Release(first, absl::ZeroDuration()),
              StatusIs(kStale));
  EXPECT_THAT(scheduler_->Touch(first), StatusIs(kStale));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("j"));
  EXPECT_EQ(job.state, JobState::kReserved);
  EXPECT_OK(scheduler_->Ack(second));
  EXPECT_THAT(scheduler_->Ack(second), StatusIs(kStale));
}

TEST_F(SchedulerTest, AckBatchTellsOfEachJobItAcked) {
  EventLog log;
  log.Attach(*scheduler_);
  std::vector<Lease> leases = EnqueueAndReserve(*scheduler_, {"a", "b"});
  ASSERT_EQ(leases.size(), 2u);
  log.Take();
  Lease stale = leases[1];
  stale.token += 1000;
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       scheduler_->AckBatch({leases[0], stale}));
  ASSERT_EQ(acked.size(), 2u);
  EXPECT_OK(acked[0]);
  EXPECT_THAT(acked[1], StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(log.Take(), ElementsAre("succeeded:" + leases[0].job.id));
  ASSERT_OK_AND_ASSIGN(acked, scheduler_->AckBatch({leases[1]}));
  EXPECT_THAT(acked, ElementsAre(absl::OkStatus()));
  EXPECT_THAT(log.Take(), ElementsAre("succeeded:" + leases[1].job.id));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("t"));
  EXPECT_EQ(stats, TopicStats{});
}

// A store whose ack of one job fails (a lost connection, say), acking a
// batch one lease at a time as Backend::AckBatch() does by default.
class OneAckFails : public BackendWrapper {
 public:
  OneAckFails(std::unique_ptr<Backend> target, std::string failing_id)
      : BackendWrapper(target.get()),
        owned_(std::move(target)),
        failing_id_(std::move(failing_id)) {}
  using BackendWrapper::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override {
    if (id == failing_id_) return absl::UnavailableError("connection lost");
    return BackendWrapper::Ack(id, token, result, now, settled);
  }
  using BackendWrapper::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override {
    return Backend::AckBatch(leases, now, settled);
  }

 private:
  std::unique_ptr<Backend> owned_;
  std::string failing_id_;
};

// The default batch ack goes on past a lease whose ack failed, and tells
// of the others.
TEST(SchedulerAckBatchTest, AFailedAckIsItsLeasesAlone) {
  SimulatedClock clock(kStart);
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Scheduler> scheduler,
      Scheduler::Create(std::make_unique<OneAckFails>(NewMemoryBackend(), "b"),
                        options));
  EventLog log;
  log.Attach(*scheduler);
  std::vector<Lease> leases = EnqueueAndReserve(*scheduler, {"a", "b", "c"});
  ASSERT_EQ(leases.size(), 3u);
  log.Take();
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       scheduler->AckBatch(leases));
  ASSERT_EQ(acked.size(), 3u);
  std::vector<std::string> succeeded;
  for (size_t i = 0; i < leases.size(); ++i) {
    if (leases[i].job.id == "b") {
      EXPECT_THAT(acked[i], StatusIs(absl::StatusCode::kUnavailable));
    } else {
      EXPECT_OK(acked[i]);
      succeeded.push_back("succeeded:" + leases[i].job.id);
    }
  }
  EXPECT_EQ(log.Take(), succeeded);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("t"));
  EXPECT_EQ(stats.reserved, 1);
}

TEST_F(SchedulerTest, FailRetriesWithBackoffThenDies) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options;
  options.id = "pay";
  options.max_attempts = 3;
  options.backoff = Backoff::Exponential(absl::Seconds(2), absl::Seconds(3));
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));

  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "timeout 1"));
  clock_.Advance(absl::Milliseconds(1999));
  EXPECT_TRUE(NothingReady("t"));  // backoff after attempt 1: 2 s
  clock_.Advance(absl::Milliseconds(1));
  Lease second = MustReserve("t");
  EXPECT_EQ(second.job.attempts, 2);
  EXPECT_EQ(second.job.last_error, "timeout 1");

  ASSERT_OK(scheduler_->Fail(second, "timeout 2"));
  clock_.Advance(absl::Milliseconds(2999));
  EXPECT_TRUE(NothingReady("t"));  // 4 s capped at 3 s
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "timeout 3"));

  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("pay"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "timeout 3");
  EXPECT_EQ(job.attempts, 3);
  std::vector<std::string> events = log.Take();
  EXPECT_THAT(events, ::testing::Contains("retried:pay").Times(2));
  EXPECT_THAT(events, ::testing::Contains("dead:pay").Times(1));
  EXPECT_EQ(events.back(), "dead:pay");

  ASSERT_OK_AND_ASSIGN(int kicked, scheduler_->Kick("t", 10));
  EXPECT_EQ(kicked, 1);
  EXPECT_EQ(MustReserve("t").job.attempts, 1);
}

// An error is for people: the job keeps its first 8 KiB (not cut inside a
// UTF-8 sequence), and so does every listener, whatever a worker sends.
TEST_F(SchedulerTest, AFailsErrorIsKeptUpToEightKilobytes) {
  std::string told;
  scheduler_->AddListener([&](const Event& e) {
    if (e.type == EventType::kDead) told = e.error;
  });
  JobOptions options;
  options.id = "long";
  options.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  std::string error;
  while (error.size() < 100'000) error += "\xe2\x82\xac";  // the euro sign
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), error));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("long"));
  EXPECT_EQ(job.last_error.size(), 8190u);  // 2,730 whole signs
  EXPECT_EQ(job.last_error, error.substr(0, 8190));
  EXPECT_EQ(told, job.last_error);
}

TEST_F(SchedulerTest, ReleaseGivesTheAttemptBack) {
  JobOptions options;
  options.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  ASSERT_OK(scheduler_->Release(MustReserve("t"), absl::Seconds(5)));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(5));
  Lease lease = MustReserve("t");
  EXPECT_EQ(lease.job.attempts, 1);
  EXPECT_THAT(scheduler_->Release(lease, -absl::Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SchedulerTest, TouchExtendsTheLease) {
  JobOptions options;
  options.ttr = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  Lease lease = MustReserve("t");
  clock_.Advance(absl::Seconds(8));
  ASSERT_OK(scheduler_->Touch(lease));
  EXPECT_EQ(lease.deadline, kStart + absl::Seconds(18));
  clock_.Advance(absl::Seconds(9));
  EXPECT_TRUE(NothingReady("t"));
  EXPECT_OK(scheduler_->Ack(lease));
}

TEST_F(SchedulerTest, ExpiredLeaseIsDeliveredAgainThenDies) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options;
  options.id = "x";
  options.ttr = absl::Seconds(1);
  options.max_attempts = 2;
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  MustReserve("t");
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  MustReserve("t");
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("x"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_THAT(log.Take(), ElementsAre("enqueued:x", "reserved:x", "expired:x",
                                      "reserved:x", "dead:x"));
}

TEST_F(SchedulerTest, CancelRemovesAJobInAnyState) {
  JobOptions options;
  options.id = "order-9";
  options.delay = absl::Minutes(30);
  ASSERT_OK(scheduler_->Enqueue("orders", "9", options));
  ASSERT_OK(scheduler_->Cancel("order-9"));
  EXPECT_THAT(scheduler_->Get("order-9"),
              StatusIs(absl::StatusCode::kNotFound));
  clock_.Advance(absl::Hours(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(0));
  EXPECT_TRUE(NothingReady("orders"));
  EXPECT_THAT(scheduler_->Cancel("order-9"),
              StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK(scheduler_->Enqueue("orders", "10", JobOptions()));
  Lease lease = MustReserve("orders");
  ASSERT_OK(scheduler_->Cancel(lease.job.id));
  EXPECT_THAT(scheduler_->Ack(lease),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(SchedulerTest, BatchEnqueueAndReserve) {
  std::vector<std::string> payloads = {"a", "b", "c", "d", "e"};
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids,
                       scheduler_->EnqueueBatch("t", payloads));
  EXPECT_EQ(ids.size(), 5u);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       scheduler_->ReserveBatch("t", 3));
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_EQ(leases[0].job.payload, "a");
  EXPECT_EQ(leases[2].job.payload, "c");
  ASSERT_OK_AND_ASSIGN(leases, scheduler_->ReserveBatch("t", 10));
  EXPECT_EQ(leases.size(), 2u);
  ASSERT_OK_AND_ASSIGN(leases, scheduler_->ReserveBatch("t", 10));
  EXPECT_THAT(leases, IsEmpty());

  JobOptions named;
  named.id = "batch";
  ASSERT_OK_AND_ASSIGN(ids, scheduler_->EnqueueBatch("u", payloads, named));
  EXPECT_THAT(
      ids, ElementsAre("batch-0", "batch-1", "batch-2", "batch-3", "batch-4"));
  // All or nothing: one live id refuses the whole batch.
  EXPECT_THAT(scheduler_->EnqueueBatch("u", payloads, named),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("u"));
  EXPECT_EQ(stats.ready, 5);
}

TEST_F(SchedulerTest, StatsTopicsAndList) {
  ASSERT_OK(scheduler_->Enqueue("a", "1"));
  ASSERT_OK(scheduler_->Enqueue("a", "2", Delayed(absl::Seconds(5))));
  ASSERT_OK(scheduler_->Enqueue("b", "3"));
  MustReserve("b");
  ASSERT_OK_AND_ASSIGN(TopicStats a, scheduler_->Stats("a"));
  EXPECT_EQ(a, (TopicStats{1, 1, 0, 0}));
  ASSERT_OK_AND_ASSIGN(TopicStats b, scheduler_->Stats("b"));
  EXPECT_EQ(b, (TopicStats{0, 0, 1, 0}));
  EXPECT_THAT(scheduler_->Topics(), IsOkAndHolds(ElementsAre("a", "b")));
  ASSERT_OK_AND_ASSIGN(std::vector<Job> delayed,
                       scheduler_->List("a", JobState::kDelayed));
  ASSERT_EQ(delayed.size(), 1u);
  EXPECT_EQ(delayed[0].payload, "2");
  EXPECT_THAT(scheduler_->Stats("bad topic"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace delayq
