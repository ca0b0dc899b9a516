// Copyright delayq authors.
//
// Handler threads started by Scheduler::Start(): acking, failing, lease
// renewal and shutdown. Time is simulated; the tests wait for the worker
// threads with condition waits, never for the clock.

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
// How long a test waits for worker threads before it gives up (a failure,
// not a timing assertion: the work is expected in microseconds).
const absl::Duration kPatience = absl::Seconds(20);

// Counts events by type and lets a test wait for a count.
class EventCounter {
 public:
  explicit EventCounter(Scheduler& scheduler) : scheduler_(scheduler) {
    handle_ = scheduler.AddListener([this](const Event& e) {
      absl::MutexLock lock(&mu_);
      ++counts_[static_cast<int>(e.type)];
      if (e.type == EventType::kDead) last_dead_error_ = e.error;
    });
  }
  ~EventCounter() { scheduler_.RemoveListener(handle_); }

  bool WaitFor(EventType type, int n) {
    absl::MutexLock lock(&mu_);
    struct Args {
      EventCounter* self;
      int type;
      int n;
    } args{this, static_cast<int>(type), n};
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return a->self->counts_[a->type] >= a->n;
            },
            &args),
        kPatience);
  }

  int Count(EventType type) {
    absl::MutexLock lock(&mu_);
    return counts_[static_cast<int>(type)];
  }

  std::string LastDeadError() {
    absl::MutexLock lock(&mu_);
    return last_dead_error_;
  }

 private:
  Scheduler& scheduler_;
  int handle_;
  absl::Mutex mu_;
  int counts_[16] = {};
  std::string last_dead_error_;
};

class WorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(NewMemoryBackend(), options));
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(WorkersTest, SuccessfulHandlersAckEveryJob) {
  EventCounter events(*scheduler_);
  std::atomic<int> runs{0};
  HandlerOptions options;
  options.concurrency = 4;
  options.batch = 8;
  scheduler_->Handle(
      "mail",
      [&](const Job&) {
        ++runs;
        return absl::OkStatus();
      },
      options);
  std::vector<std::string> payloads(500, "hi");
  ASSERT_OK(scheduler_->EnqueueBatch("mail", payloads));
  ASSERT_OK(scheduler_->Start());
  EXPECT_THAT(scheduler_->Start(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 500));
  scheduler_->Stop();
  EXPECT_EQ(runs.load(), 500);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("mail"));
  EXPECT_EQ(stats.total(), 0);
}

// A store whose first reserve and first two acks fail.
class FlakyStore : public BackendWrapper {
 public:
  explicit FlakyStore(Backend* target) : BackendWrapper(target) {}
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    if (reserve_failures_.fetch_sub(1) > 0) {
      return absl::UnavailableError("the store is down");
    }
    return BackendWrapper::Reserve(topic, max, now, report);
  }
  using BackendWrapper::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override {
    if (ack_failures_.fetch_sub(1) > 0) {
      return absl::UnavailableError("the store is down");
    }
    return BackendWrapper::Ack(id, token, result, now, settled);
  }

 private:
  std::atomic<int> reserve_failures_{1};
  std::atomic<int> ack_failures_{2};
};

