// Copyright delayq authors.
//
// Batches through the Scheduler: what OpenBatch() refuses, a batch's
// progress as jobs finish, and a Reserve() that waits for a completion job
// gets it as soon as the batch completes, by its last ack or by its close.
// On the memory store and a simulated clock.

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;

JobOptions In(const std::string& batch) {
  JobOptions options;
  options.batch = batch;
  return options;
}

TEST_F(SchedulerTest, OpenBatchChecksTheCompletionJob) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  JobOptions after;
  after.after = {"a"};
  EXPECT_THAT(scheduler_->OpenBatch("done", "p", after), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->OpenBatch("done", "p", In("other")),
              StatusIs(kInvalid));
  JobOptions replace;
  replace.id = "b";
  replace.replace = true;
  EXPECT_THAT(scheduler_->OpenBatch("done", "p", replace), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->OpenBatch("bad topic", "p"), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", In("nobatch")),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(scheduler_->CloseBatch("nobatch"),
              StatusIs(absl::StatusCode::kNotFound));
  ScheduleOptions nightly;
  nightly.job.batch = "b";
  EXPECT_THAT(scheduler_->Schedule("n", "@every 1h", "t", "p", nightly),
              StatusIs(kInvalid));
}

TEST_F(SchedulerTest, ABatchCountsItsJobsAndNamesItsCompletionJob) {
  JobOptions completion;
  completion.id = "march";
  ASSERT_OK_AND_ASSIGN(std::string batch,
                       scheduler_->OpenBatch("sent", "all", completion));
  EXPECT_EQ(batch, "march");
  ASSERT_OK_AND_ASSIGN(Job waiting, scheduler_->Get(batch));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  ASSERT_OK(scheduler_
                ->EnqueueBatch("send", std::vector<std::string>{"1", "2", "3"},
                               In(batch))
                .status());
  ASSERT_OK_AND_ASSIGN(Batch b, scheduler_->GetBatch(batch));
  EXPECT_EQ(b.total, 3);
  EXPECT_EQ(b.pending(), 3);
  EXPECT_EQ(b.completion_id, "march");
  EXPECT_FALSE(b.closed);

  ASSERT_OK(scheduler_->Ack(MustReserve("send")));
  ASSERT_OK(scheduler_->Cancel(MustReserve("send").job.id));
  ASSERT_OK_AND_ASSIGN(b, scheduler_->GetBatch(batch));
  EXPECT_EQ(b.done, 1);
  EXPECT_EQ(b.cancelled, 1);
  EXPECT_EQ(b.pending(), 1);
  EXPECT_TRUE(NothingReady("sent"));
}

TEST_F(SchedulerTest, AWaitingReserveGetsTheCompletionJobOnTheLastAck) {
  ASSERT_OK_AND_ASSIGN(std::string batch, scheduler_->OpenBatch("sent", "p"));
  ASSERT_OK(scheduler_->Enqueue("send", "1", In(batch)).status());
  ASSERT_OK(scheduler_->CloseBatch(batch));
  const Lease lease = MustReserve("send");
  absl::StatusOr<std::optional<Lease>> got;
  // The simulated clock never moves here: only the ack's wake-up can end
  // this wait.
  std::thread worker(
      [&] { got = scheduler_->Reserve("sent", absl::Hours(1)); });
  ASSERT_OK(scheduler_->Ack(lease));
  worker.join();
  ASSERT_OK(got.status());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->job.id, batch);
  ASSERT_OK_AND_ASSIGN(Batch b, scheduler_->GetBatch(batch));
  EXPECT_TRUE(b.complete());
  EXPECT_EQ(b.done, 1);
}

TEST_F(SchedulerTest, AWaitingReserveGetsTheCompletionJobOnTheClose) {
  ASSERT_OK_AND_ASSIGN(std::string batch, scheduler_->OpenBatch("sent", "p"));
  ASSERT_OK(scheduler_->Enqueue("send", "1", In(batch)).status());
  ASSERT_OK(scheduler_->Ack(MustReserve("send")));
  EXPECT_TRUE(NothingReady("sent"));
  absl::StatusOr<std::optional<Lease>> got;
  std::thread worker(
      [&] { got = scheduler_->Reserve("sent", absl::Hours(1)); });
  ASSERT_OK(scheduler_->CloseBatch(batch));
  worker.join();
  ASSERT_OK(got.status());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->job.id, batch);
  EXPECT_THAT(scheduler_->Enqueue("send", "late", In(batch)),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace delayq
