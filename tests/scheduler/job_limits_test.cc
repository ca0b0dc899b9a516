// Copyright delayq authors.
//
// What a job may say about its own limits, through the scheduler on the
// memory backend and a simulated clock: expiry, dedup windows and jittered
// backoff. Deterministic: no test depends on real time, and jitter is
// checked by its bounds over many draws.

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

class JobLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(NewMemoryBackend(), options));
    scheduler_->AddListener([this](const Event& e) {
      absl::MutexLock lock(&mu_);
      events_.push_back(
          absl::StrCat(EventTypeName(e.type), ":", e.id, ":", e.error));
    });
  }

  std::vector<std::string> TakeEvents() {
    absl::MutexLock lock(&mu_);
    return std::move(events_);
  }

  std::optional<Lease> ReserveNow(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : std::nullopt;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Scheduler> scheduler_;
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

// ------------------------------------------------------------------ Expiry

TEST_F(JobLimitsTest, ANotificationNotSentWithinAnHourIsDropped) {
  JobOptions options;
  options.id = "notify-1";
  options.expire_after = absl::Hours(1);
  ASSERT_OK(scheduler_->Enqueue("notify", "hello", options));
  options.id = "notify-2";
  options.discard_expired = true;
  ASSERT_OK(scheduler_->Enqueue("notify", "hello", options));
  TakeEvents();

  clock_.Advance(absl::Hours(1) - absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_THAT(TakeEvents(), ::testing::IsEmpty());
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_THAT(TakeEvents(),
              ElementsAre("lapsed:notify-1:expired", "dead:notify-1:expired",
                          "lapsed:notify-2:expired"));
  EXPECT_FALSE(ReserveNow("notify").has_value());
  ASSERT_OK_AND_ASSIGN(Job kept, scheduler_->Get("notify-1"));
  EXPECT_EQ(kept.state, JobState::kDead);
  EXPECT_EQ(kept.last_error, "expired");
  EXPECT_THAT(scheduler_->Get("notify-2"),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(JobLimitsTest, ReserveNeverHandsOutAnExpiredJobEvenWithoutTick) {
  JobOptions options;
  options.id = "j";
  options.expire_at = kStart + absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  clock_.Advance(absl::Seconds(10));
  EXPECT_FALSE(ReserveNow("t").has_value());
  EXPECT_THAT(TakeEvents(), ::testing::Contains("lapsed:j:expired"));
}

TEST_F(JobLimitsTest, TheEarlierOfExpireAtAndExpireAfterApplies) {
  JobOptions options;
  options.id = "j";
  options.expire_at = kStart + absl::Minutes(5);
  options.expire_after = absl::Minutes(2);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("j"));
  EXPECT_EQ(job.expire_at, kStart + absl::Minutes(2));
}

TEST_F(JobLimitsTest, ExpiryAndWindowsAreValidated) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  JobOptions options;
  options.delay = absl::Minutes(1);
  options.expire_after = absl::Minutes(1);  // expires as it comes due
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.expire_after = -absl::Seconds(1);
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.expire_at = absl::FromUnixSeconds(0);
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.unique_for = absl::Minutes(1);  // no id to keep
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options.id = "x";
  options.unique_for = -absl::Minutes(1);
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  for (double jitter : {-0.1, 1.1, std::nan("")}) {
    options = JobOptions();
    options.backoff = Backoff::Fixed(absl::Seconds(1)).WithJitter(jitter);
    EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid))
        << jitter;
  }
}

// ------------------------------------------------------------ Dedup window

TEST_F(JobLimitsTest, ARetriedRequestWithinTheWindowIsNotEnqueuedAgain) {
  JobOptions options;
  options.id = "charge-order-42";
  options.unique_for = absl::Minutes(10);
  ASSERT_OK(scheduler_->Enqueue("payments", "42", options));
  std::optional<Lease> lease = ReserveNow("payments");
  ASSERT_TRUE(lease.has_value());
  ASSERT_OK(scheduler_->Ack(*lease));

  clock_.Advance(absl::Minutes(9));
  EXPECT_THAT(scheduler_->Enqueue("payments", "42", options),
              StatusIs(absl::StatusCode::kAlreadyExists));
  clock_.Advance(absl::Minutes(1));
  EXPECT_OK(scheduler_->Enqueue("payments", "42", options));
}

// ------------------------------------------------------------------ Jitter

TEST(BackoffJitterTest, TheWaitLiesBetweenItsBounds) {
  const Backoff none = Backoff::Exponential(absl::Seconds(1), absl::Minutes(1));
  EXPECT_EQ(none.Jittered(3, 0.0), absl::Seconds(4));
  EXPECT_EQ(none.Jittered(3, 0.99), absl::Seconds(4));

  const Backoff full = none.WithJitter(1.0);
  EXPECT_EQ(full.Jittered(3, 0.0), absl::Seconds(4));
  EXPECT_EQ(full.Jittered(3, 0.5), absl::Seconds(2));
  EXPECT_EQ(full.Jittered(3, 0.75), absl::Seconds(1));

  const Backoff equal = Backoff::Fixed(absl::Seconds(10)).WithJitter(0.5);
  EXPECT_EQ(equal.Jittered(1, 0.0), absl::Seconds(10));
  EXPECT_EQ(equal.Jittered(1, 0.5), absl::Seconds(7.5));
  EXPECT_GE(equal.Jittered(1, std::nextafter(1.0, 0.0)), absl::Seconds(5));
  // Out-of-range draws are held to the bounds.
  EXPECT_EQ(equal.Jittered(1, 2.0), absl::Seconds(5));
  EXPECT_EQ(equal.Jittered(1, -1.0), absl::Seconds(10));
}

