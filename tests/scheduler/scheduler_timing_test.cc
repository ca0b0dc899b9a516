// Copyright delayq authors.
//
// When jobs come due: one timer for every pending job, Tick(), Reserve()
// without Tick(), pause and resume, debounce, the ready order, a Reserve()
// blocked without Start(), and a due time learnt from the store.
// On the memory store and a simulated clock: nothing here depends on
// real time, so every test is deterministic.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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

// Enqueues six jobs due 1..6 s from now (latest first, or earliest
// first), then checks that a consumer blocked in Reserve() gets each at its
// time. The store is looked at on its own only once an hour, so only the
// timers can wake it.
void ExpectEveryJobOnTime(SimulatedClock& clock, bool earliest_first) {
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto capped,
                       Scheduler::Create(NewMemoryBackend(), options));
  constexpr int kJobs = 6;
  for (int n = 1; n <= kJobs; ++n) {
    const int i = earliest_first ? n : kJobs + 1 - n;
    ASSERT_OK(
        capped->Enqueue("t", absl::StrCat("j", i), Delayed(absl::Seconds(i))));
  }
  const absl::Time start = clock.Now();
  for (int i = 1; i <= kJobs; ++i) {
    std::optional<Lease> got;
    std::thread consumer([&] {
      absl::StatusOr<std::optional<Lease>> lease =
          capped->Reserve("t", absl::Hours(1));
      ASSERT_TRUE(lease.ok());
      got = *lease;
    });
    while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
    clock.Advance(absl::Seconds(1));
    consumer.join();
    ASSERT_TRUE(got.has_value()) << "j" << i;
    EXPECT_EQ(got->job.payload, absl::StrCat("j", i));
    EXPECT_EQ(clock.Now(), start + absl::Seconds(i)) << "j" << i;
    ASSERT_OK(capped->Ack(*got));
  }
}

// One timer stands for every pending job, and the store tells the next due
// time each time it fires.
TEST_F(SchedulerTest, EveryJobIsOnTimeWithOneTimerForAll) {
  ExpectEveryJobOnTime(clock_, /*earliest_first=*/false);
}

// Enqueued earliest first: each later deadline finds the local timer armed
// earlier and leaves it as it is (without taking a lock), and each time a
// timer fires the store tells the next due time.
TEST_F(SchedulerTest, LaterDeadlinesThanTheArmedOneAreStillOnTime) {
  ExpectEveryJobOnTime(clock_, /*earliest_first=*/true);
}

// A paused topic's jobs wait; Resume() wakes a consumer blocked on it. The
// store is looked at on its own only once an hour and the clock stands
// still, so only the resume can wake it.
TEST_F(SchedulerTest, APausedTopicWaitsAndResumeWakesItsConsumer) {
  SchedulerOptions options;
  options.clock = &clock_;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  ASSERT_OK(scheduler->Pause("mail"));
  ASSERT_OK(scheduler->Enqueue("mail", "hello"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> paused,
                       scheduler->PausedTopics());
  EXPECT_THAT(paused, ::testing::ElementsAre("mail"));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> none, scheduler->Reserve("mail"));
  EXPECT_FALSE(none.has_value());

  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler->Reserve("mail", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_OK(scheduler->Resume("mail"));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "hello");
  EXPECT_EQ(clock_.Now(), kStart);
  EXPECT_THAT(scheduler->Pause("bad\ntopic"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Debounce: each hit pushes the respawn back to 90 s after it.
TEST_F(SchedulerTest, ReplaceMovesTheRespawnOnEveryHit) {
  JobOptions options;
  options.id = "boss-7";
  options.delay = absl::Seconds(90);
  options.replace = true;
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 1", options));
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 2", options));
  clock_.Advance(absl::Seconds(60));  // 90 s after the first hit
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_TRUE(NothingReady("boss.respawn"));
  clock_.Advance(absl::Seconds(30));  // 90 s after the second
  ASSERT_OK(scheduler_->Tick().status());
  Lease lease = MustReserve("boss.respawn");
  EXPECT_EQ(lease.job.payload, "hit 2");
  // Held by a worker: it cannot be moved, whatever the caller asks.
  EXPECT_THAT(scheduler_->Enqueue("boss.respawn", "hit 3", options),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(scheduler_->Ack(lease));
  // Gone: replace adds it again.
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 4", options));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("boss-7"));
  EXPECT_EQ(job.payload, "hit 4");

  JobOptions no_id;
  no_id.replace = true;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", no_id),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(scheduler_->EnqueueBatch("t", {"a", "b"}, options),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Without replace, a taken id still fails.
  options.replace = false;
  EXPECT_THAT(scheduler_->Enqueue("boss.respawn", "hit 5", options),
              StatusIs(absl::StatusCode::kAlreadyExists));
}

TEST_F(SchedulerTest, ReserveSeesDueJobsWithoutTick) {
  ASSERT_OK(scheduler_->Enqueue("t", "later", Delayed(absl::Seconds(30))));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(29));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(MustReserve("t").job.payload, "later");
}

TEST_F(SchedulerTest, RunAtOverridesDelay) {
  JobOptions options;
  options.delay = absl::Hours(1);
  options.run_at = kStart + absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("t", "p", options));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get(id));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.run_at, kStart + absl::Seconds(5));
  options.id = "past";
  options.run_at = kStart - absl::Hours(1);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  EXPECT_EQ(MustReserve("t").job.id, "past");
}