// What the workers' own store calls meet, which no caller hears, is told to
// SchedulerOptions::on_background_error: the failed reserve, and the ack
// that failed on its retry too (the job comes back after its ttr).
TEST(BackgroundErrorsTest, TheWorkersStoreErrorsAreTold) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> store = NewMemoryBackend();
  absl::Mutex mu;
  std::vector<std::string> told;
  SchedulerOptions options;
  options.clock = &clock;
  options.on_background_error = [&](absl::string_view what,
                                    const absl::Status& error) {
    absl::MutexLock lock(&mu);
    told.push_back(absl::StrCat(what, ": ", error.ToString()));
  };
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Scheduler> scheduler,
      Scheduler::Create(std::make_unique<FlakyStore>(store.get()), options));
  std::atomic<int> runs{0};
  scheduler->Handle("t", [&](const Job&) {
    ++runs;
    return absl::OkStatus();
  });
  JobOptions job;
  job.id = "j";
  ASSERT_OK(scheduler->Enqueue("t", "p", job));
  ASSERT_OK(scheduler->Start());
  struct Waiting {
    std::vector<std::string>* told;
    size_t n;
  };
  auto told_count = [&](size_t n) {
    Waiting waiting{&told, n};
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(
        absl::Condition(
            +[](Waiting* w) { return w->told->size() >= w->n; }, &waiting),
        kPatience);
  };
  ASSERT_TRUE(told_count(1)) << "the failed reserve was not told";
  // The worker tries again after its retry interval. It may report before
  // it starts waiting, so one step of the clock could come too early: the
  // clock moves on until the retry has come.
  const absl::Time give_up = absl::Now() + kPatience;
  bool retried = false;
  while (!retried && absl::Now() < give_up) {
    clock.Advance(absl::Seconds(1));
    absl::MutexLock lock(&mu);
    retried = mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::vector<std::string>* t) { return t->size() >= 2; }, &told),
        absl::Milliseconds(50));
  }
  ASSERT_TRUE(told_count(2)) << "the failed ack was not told";
  scheduler->Stop();
  EXPECT_EQ(runs.load(), 1);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(told,
              ::testing::ElementsAre("reserve: UNAVAILABLE: the store is down",
                                     "ack: UNAVAILABLE: the store is down"));
}

TEST_F(WorkersTest, FailingHandlerRetriesThenDies) {
  EventCounter events(*scheduler_);
  std::atomic<int> runs{0};
  scheduler_->Handle("pay", [&](const Job&) {
    ++runs;
    return absl::UnavailableError("gateway down");
  });
  JobOptions options;
  options.id = "p1";
  options.max_attempts = 3;
  options.backoff = Backoff::Fixed(absl::ZeroDuration());
  ASSERT_OK(scheduler_->Enqueue("pay", "42", options));
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kDead, 1));
  scheduler_->Stop();
  EXPECT_EQ(runs.load(), 3);
  EXPECT_EQ(events.Count(EventType::kRetried), 2);
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("p1"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "gateway down");
}

// A lease handler sees its token, attempt and deadline; the retry's lease
// has a new token, which a downstream store would use to refuse a late
// write of the first attempt.
TEST_F(WorkersTest, LeaseHandlersSeeTheirTokenAttemptAndDeadline) {
  EventCounter events(*scheduler_);
  absl::Mutex mu;
  std::vector<Lease> seen;
  scheduler_->HandleLeases("pay", [&](const Lease& lease) {
    absl::MutexLock lock(&mu);
    seen.push_back(lease);
    return seen.size() == 1 ? absl::UnavailableError("once") : absl::OkStatus();
  });
  JobOptions options;
  options.ttr = absl::Seconds(30);
  options.backoff = Backoff::Fixed(absl::ZeroDuration());
  ASSERT_OK(scheduler_->Enqueue("pay", "42", options));
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 1));
  scheduler_->Stop();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].job.payload, "42");
  EXPECT_EQ(seen[0].job.attempts, 1);
  EXPECT_EQ(seen[1].job.attempts, 2);
  EXPECT_NE(seen[0].token, 0u);
  EXPECT_NE(seen[1].token, seen[0].token);
  // The clock stands still: each lease runs ttr from the one instant.
  EXPECT_EQ(seen[0].deadline, kStart + absl::Seconds(30));
  EXPECT_EQ(seen[1].deadline, kStart + absl::Seconds(30));
  EXPECT_EQ(seen[1].job.deadline, seen[1].deadline);
}

TEST_F(WorkersTest, ThrowingHandlerFailsTheJob) {
  EventCounter events(*scheduler_);
  scheduler_->Handle("t", [](const Job&) -> absl::Status {
    throw std::runtime_error("boom");
  });
  JobOptions options;
  options.id = "j";
  options.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("t", "", options));
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kDead, 1));
  scheduler_->Stop();
  EXPECT_EQ(events.LastDeadError(), "handler threw: boom");
}

