// Copyright delayq authors.
//
// How a scheduler acts on its store's news (Backend::Subscribe()): a store
// here is the memory store behind a wrapper that the test writes to directly,
// as another process would, and whose news the test announces by hand. Every
// test sets both poll intervals to an hour on a simulated clock that only the
// test moves, so nothing but the news can wake the scheduler.

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
// How long a test waits for something that news makes happen at once.
constexpr absl::Duration kPatience = absl::Seconds(10);

// The memory store with news that the test announces.
class AnnouncingBackend : public BackendWrapper {
 public:
  explicit AnnouncingBackend(std::unique_ptr<Backend> target)
      : BackendWrapper(target.get()), owned_(std::move(target)) {}

  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override {
    absl::MutexLock lock(&mu_);
    on_news_ = std::move(on_news);
    ++subscriptions_;
    return std::make_unique<Subscription>(this);
  }

  void Announce(const StoreNews& news) {
    absl::MutexLock lock(&mu_);
    if (on_news_) on_news_(news);
  }
  int subscriptions() {
    absl::MutexLock lock(&mu_);
    return subscriptions_;
  }

 private:
  class Subscription : public NewsSubscription {
   public:
    explicit Subscription(AnnouncingBackend* store) : store_(store) {}
    ~Subscription() override {
      absl::MutexLock lock(&store_->mu_);
      store_->on_news_ = nullptr;
    }

   private:
    AnnouncingBackend* store_;
  };

  std::unique_ptr<Backend> owned_;
  absl::Mutex mu_;
  NewsCallback on_news_ ABSL_GUARDED_BY(mu_);
  int subscriptions_ ABSL_GUARDED_BY(mu_) = 0;
};

StoreNews Ready(absl::string_view topic) {
  StoreNews news;
  news.kind = StoreNews::Kind::kReady;
  news.topic = std::string(topic);
  return news;
}

StoreNews Due(absl::Time at) {
  StoreNews news;
  news.kind = StoreNews::Kind::kDue;
  news.at = at;
  return news;
}

StoreNews Resync() { return StoreNews(); }

StoreNews Schedules() {
  StoreNews news;
  news.kind = StoreNews::Kind::kSchedules;
  return news;
}

// A schedule every 10 s of topic "beats", as another process stores it.
ScheduleRecord EveryTenSeconds() {
  ScheduleRecord s;
  s.name = "beat";
  s.spec = "@every 10s";
  s.topic = "beats";
  return s;
}

NewJob JobAt(absl::string_view id, absl::string_view topic, absl::Time run_at) {
  return testing::PlainJob(std::string(id), std::string(topic), run_at);
}

class NewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_unique<AnnouncingBackend>(NewMemoryBackend());
    store_ = store.get();
    SchedulerOptions options;
    options.clock = &clock_;
    options.poll_interval = absl::Hours(1);
    options.news_poll_interval = absl::Hours(1);
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(std::move(store), options));
  }

  // Another process's write: straight into the store, unseen by the
  // scheduler.
  void AddBehindItsBack(const NewJob& job) {
    ASSERT_OK(store_->target()->Add({job}, clock_.Now()));
  }

  // A Reserve() that waits (up to an hour of simulated time) on a thread.
  std::future<absl::StatusOr<std::optional<Lease>>> ReserveAsync(
      const std::string& topic) {
    return std::async(std::launch::async, [this, topic] {
      return scheduler_->Reserve(topic, absl::Hours(1));
    });
  }

  // Waits (real time) until `n` threads sleep on the simulated clock.
  void AwaitSleepers(int n) {
    const absl::Time give_up = absl::Now() + kPatience;
    while (clock_.Waiters() < n && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_GE(clock_.Waiters(), n);
  }

  SimulatedClock clock_{kStart};
  AnnouncingBackend* store_ = nullptr;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(NewsTest, SubscribesOnce) { EXPECT_EQ(store_->subscriptions(), 1); }

TEST_F(NewsTest, ReadyNewsWakesABlockedReserve) {
  auto reserved = ReserveAsync("mail");
  AwaitSleepers(1);
  AddBehindItsBack(JobAt("j1", "mail", kStart));
  // The job is in the store, but nobody told the waiter.
  EXPECT_EQ(reserved.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  store_->Announce(Ready("mail"));
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "j1");
}

TEST_F(NewsTest, ReadyNewsOfAnotherTopicLeavesTheWaiterAsleep) {
  auto reserved = ReserveAsync("mail");
  AwaitSleepers(1);
  AddBehindItsBack(JobAt("j1", "mail", kStart));
  store_->Announce(Ready("sms"));
  EXPECT_EQ(reserved.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  store_->Announce(Ready("mail"));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  EXPECT_TRUE(lease.has_value());
}

// A delayed job of another process, earlier than anything the scheduler
// knew: the news arms a timer, and the waiter wakes when the clock gets there.
TEST_F(NewsTest, DueNewsWakesAWaiterWhenTheJobComesDue) {
  auto reserved = ReserveAsync("mail");
  AwaitSleepers(1);
  const absl::Time due = kStart + absl::Seconds(5);
  AddBehindItsBack(JobAt("j1", "mail", due));
  store_->Announce(Due(due));
  clock_.Advance(absl::Seconds(5));
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "j1");
}

TEST_F(NewsTest, WithoutDueNewsTheWaiterSleepsOn) {
  auto reserved = ReserveAsync("mail");
  AwaitSleepers(1);
  AddBehindItsBack(JobAt("j1", "mail", kStart + absl::Seconds(5)));
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(reserved.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  store_->Announce(Resync());  // let the test end
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  EXPECT_TRUE(lease.has_value());
}

// The timer thread promotes at the announced time: Tick-free hosts aside, a
// started scheduler moves the job to ready with no Reserve() asking.
TEST_F(NewsTest, DueNewsMakesTheTimerThreadPromote) {
  ASSERT_OK(scheduler_->Start());
  const absl::Time due = kStart + absl::Seconds(5);
  AddBehindItsBack(JobAt("j1", "mail", due));
  store_->Announce(Due(due));
  AwaitSleepers(1);
  clock_.Advance(absl::Seconds(5));
  const absl::Time give_up = absl::Now() + kPatience;
  JobState state = JobState::kDelayed;
  while (state != JobState::kReady && absl::Now() < give_up) {
    ASSERT_OK_AND_ASSIGN(delayq::Job job, scheduler_->Get("j1"));
    state = job.state;
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(state, JobState::kReady);
  scheduler_->Stop(absl::ZeroDuration());
}

// An announced time that raced with the scheduler's own look at the store is
// kept: a later, earlier-than-poll refresh does not replace it.
TEST_F(NewsTest, DueNewsSurvivesALaterLookAtTheStore) {
  const absl::Time due = kStart + absl::Seconds(5);
  store_->Announce(Due(due));
  ASSERT_OK(scheduler_->Tick().status());  // looks at the (empty) store
  AddBehindItsBack(JobAt("j1", "mail", due));
  auto reserved = ReserveAsync("mail");
  AwaitSleepers(1);
  clock_.Advance(absl::Seconds(5));
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  EXPECT_TRUE(lease.has_value());
}

TEST_F(NewsTest, ResyncWakesEveryWaiter) {
  auto mail = ReserveAsync("mail");
  auto sms = ReserveAsync("sms");
  AwaitSleepers(2);
  AddBehindItsBack(JobAt("m1", "mail", kStart));
  AddBehindItsBack(JobAt("s1", "sms", kStart));
  store_->Announce(Resync());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> m, mail.get());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> s, sms.get());
  ASSERT_TRUE(m.has_value() && s.has_value());
  EXPECT_EQ(m->job.id, "m1");
  EXPECT_EQ(s->job.id, "s1");
}

TEST_F(NewsTest, ReadyNewsWakesAnIdleHandler) {
  absl::Notification ran;
  scheduler_->Handle("mail", [&](const delayq::Job&) {
    ran.Notify();
    return absl::OkStatus();
  });
  ASSERT_OK(scheduler_->Start());
  AwaitSleepers(2);  // the timer thread and the worker
  AddBehindItsBack(JobAt("j1", "mail", kStart));
  store_->Announce(Ready("mail"));
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(kPatience));
  scheduler_->Stop(absl::ZeroDuration());
}

TEST(NewsOptionsTest, NewsPollIntervalMustBePositive) {
  SchedulerOptions options;
  options.news_poll_interval = absl::ZeroDuration();
  EXPECT_THAT(Scheduler::Create(NewMemoryBackend(), options).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

// A schedule another process stored is run once the store announces it;
// until then this scheduler, which looks at the store once an hour, does
// not know it.
TEST_F(NewsTest, ScheduleNewsMakesTheSchedulerReadTheSchedules) {
  ASSERT_OK(store_->target()->PutSchedule(EveryTenSeconds(), clock_.Now()));
  clock_.Advance(absl::Seconds(10));
  ASSERT_OK(scheduler_->Tick().status());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("beats"));
  EXPECT_EQ(stats.ready, 0);
  store_->Announce(Schedules());
  ASSERT_OK(scheduler_->Tick().status());
  ASSERT_OK_AND_ASSIGN(stats, scheduler_->Stats("beats"));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_OK(scheduler_->Get("beat@2023-11-14T22:13:30Z").status());
}

TEST_F(NewsTest, ScheduleNewsWakesABlockedReserve) {
  auto reserved = ReserveAsync("beats");
  AwaitSleepers(1);
  ASSERT_OK(store_->target()->PutSchedule(EveryTenSeconds(), clock_.Now()));
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(reserved.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  store_->Announce(Schedules());
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready);
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "beat@2023-11-14T22:13:30Z");
}

}  // namespace
}  // namespace delayq