TEST_F(SchedulerTest, TickPromotesExactlyWhenDue) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options = Delayed(absl::Milliseconds(1500));
  options.id = "a";
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  EXPECT_THAT(log.Take(), ElementsAre("enqueued:a"));

  clock_.Advance(absl::Milliseconds(1499));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(0));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("a"));
  EXPECT_EQ(job.state, JobState::kDelayed);

  clock_.Advance(absl::Milliseconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(job, scheduler_->Get("a"));
  EXPECT_EQ(job.state, JobState::kReady);
  EXPECT_THAT(log.Take(), ElementsAre("promoted:a"));
}

TEST_F(SchedulerTest, TickPromotesEverythingDueNotABatch) {
  SchedulerOptions options;
  options.clock = &clock_;
  options.promote_batch = 7;  // much smaller than the backlog
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  std::vector<std::string> payloads(100, "p");
  ASSERT_OK(scheduler->EnqueueBatch("t", payloads, Delayed(absl::Seconds(1))));
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler->Tick(), IsOkAndHolds(100));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("t"));
  EXPECT_EQ(stats.ready, 100);
  EXPECT_EQ(stats.delayed, 0);
}

TEST_F(SchedulerTest, PriorityThenDueTimeThenEnqueueOrder) {
  JobOptions low;
  low.priority = 5;
  JobOptions high;
  high.priority = -1;
  ASSERT_OK_AND_ASSIGN(std::string a, scheduler_->Enqueue("t", "a", low));
  ASSERT_OK_AND_ASSIGN(std::string b, scheduler_->Enqueue("t", "b"));
  ASSERT_OK_AND_ASSIGN(std::string c, scheduler_->Enqueue("t", "c", high));
  ASSERT_OK_AND_ASSIGN(std::string d, scheduler_->Enqueue("t", "d"));
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(MustReserve("t").job.payload);
  EXPECT_THAT(order, ElementsAre("c", "b", "d", "a"));
}

// --- Blocking Reserve without Start() ----------------------------------------

TEST_F(SchedulerTest, BlockedReserveWakesOnEnqueue) {
  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Enqueue("t", "wake up"));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "wake up");
  EXPECT_EQ(clock_.Now(), kStart);  // no time had to pass
}

TEST_F(SchedulerTest, BlockedReserveWakesWhenADelayedJobComesDue) {
  ASSERT_OK(scheduler_->Enqueue("t", "soon", Delayed(absl::Seconds(3))));
  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  clock_.Advance(absl::Seconds(3));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "soon");
}

