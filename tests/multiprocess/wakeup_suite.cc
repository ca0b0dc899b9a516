// Copyright delayq authors.
//
// Wake-ups cross processes: a consumer in another process, whose scheduler
// looks at the store on its own only once an hour, gets a job that this
// process enqueues, a delayed job earlier than anything it knew, and a job
// whose lease a third process let expire, within the test's patience. Only
// the store's news (Backend::Subscribe()) can wake it that soon.
//
// The latencies are printed, not asserted: the machines are shared.

#include <algorithm>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {

void WakeupTest::SetUp() {
  MultiProcessTest::SetUp();
  producer_ = OpenScheduler();
  ASSERT_NE(producer_, nullptr);
}

std::unique_ptr<WorkerProcess> WakeupTest::StartConsumer(
    const std::string& mode) {
  std::unique_ptr<WorkerProcess> consumer = StartWorker();
  if (consumer == nullptr) return nullptr;
  if (mode == "handle") {
    EXPECT_OK(consumer->Run("handle mail"));
    EXPECT_OK(consumer->Run("start"));
  } else {
    EXPECT_OK(consumer->Run(mode + " mail"));
  }
  // "looked" may come before the command's "ok", from another thread.
  const auto& said = consumer->lines();
  if (std::find(said.begin(), said.end(), "looked") == said.end()) {
    EXPECT_TRUE(consumer->NextStartingWith("looked", kPatience).has_value())
        << "the consumer never looked at the store";
  }
  return consumer;
}

void WakeupTest::ExpectGot(WorkerProcess& consumer, const std::string& id,
                           const std::string& what) {
  std::optional<std::string> line =
      consumer.NextStartingWith("got ", kPatience);
  ASSERT_TRUE(line.has_value()) << what << ": the consumer got nothing";
  std::optional<Delivery> got = ParseDelivery(*line);
  ASSERT_TRUE(got.has_value()) << *line;
  EXPECT_EQ(got->id, id);
  std::printf("%s on %s: %.3f ms\n", what.c_str(), GetParam().name.c_str(),
              got->micros / 1000.0);
}

std::string WakeupTest::Now() {
  return absl::StrCat(absl::ToUnixMicros(absl::Now()));
}

namespace {

TEST_P(WakeupTest, BlockedReserveGetsAJobOfAnotherProcess) {
  auto consumer = StartConsumer("reserve");
  ASSERT_NE(consumer, nullptr);
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to reserve");
}

TEST_P(WakeupTest, IdleHandlerGetsAJobOfAnotherProcess) {
  auto consumer = StartConsumer("handle");
  ASSERT_NE(consumer, nullptr);
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to handler start");
}

TEST_P(WakeupTest, DelayedJobEarlierThanAnythingTheConsumerKnew) {
  JobOptions later;
  later.id = "later";
  later.delay = absl::Minutes(30);
  ASSERT_OK(producer_->Enqueue("mail", Now(), later).status());
  auto consumer = StartConsumer("reserve");
  ASSERT_NE(consumer, nullptr);
  JobOptions soon;
  soon.id = "soon";
  const absl::Time due = absl::Now() + absl::Milliseconds(200);
  soon.run_at = due;
  ASSERT_OK(
      producer_->Enqueue("mail", absl::StrCat(absl::ToUnixMicros(due)), soon)
          .status());
  ExpectGot(*consumer, "soon", "due time to reserve");
}

// A third process holds the job and stalls; this process's own consumer,
// which never saw the lease, gets the job when the lease expires.
TEST_P(WakeupTest, ExpiredLeaseOfAnotherProcess) {
  std::unique_ptr<Scheduler> consumer = OpenScheduler();
  ASSERT_NE(consumer, nullptr);
  auto holder = StartConsumer("hold");
  ASSERT_NE(holder, nullptr);
  JobOptions options;
  options.id = "j1";
  options.ttr = absl::Milliseconds(300);
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ASSERT_TRUE(holder->NextStartingWith("got j1 ", kPatience).has_value());
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);

  auto reserved = std::async(std::launch::async, [&] {
    return consumer->Reserve("mail", absl::Hours(1));
  });
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready)
      << "the expired lease was not redelivered";
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "j1");
  EXPECT_EQ(lease->job.attempts, 2);
  std::printf("lease deadline to redelivery on %s: about %.3f ms\n",
              GetParam().name.c_str(),
              absl::ToDoubleMilliseconds(absl::Now() - deadline));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
