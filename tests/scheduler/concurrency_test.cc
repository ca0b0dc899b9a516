// Copyright delayq authors.
//
// Races and re-entry: wake-ups that must not be lost, events that must not go
// missing, listeners and handlers that call back into the scheduler, and
// timers that must survive concurrent updates. Each test pins down one
// interleaving with hooks in the store or with the simulated clock.

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// A store that runs a hook right after Reserve() returned from the target.
class HookedBackend : public BackendWrapper {
 public:
  explicit HookedBackend(std::unique_ptr<Backend> target)
      : BackendWrapper(target.get()), owned_(std::move(target)) {}
  std::function<void(const std::vector<Lease>&)> after_reserve;
  std::function<void()> after_touch;
  std::atomic<int> touches{0};

  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    auto leases = BackendWrapper::Reserve(topic, max, now, report);
    if (leases.ok() && after_reserve) after_reserve(*leases);
    return leases;
  }
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override {
    ++touches;
    auto d = BackendWrapper::Touch(id, token, now);
    if (after_touch) after_touch();
    return d;
  }

 private:
  std::unique_ptr<Backend> owned_;
};

// Waits (real time) for `pred`, up to two seconds.
bool Eventually(const std::function<bool()>& pred) {
  return testing::Eventually(absl::Seconds(2), pred, absl::Milliseconds(1));
}

// An Enqueue that lands between the store's empty Reserve and the waiter
// going to sleep wakes the waiter (it would otherwise sleep until the poll
// interval: forever on a simulated clock nobody moves).
TEST(SchedulerRaceTest, EnqueueRacingWithBlockedReserveIsNotLost) {
  SimulatedClock clock(kStart);
  auto hooked = std::make_unique<HookedBackend>(NewMemoryBackend());
  HookedBackend* store = hooked.get();
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(std::move(hooked), options));
  std::atomic<bool> once{false};
  store->after_reserve = [&](const std::vector<Lease>& leases) {
    // A producer on another thread enqueues in exactly this window.
    if (leases.empty() && !once.exchange(true)) {
      std::thread([&] { ASSERT_OK(scheduler->Enqueue("t", "p")); }).join();
    }
  };
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    auto lease = scheduler->Reserve("t", absl::Hours(1));
    EXPECT_TRUE(lease.ok() && lease->has_value());
    done = true;
  });
  EXPECT_TRUE(Eventually([&] { return done.load(); }))
      << "Reserve slept with a ready job in the store";
  while (!done) {
    clock.Advance(absl::Seconds(1));
    absl::SleepFor(absl::Milliseconds(1));
  }
  consumer.join();
}

// Host mode (no Start()): a blocked Reserve wakes for a delayed job that
// was enqueued after it went to sleep, at the job's due time.
TEST(SchedulerRaceTest, BlockedReserveSeesDelayedJobEnqueuedWhileWaiting) {
  SimulatedClock clock(kStart);
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Minutes(10);
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  std::atomic<bool> done{false};
  absl::Time got_at;
  std::thread consumer([&] {
    auto lease = scheduler->Reserve("t", absl::Hours(1));
    EXPECT_TRUE(lease.ok() && lease->has_value());
    got_at = clock.Now();
    done = true;
  });
  while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  JobOptions in_3s;
  in_3s.delay = absl::Seconds(3);
  ASSERT_OK(scheduler->Enqueue("t", "p", in_3s));
  absl::SleepFor(absl::Milliseconds(50));  // let a correct reserver re-arm
  clock.Advance(absl::Seconds(3));
  EXPECT_TRUE(Eventually([&] { return done.load(); }))
      << "Reserve still asleep after the job came due";
  while (!done) {
    clock.Advance(absl::Minutes(1));
    absl::SleepFor(absl::Milliseconds(1));
  }
  consumer.join();
  EXPECT_EQ(got_at, kStart + absl::Seconds(3));
}

// When Reserve() itself finds an expired lease (no Tick ran, or a worker
// beat the timer thread), the kDead event is still emitted.
TEST(SchedulerRaceTest, LeaseExpiryFoundByReserveEmitsDeadEvent) {
  SimulatedClock clock(kStart);
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  absl::Mutex mu;
  std::vector<std::string> events;
  scheduler->AddListener([&](const Event& e) {
    absl::MutexLock lock(&mu);
    events.push_back(std::string(EventTypeName(e.type)));
  });
  JobOptions job;
  job.ttr = absl::Seconds(1);
  job.max_attempts = 1;
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler->Enqueue("t", "p", job));
  ASSERT_OK(scheduler->Reserve("t"));
  clock.Advance(absl::Seconds(1));
  ASSERT_OK_AND_ASSIGN(auto none, scheduler->Reserve("t"));  // buries it
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(Job j, scheduler->Get(id));
  EXPECT_EQ(j.state, JobState::kDead);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(events, ::testing::Contains("dead"))
      << "the job died without a kDead event";
}