TEST_F(WorkersTest, LeaseIsExtendedWhileTheHandlerRuns) {
  EventCounter events(*scheduler_);
  absl::Notification release;
  std::atomic<int> runs{0};
  HandlerOptions handler_options;
  handler_options.concurrency = 2;  // a second worker would take an expired job
  scheduler_->Handle(
      "slow",
      [&](const Job&) {
        ++runs;
        release.WaitForNotification();
        return absl::OkStatus();
      },
      handler_options);
  JobOptions options;
  options.id = "long";
  options.ttr = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("slow", "", options));
  // Whatever fails below, let the handler end so Stop() can return.
  struct Release {
    absl::Notification* n;
    ~Release() {
      if (!n->HasBeenNotified()) n->Notify();
    }
  } release_on_exit{&release};
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kReserved, 1));

  // Run for 5 ttrs. Each step passes the renewal point (half the ttr left)
  // but not the deadline; wait for the renewal before the next step.
  for (int step = 1; step <= 8; ++step) {
    clock_.Advance(absl::Seconds(6));
    const absl::Time want = clock_.Now() + absl::Seconds(10);
    const absl::Time give_up = absl::Now() + kPatience;
    absl::Time deadline;
    do {
      ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("long"));
      deadline = job.deadline;
      if (deadline == want) break;
      absl::SleepFor(absl::Microseconds(100));
    } while (absl::Now() < give_up);
    ASSERT_EQ(deadline, want) << "lease not renewed at step " << step;
  }
  release.Notify();
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 1));
  scheduler_->Stop();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(events.Count(EventType::kExpired), 0);
}

// Waits (real time) until job `id`'s stored lease deadline is `want`.
bool DeadlineBecomes(Scheduler& scheduler, absl::string_view id,
                     absl::Time want) {
  const absl::Time give_up = absl::Now() + kPatience;
  for (;;) {
    absl::StatusOr<Job> job = scheduler.Get(id);
    if (job.ok() && job->deadline == want) return true;
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Microseconds(100));
  }
}

// A batch of two: while the first job's handler runs past the second job's
// ttr, the second lease is renewed too, so no other consumer can take the
// job meanwhile, and it then runs once, on its live lease.
TEST_F(WorkersTest, JobsWaitingInABatchKeepTheirLeases) {
  EventCounter events(*scheduler_);
  absl::Notification release;
  absl::Mutex mu;
  std::vector<std::string> runs;
  HandlerOptions handler_options;
  handler_options.batch = 2;
  scheduler_->Handle(
      "t",
      [&](const Job& job) {
        {
          absl::MutexLock lock(&mu);
          runs.push_back(job.id);
        }
        if (job.id == "first") release.WaitForNotification();
        return absl::OkStatus();
      },
      handler_options);
  JobOptions options;
  options.ttr = absl::Seconds(10);
  options.id = "first";
  ASSERT_OK(scheduler_->Enqueue("t", "", options));
  options.id = "second";
  ASSERT_OK(scheduler_->Enqueue("t", "", options));
  struct Release {
    absl::Notification* n;
    ~Release() {
      if (!n->HasBeenNotified()) n->Notify();
    }
  } release_on_exit{&release};
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kReserved, 2));

  // Past the renewal point of both leases, then past their first deadline.
  clock_.Advance(absl::Seconds(6));
  ASSERT_TRUE(
      DeadlineBecomes(*scheduler_, "second", clock_.Now() + absl::Seconds(10)))
      << "the waiting lease was not renewed";
  clock_.Advance(absl::Seconds(6));
  // Another consumer finds nothing to take: both leases are live.
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> taken, scheduler_->Reserve("t"));
  EXPECT_FALSE(taken.has_value()) << "took " << taken->job.id;

  release.Notify();
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 2));
  scheduler_->Stop();
  EXPECT_THAT(runs, ::testing::ElementsAre("first", "second"));
  EXPECT_EQ(events.Count(EventType::kExpired), 0);
}