TEST_F(SchedulerTest, BlockedReserveTimesOutOnTheSchedulersClock) {
  std::atomic<bool> done{false};
  absl::Time returned_at;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Seconds(2));
    ASSERT_TRUE(lease.ok());
    EXPECT_FALSE(lease->has_value());
    returned_at = clock_.Now();
    done = true;
  });
  // The consumer sleeps in steps of at most poll_interval; move the clock
  // whenever it sleeps until it gives up.
  while (!done) {
    if (clock_.Waiters() > 0) clock_.Advance(absl::Milliseconds(500));
    absl::SleepFor(absl::Microseconds(200));
  }
  consumer.join();
  EXPECT_EQ(returned_at, kStart + absl::Seconds(2));
}

// A store that counts the Reserve() calls of each topic.
class ReserveCounter : public BackendWrapper {
 public:
  ReserveCounter(std::unique_ptr<Backend> target,
                 std::map<std::string, int>* calls, absl::Mutex* mu)
      : BackendWrapper(target.get()),
        owned_(std::move(target)),
        calls_(calls),
        mu_(mu) {}
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    {
      absl::MutexLock lock(mu_);
      ++(*calls_)[std::string(topic)];
    }
    return BackendWrapper::Reserve(topic, max, now, report);
  }

 private:
  std::unique_ptr<Backend> owned_;
  std::map<std::string, int>* calls_;
  absl::Mutex* mu_;
};

// With the timer thread running, a blocked Reserve() wakes when the
// thread's promotion makes a job of its topic ready, and not at the timer
// of another topic's job: waking every waiter at every timer had each of
// them look at the store for a job only one could take.
TEST(TimerThreadTest, ABlockedReserveWakesForItsTopicNotAtEveryTimer) {
  SimulatedClock clock(kStart);
  absl::Mutex mu;
  std::map<std::string, int> calls;
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(std::make_unique<ReserveCounter>(
                                             NewMemoryBackend(), &calls, &mu),
                                         options));
  auto reserves_of = [&](const std::string& topic) {
    absl::MutexLock lock(&mu);
    return calls[topic];
  };
  ASSERT_OK(scheduler->Enqueue("other", "x", Delayed(absl::Seconds(1))));
  ASSERT_OK(scheduler->Enqueue("t", "mine", Delayed(absl::Seconds(2))));
  ASSERT_OK(scheduler->Start());
  // The scheduler's threads, all asleep (the count holds still).
  int threads = clock.Waiters();
  for (int still = 0; still < 20; absl::SleepFor(absl::Milliseconds(5))) {
    const int now = clock.Waiters();
    still = now == threads && now > 0 ? still + 1 : 0;
    threads = now;
  }
  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler->Reserve("t", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  // Its first look done, and asleep.
  while (reserves_of("t") == 0 || clock.Waiters() < threads + 1) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const int looked = reserves_of("t");

  // The other topic's job comes due: the timer thread promotes it.
  clock.Advance(absl::Seconds(1));
  for (;;) {
    absl::StatusOr<TopicStats> other = scheduler->Stats("other");
    ASSERT_OK(other);
    if (other->ready == 1 && clock.Waiters() == threads + 1) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(reserves_of("t"), looked) << "the waiter of t woke at a timer";
  EXPECT_FALSE(got.has_value());

  // Its own job comes due: the thread's promotion wakes it.
  clock.Advance(absl::Seconds(1));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "mine");
  EXPECT_EQ(clock.Now(), kStart + absl::Seconds(2));
  scheduler->Stop();
}

// --- Two schedulers on one store (as two processes would be) ----------------

TEST(SharedStoreTest, JobsOfAnotherSchedulerArePromotedFromTheStore) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> store = NewMemoryBackend();
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      auto producer,
      Scheduler::Create(std::make_unique<BackendWrapper>(store.get()),
                        options));
  JobOptions in_10s;
  in_10s.id = "remote";
  in_10s.delay = absl::Seconds(10);
  ASSERT_OK(producer->Enqueue("t", "p", in_10s));
  producer.reset();  // the producing process is gone

  ASSERT_OK_AND_ASSIGN(
      auto other, Scheduler::Create(
                      std::make_unique<BackendWrapper>(store.get()), options));
  clock.Advance(absl::Seconds(10));
  // `other` never armed a timer for the job; it learnt the due time from
  // the store when it was created.
  EXPECT_THAT(other->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(Job job, other->Get("remote"));
  EXPECT_EQ(job.state, JobState::kReady);
}