// The scheduler draws the jitter: every retry waits within the bounds, and
// the waits differ.
TEST_F(JobLimitsTest, RetriesWaitAJitteredBackoff) {
  JobOptions options;
  options.id = "j";
  options.max_attempts = 1000;
  options.backoff = Backoff::Fixed(absl::Seconds(10)).WithJitter(0.5);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  std::set<absl::Duration> waits;
  for (int i = 0; i < 100; ++i) {
    std::optional<Lease> lease = ReserveNow("t");
    ASSERT_TRUE(lease.has_value()) << i;
    EXPECT_EQ(lease->job.backoff, options.backoff);
    ASSERT_OK(scheduler_->Fail(*lease, "again"));
    ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("j"));
    const absl::Duration wait = job.run_at - clock_.Now();
    EXPECT_GE(wait, absl::Seconds(5));
    EXPECT_LE(wait, absl::Seconds(10));
    waits.insert(wait);
    clock_.Advance(absl::Seconds(10));
  }
  EXPECT_GT(waits.size(), 50u);
}

// --------------------------------------------------------------- Limits

// A scheduler whose only wake-ups are the ones under test: its poll
// intervals are an hour, so a waiter that sleeps "a poll interval" would
// still be asleep when the test looks.
std::unique_ptr<Scheduler> QuietScheduler(SimulatedClock& clock) {
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Hours(1);
  options.news_poll_interval = absl::Hours(1);
  absl::StatusOr<std::unique_ptr<Scheduler>> s =
      Scheduler::Create(NewMemoryBackend(), options);
  EXPECT_OK(s.status());
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(TopicLimitTest, AWaiterWakesWhenTheRateLimitSaysNotBefore) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Scheduler> scheduler = QuietScheduler(clock);
  ASSERT_NE(scheduler, nullptr);
  TopicLimit limit;
  limit.rate = 6;
  limit.period = absl::Minutes(1);  // one every 10 s
  ASSERT_OK(scheduler->SetLimit("payments", limit));
  ASSERT_OK(scheduler->EnqueueBatch("payments", {"a", "b"}));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> first,
                       scheduler->Reserve("payments"));
  ASSERT_TRUE(first.has_value());

  absl::Mutex mu;
  std::optional<Lease> second;
  absl::Time woke_at;
  std::thread waiter([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler->Reserve("payments", absl::Hours(1));
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(lease.ok()) << lease.status();
    second = *lease;
    woke_at = clock.Now();
  });
  while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  // Just before the limit allows one, the waiter still sleeps: moving the
  // clock wakes only waiters whose time has come.
  clock.Advance(absl::Seconds(10) - absl::Milliseconds(1));
  {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(second.has_value());
  }
  clock.Advance(absl::Milliseconds(1));
  waiter.join();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job.payload, "b");
  EXPECT_EQ(woke_at, kStart + absl::Seconds(10));
}

TEST(TopicLimitTest, AWaiterHeldByTheConcurrencyCapWakesOnAck) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Scheduler> scheduler = QuietScheduler(clock);
  ASSERT_NE(scheduler, nullptr);
  TopicLimit limit;
  limit.concurrency = 1;
  ASSERT_OK(scheduler->SetLimit("smtp", limit));
  ASSERT_OK(scheduler->EnqueueBatch("smtp", {"a", "b"}));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> first, scheduler->Reserve("smtp"));
  ASSERT_TRUE(first.has_value());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> none, scheduler->Reserve("smtp"));
  EXPECT_FALSE(none.has_value());

  std::optional<Lease> second;
  std::thread waiter([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler->Reserve("smtp", absl::Hours(1));
    ASSERT_TRUE(lease.ok()) << lease.status();
    second = *lease;
  });
  while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_OK(scheduler->Ack(*first));
  waiter.join();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job.payload, "b");
  EXPECT_EQ(clock.Now(), kStart);
}

TEST(TopicLimitTest, LimitsAreValidatedListedAndCleared) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Scheduler> scheduler = QuietScheduler(clock);
  ASSERT_NE(scheduler, nullptr);
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(scheduler->SetLimit("t", TopicLimit{}), StatusIs(kInvalid));
  TopicLimit bad;
  bad.rate = -1;
  EXPECT_THAT(scheduler->SetLimit("t", bad), StatusIs(kInvalid));
  bad = TopicLimit();
  bad.rate = 1;
  bad.burst = 0;
  EXPECT_THAT(scheduler->SetLimit("t", bad), StatusIs(kInvalid));
  bad.burst = 1;
  bad.period = absl::ZeroDuration();
  EXPECT_THAT(scheduler->SetLimit("t", bad), StatusIs(kInvalid));
  TopicLimit good;
  good.concurrency = 3;
  EXPECT_THAT(scheduler->SetLimit("bad topic", good), StatusIs(kInvalid));
  ASSERT_OK(scheduler->SetLimit("t", good));
  ASSERT_OK_AND_ASSIGN(std::vector<LimitedTopic> limits, scheduler->Limits());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].topic, "t");
  EXPECT_EQ(limits[0].limit, good);
  ASSERT_OK(scheduler->ClearLimit("t"));
  ASSERT_OK_AND_ASSIGN(limits, scheduler->Limits());
  EXPECT_TRUE(limits.empty());
}

}  // namespace
}  // namespace delayq