// A listener may remove itself.
TEST(SchedulerReentryDeathTest, ListenerRemovingItselfDoesNotDeadlock) {
  EXPECT_EXIT(
      {
        alarm(5);
        auto scheduler = Scheduler::Create(NewMemoryBackend()).value();
        int handle = 0;
        handle = scheduler->AddListener(
            [&](const Event&) { scheduler->RemoveListener(handle); });
        scheduler->Enqueue("t", "p").IgnoreError();
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Stop() from inside a handler neither waits for nor joins its own thread.
TEST(SchedulerReentryDeathTest, StopFromAHandlerDoesNotCrash) {
  EXPECT_EXIT(
      {
        alarm(10);
        auto scheduler = Scheduler::Create(NewMemoryBackend()).value();
        absl::Notification stopped;
        scheduler->Handle("t", [&](const Job&) {
          scheduler->Stop(absl::ZeroDuration());
          stopped.Notify();
          return absl::OkStatus();
        });
        scheduler->Enqueue("t", "p").IgnoreError();
        scheduler->Start().IgnoreError();
        stopped.WaitForNotification();
        scheduler.reset();  // joins what the handler could not
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A renew_fraction of 1 must not make the keeper touch the lease in a tight
// loop while the clock stands still.
TEST(SchedulerRaceTest, KeeperDoesNotSpinOnRenewFractionOne) {
  SimulatedClock clock(kStart);
  auto hooked = std::make_unique<HookedBackend>(NewMemoryBackend());
  HookedBackend* store = hooked.get();
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(std::move(hooked), options));
  absl::Notification started, release;
  HandlerOptions h;
  h.renew_fraction = 1.0;
  scheduler->Handle(
      "t",
      [&](const Job&) {
        started.Notify();
        release.WaitForNotification();
        return absl::OkStatus();
      },
      h);
  ASSERT_OK(scheduler->Enqueue("t", "p"));
  ASSERT_OK(scheduler->Start());
  started.WaitForNotification();
  absl::SleepFor(absl::Milliseconds(200));  // the clock does not move
  const int touches = store->touches.load();
  release.Notify();
  scheduler->Stop();
  EXPECT_LT(touches, 5) << "keeper touched the lease " << touches
                        << " times without the clock moving";
}

// The keeper's Touch races with the handler's Fail; the retry's timer must
// survive the keeper's late re-arming, so the retry runs when due rather
// than at the next poll.
TEST(SchedulerRaceTest, RetryTimerSurvivesAConcurrentLeaseRenewal) {
  SimulatedClock clock(kStart);
  auto hooked = std::make_unique<HookedBackend>(NewMemoryBackend());
  HookedBackend* store = hooked.get();
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(std::move(hooked), options));
  absl::Notification first_started, first_release, retried;
  std::atomic<int> runs{0};
  scheduler->AddListener([&](const Event& e) {
    if (e.type == EventType::kRetried) retried.Notify();
  });
  store->after_touch = [&] {
    // The handler finishes and fails while the keeper is between the store
    // call and re-arming its timer.
    if (!first_release.HasBeenNotified()) {
      first_release.Notify();
      retried.WaitForNotification();
    }
  };
  scheduler->Handle("t", [&](const Job&) {
    if (++runs == 1) {
      first_started.Notify();
      first_release.WaitForNotification();
      return absl::UnavailableError("try again");
    }
    return absl::OkStatus();
  });
  JobOptions job;
  job.ttr = absl::Minutes(10);
  job.backoff = Backoff::Fixed(absl::Seconds(2));
  ASSERT_OK(scheduler->Enqueue("t", "p", job));
  ASSERT_OK(scheduler->Start());
  first_started.WaitForNotification();
  clock.Advance(absl::Minutes(6));  // past the renewal point
  retried.WaitForNotification();
  absl::SleepFor(absl::Milliseconds(50));  // keeper re-arms, threads settle
  clock.Advance(absl::Seconds(2));         // the retry is due
  EXPECT_TRUE(Eventually([&] { return runs.load() >= 2; }))
      << "retry did not run when due";
  clock.Advance(absl::Hours(2));
  Eventually([&] { return runs.load() >= 2; });
  scheduler->Stop();
}

// Tick() promotes a due job another process added, without waiting for the
// poll interval.
TEST(SchedulerRaceTest, TickPromotesJobsOfAnotherScheduler) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> store = NewMemoryBackend();
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      auto host, Scheduler::Create(
                     std::make_unique<BackendWrapper>(store.get()), options));
  ASSERT_OK_AND_ASSIGN(
      auto producer,
      Scheduler::Create(std::make_unique<BackendWrapper>(store.get()),
                        options));
  JobOptions soon;
  soon.id = "remote";
  soon.delay = absl::Milliseconds(500);
  ASSERT_OK(producer->Enqueue("t", "p", soon));
  clock.Advance(absl::Milliseconds(500));
  EXPECT_THAT(host->Tick(), testing::IsOkAndHolds(1));
}

// EnqueueBatch with one payload and a named id still uses the "-index" rule.
TEST(SchedulerRaceTest, EnqueueBatchOfOneUsesIndexedId) {
  ASSERT_OK_AND_ASSIGN(auto scheduler, Scheduler::Create(NewMemoryBackend()));
  JobOptions named;
  named.id = "b";
  std::vector<std::string> one = {"x"};
  EXPECT_THAT(scheduler->EnqueueBatch("t", one, named),
              testing::IsOkAndHolds(::testing::ElementsAre("b-0")));
}

// A listener may call the scheduler (here: enqueue a follow-up job).
TEST(SchedulerReentryDeathTest, ListenerMayCallTheScheduler) {
  EXPECT_EXIT(
      {
        alarm(5);
        auto scheduler = Scheduler::Create(NewMemoryBackend()).value();
        scheduler->AddListener([&](const Event& e) {
          if (e.type == EventType::kEnqueued && e.topic == "a") {
            scheduler->Enqueue("b", "follow-up").IgnoreError();
          }
        });
        scheduler->Enqueue("a", "p").IgnoreError();
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}
}  // namespace
}  // namespace delayq