// A store that still reports a due time that passed after everything due
// was promoted (a due job another process's call holds locked, or a store
// on a clock behind this one's) is looked at again soon, then less and
// less often: never left for the whole poll interval, never polled fast for
// ever.
class StaleNextDue : public BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  absl::StatusOr<absl::Time> NextDue() override {
    ++looks;
    if (stale.has_value()) return *stale;
    return BackendWrapper::NextDue();
  }
  std::optional<absl::Time> stale;
  int looks = 0;
};

// A scheduler on a simulated clock over a StaleNextDue store whose due
// time passed a second before it started, with one job promoted at +1 ms:
// the last look at the store found the stale time.
class StaleNextDueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto owned = std::make_unique<StaleNextDue>(store_.get());
    wrapper_ = owned.get();
    SchedulerOptions options;
    options.clock = &clock_;
    options.poll_interval = absl::Hours(1);
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(std::move(owned), options));
    wrapper_->stale = kStart - absl::Seconds(1);
    JobOptions soon;
    soon.delay = absl::Milliseconds(1);
    ASSERT_OK(scheduler_->Enqueue("t", "p", soon));
    clock_.Advance(absl::Milliseconds(1));
    ASSERT_OK(scheduler_->Tick());  // promotes, then finds the stale time
  }

  // Ticks each ms for `ms` ms; the ms (from 1) at which the store was
  // looked at, each look followed by `after_look`.
  std::vector<int> LooksOver(int ms, const std::function<void()>& after_look) {
    std::vector<int> looks_at;
    for (int i = 1; i <= ms; ++i) {
      const int before = wrapper_->looks;
      clock_.Advance(absl::Milliseconds(1));
      EXPECT_OK(scheduler_->Tick());
      if (wrapper_->looks > before) {
        looks_at.push_back(i);
        after_look();
      }
    }
    return looks_at;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_ = NewMemoryBackend();
  StaleNextDue* wrapper_ = nullptr;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(StaleNextDueTest, ALateDueTimeIsLookedAtAgainSoonerThenLessOften) {
  // Looks at +10 ms, then 20 ms and 40 ms after each look.
  EXPECT_THAT(LooksOver(100, [] {}), ElementsAre(10, 30, 70));
  // Once the store reports a future time, a stale one is looked at after
  // 10 ms again.
  clock_.Advance(absl::Milliseconds(100));  // the look armed for +150 ms
  wrapper_->stale = clock_.Now() + absl::Milliseconds(5);
  ASSERT_OK(scheduler_->Tick());
  wrapper_->stale = kStart;
  clock_.Advance(absl::Milliseconds(5));
  ASSERT_OK(scheduler_->Tick());
  const int before = wrapper_->looks;
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_OK(scheduler_->Tick());
  EXPECT_GT(wrapper_->looks, before);
}

// A store whose due time passed but moves on from one look to the next
// (other processes' calls promote due jobs as they come, each holding the
// earliest for a moment) is looked at every 10 ms: the looks are not pushed
// back as for a stuck one, so the next job due waits no longer than that.
TEST_F(StaleNextDueTest, AStaleDueTimeThatMovesOnIsLookedAtAgainSoon) {
  // Each look finds another job due a moment ago.
  const auto moves_on = [this] {
    wrapper_->stale = clock_.Now() - absl::Milliseconds(1);
  };
  moves_on();
  EXPECT_THAT(LooksOver(100, moves_on),
              ElementsAre(10, 20, 30, 40, 50, 60, 70, 80, 90, 100));
}

}  // namespace
}  // namespace delayq
