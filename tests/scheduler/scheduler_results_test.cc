// Copyright delayq authors.
//
// Results and done jobs through the scheduler: Ack() with a result, its
// bound, keep_for and keep_at_most checks, WaitForResult() and
// HandleResults(). On the memory store and a simulated clock; a waiter
// polls once an hour, so only this process's acknowledgement can wake it.

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;

JobOptions KeptFor(absl::Duration keep_for, const std::string& id = "") {
  JobOptions options;
  options.id = id;
  options.keep_for = keep_for;
  return options;
}

// Runs WaitForResult() on a thread of its own; Join() returns its answer.
class Waiter {
 public:
  Waiter(Scheduler& scheduler, std::string id, absl::Duration timeout)
      : thread_([this, &scheduler, id, timeout] {
          answer_ = scheduler.WaitForResult(id, timeout, absl::Hours(1));
        }) {}
  absl::StatusOr<Job> Join() {
    thread_.join();
    return *answer_;
  }

 private:
  std::optional<absl::StatusOr<Job>> answer_;
  std::thread thread_;
};

// Blocks until `n` threads wait on `clock` (a failure after 20 s of
// real time: the thread is expected in microseconds).
void AwaitWaiters(SimulatedClock& clock, int n) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (clock.Waiters() < n && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GE(clock.Waiters(), n) << "the waiter never went to sleep";
}

TEST_F(SchedulerTest, AckKeepsTheResultOfAJobWithKeepFor) {
  ASSERT_OK_AND_ASSIGN(
      std::string id,
      scheduler_->Enqueue("calc", "6*7", KeptFor(absl::Hours(1))));
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(scheduler_->Ack(MustReserve("calc"), "42"));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get(id));
  EXPECT_EQ(job.state, JobState::kDone);
  EXPECT_EQ(job.result, "42");
  EXPECT_EQ(job.finished_at, kStart + absl::Seconds(2));
  EXPECT_EQ(job.keep_at_most, kMaxDonePerTopic);  // 0 asks for the most
}

TEST_F(SchedulerTest, AResultOverTheBoundIsRefusedAndTheLeaseStays) {
  ASSERT_OK_AND_ASSIGN(
      std::string id,
      scheduler_->Enqueue("calc", "p", KeptFor(absl::Hours(1))));
  const Lease lease = MustReserve("calc");
  const size_t bound = SchedulerOptions().max_result_bytes;
  EXPECT_THAT(scheduler_->Ack(lease, std::string(bound + 1, 'r')),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get(id));
  EXPECT_EQ(job.state, JobState::kReserved);
  ASSERT_OK(scheduler_->Ack(lease, std::string(bound, 'r')));
  ASSERT_OK_AND_ASSIGN(job, scheduler_->Get(id));
  EXPECT_EQ(job.result.size(), bound);
}

TEST_F(SchedulerTest, EnqueueRefusesBadRetention) {
  JobOptions negative = KeptFor(-absl::Seconds(1));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", negative),
              StatusIs(absl::StatusCode::kInvalidArgument));
  JobOptions too_many = KeptFor(absl::Hours(1));
  too_many.keep_at_most = kMaxDonePerTopic + 1;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", too_many),
              StatusIs(absl::StatusCode::kInvalidArgument));
  too_many.keep_at_most = -1;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", too_many),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SchedulerTest, WaitForResultAnswersAFinishedOrMissingJobAtOnce) {
  ASSERT_OK_AND_ASSIGN(std::string kept,
                       scheduler_->Enqueue("t", "p", KeptFor(absl::Hours(1))));
  ASSERT_OK(scheduler_->Ack(MustReserve("t"), "r"));
  EXPECT_THAT(
      scheduler_->WaitForResult(kept, absl::ZeroDuration()),
      ::delayq::testing::IsOkAndHolds(::testing::Field(&Job::result, "r")));

  JobOptions once;
  once.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(std::string dead, scheduler_->Enqueue("t", "p", once));
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "boom"));
  ASSERT_OK_AND_ASSIGN(Job job,
                       scheduler_->WaitForResult(dead, absl::ZeroDuration()));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "boom");

  ASSERT_OK_AND_ASSIGN(std::string unkept, scheduler_->Enqueue("t", "p"));
  ASSERT_OK(scheduler_->Ack(MustReserve("t"), "lost"));
  EXPECT_THAT(scheduler_->WaitForResult(unkept, absl::Hours(1)),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(scheduler_->WaitForResult("no-such-job", absl::Hours(1)),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SchedulerTest, WaitForResultGivesUpAtItsTimeout) {
  ASSERT_OK_AND_ASSIGN(std::string id,
                       scheduler_->Enqueue("t", "p", KeptFor(absl::Hours(1))));
  Waiter waiter(*scheduler_, id, absl::Seconds(10));
  AwaitWaiters(clock_, 1);
  clock_.Advance(absl::Seconds(10));
  EXPECT_THAT(waiter.Join(), StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(SchedulerTest, WaitForResultWakesWhenThisProcessAcks) {
  ASSERT_OK_AND_ASSIGN(std::string id,
                       scheduler_->Enqueue("t", "p", KeptFor(absl::Hours(1))));
  const Lease lease = MustReserve("t");
  Waiter waiter(*scheduler_, id, absl::Hours(2));
  AwaitWaiters(clock_, 1);
  // The clock stands still and the waiter polls hourly: only the Ack can
  // wake it.
  ASSERT_OK(scheduler_->Ack(lease, "woken"));
  ASSERT_OK_AND_ASSIGN(Job job, waiter.Join());
  EXPECT_EQ(job.state, JobState::kDone);
  EXPECT_EQ(job.result, "woken");
}

TEST_F(SchedulerTest, HandleResultsKeepsWhatTheHandlerReturns) {
  scheduler_->HandleResults("echo",
                            [](const Job& job) -> absl::StatusOr<std::string> {
                              if (job.payload == "bad")
                                return absl::InternalError("refused");
                              return "echo:" + job.payload;
                            });
  ASSERT_OK(scheduler_->Start());
  JobOptions kept = KeptFor(absl::Hours(1));
  ASSERT_OK_AND_ASSIGN(std::string good,
                       scheduler_->Enqueue("echo", "hi", kept));
  kept.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(std::string bad,
                       scheduler_->Enqueue("echo", "bad", kept));
  ASSERT_OK_AND_ASSIGN(Job done, scheduler_->WaitForResult(good, absl::Hours(2),
                                                           absl::Hours(1)));
  EXPECT_EQ(done.state, JobState::kDone);
  EXPECT_EQ(done.result, "echo:hi");
  ASSERT_OK_AND_ASSIGN(
      Job dead, scheduler_->WaitForResult(bad, absl::Hours(2), absl::Hours(1)));
  EXPECT_EQ(dead.state, JobState::kDead);
  EXPECT_EQ(dead.last_error, "refused");
  scheduler_->Stop(absl::Seconds(5));
}

}  // namespace
}  // namespace delayq
