// Copyright delayq authors.
//
// Jobs that wait for others, through the Scheduler: what Enqueue() refuses
// of JobOptions::after, and a Reserve() that waits for a job's dependant
// gets it as soon as the last dependency is acknowledged. On the memory
// store and a simulated clock.

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

JobOptions After(std::vector<std::string> after) {
  JobOptions options;
  options.after = std::move(after);
  return options;
}

TEST_F(SchedulerTest, EnqueueChecksDependencies) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({""})), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({"a", "a"})),
              StatusIs(kInvalid));
  JobOptions self = After({"me"});
  self.id = "me";
  EXPECT_THAT(scheduler_->Enqueue("t", "p", self), StatusIs(kInvalid));
  JobOptions replace = After({"a"});
  replace.id = "r";
  replace.replace = true;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", replace), StatusIs(kInvalid));
  std::vector<std::string> many;
  for (int i = 0; i <= kMaxDependencies; ++i) {
    many.push_back("d" + std::to_string(i));
  }
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After(many)), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("t", "p", After({"unknown"})),
              StatusIs(absl::StatusCode::kNotFound));
  ScheduleOptions nightly;
  nightly.job.after = {"a"};
  EXPECT_THAT(scheduler_->Schedule("n", "@every 1h", "t", "p", nightly),
              StatusIs(kInvalid));
}

TEST_F(SchedulerTest, AWaitingReserveGetsTheDependantOnceItsDependencyIsDone) {
  ASSERT_OK_AND_ASSIGN(std::string child, scheduler_->Enqueue("child", "c"));
  ASSERT_OK_AND_ASSIGN(std::string parent,
                       scheduler_->Enqueue("parent", "p", After({child})));
  ASSERT_OK_AND_ASSIGN(Job waiting, scheduler_->Get(parent));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  EXPECT_TRUE(NothingReady("parent"));

  const Lease lease = MustReserve("child");
  absl::StatusOr<std::optional<Lease>> got;
  // The simulated clock never moves here: only the ack's wake-up can end
  // this wait.
  std::thread worker(
      [&] { got = scheduler_->Reserve("parent", absl::Hours(1)); });
  ASSERT_OK(scheduler_->Ack(lease));
  worker.join();
  ASSERT_OK(got.status());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->job.id, parent);
}

}  // namespace
}  // namespace delayq