// A job of the batch that is cancelled while it waits its turn: the
// renewal is refused, and the job is not started on the dead lease.
TEST_F(WorkersTest, AJobWhoseLeaseIsGoneIsNotStarted) {
  EventCounter events(*scheduler_);
  absl::Notification release;
  std::atomic<int> second_runs{0};
  HandlerOptions handler_options;
  handler_options.batch = 2;
  scheduler_->Handle(
      "t",
      [&](const Job& job) {
        if (job.id == "first") release.WaitForNotification();
        if (job.id == "second") ++second_runs;
        return absl::OkStatus();
      },
      handler_options);
  JobOptions options;
  options.ttr = absl::Seconds(10);
  options.id = "first";
  ASSERT_OK(scheduler_->Enqueue("t", "", options));
  options.id = "second";
  ASSERT_OK(scheduler_->Enqueue("t", "", options));
  struct Release {
    absl::Notification* n;
    ~Release() {
      if (!n->HasBeenNotified()) n->Notify();
    }
  } release_on_exit{&release};
  ASSERT_OK(scheduler_->Start());
  ASSERT_TRUE(events.WaitFor(EventType::kReserved, 2));
  ASSERT_OK(scheduler_->Cancel("second"));
  // The keeper's next renewal of "second" is refused; "first" is renewed.
  clock_.Advance(absl::Seconds(6));
  ASSERT_TRUE(
      DeadlineBecomes(*scheduler_, "first", clock_.Now() + absl::Seconds(10)));
  release.Notify();
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 1));
  scheduler_->Stop();
  EXPECT_EQ(second_runs.load(), 0);
}

TEST_F(WorkersTest, StopWaitsForRunningHandlers) {
  EventCounter events(*scheduler_);
  absl::Notification started;
  absl::Notification release;
  std::atomic<bool> stopped{false};
  std::atomic<bool> finished_before_stop{false};
  scheduler_->Handle("t", [&](const Job&) {
    started.Notify();
    release.WaitForNotification();
    finished_before_stop = !stopped.load();
    return absl::OkStatus();
  });
  ASSERT_OK(scheduler_->Enqueue("t", ""));
  ASSERT_OK(scheduler_->Start());
  started.WaitForNotification();
  const int sleepers = clock_.Waiters();
  std::thread stopper([&] {
    scheduler_->Stop(absl::Hours(1));
    stopped = true;
  });
  // Stop() waits for the grace period on the scheduler's clock.
  while (clock_.Waiters() == sleepers) absl::SleepFor(absl::Milliseconds(1));
  release.Notify();
  stopper.join();
  EXPECT_TRUE(finished_before_stop.load());
  EXPECT_EQ(events.Count(EventType::kSucceeded), 1);
}

TEST_F(WorkersTest, DelayedJobsRunWhenTheClockReachesThem) {
  EventCounter events(*scheduler_);
  scheduler_->Handle("t", [](const Job&) { return absl::OkStatus(); });
  JobOptions options;
  options.delay = absl::Seconds(90);
  ASSERT_OK(scheduler_->Enqueue("t", "respawn boss", options));
  ASSERT_OK(scheduler_->Start());
  clock_.Advance(absl::Seconds(89));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("t"));
  EXPECT_EQ(stats.delayed, 1);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 1));
  scheduler_->Stop();
}

TEST_F(WorkersTest, HandlerRegisteredAfterStartGetsWorkers) {
  EventCounter events(*scheduler_);
  ASSERT_OK(scheduler_->Start());
  scheduler_->Handle("late", [](const Job&) { return absl::OkStatus(); });
  ASSERT_OK(scheduler_->Enqueue("late", ""));
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 1));
  scheduler_->Stop();
  // Restartable after Stop().
  ASSERT_OK(scheduler_->Start());
  ASSERT_OK(scheduler_->Enqueue("late", ""));
  ASSERT_TRUE(events.WaitFor(EventType::kSucceeded, 2));
}

}  // namespace
}  // namespace delayq
