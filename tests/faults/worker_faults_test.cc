// Copyright delayq authors.
//
// The worker pool (Handle, Start, Stop) and the lease keeper (automatic
// Touch while a handler runs) on the simulated clock, while the store
// fails or stalls their calls on a seeded schedule. Handlers take
// simulated time, some of them several ttrs, so that the keeper must renew
// their leases through the faults; some fail their first attempt.
//
// The test thread moves the clock in steps once the scheduler's threads
// have gone quiet (all waiting on the clock). Fault decisions are a
// function of the seed alone, but with several threads the order in which
// calls meet them is not, so a seed replays its schedule, not its exact
// interleaving.
//
// Checked for every seed, on the memory store and on a SQLite file:
//   * no job is lost: once faults stop, every job the store ever held is
//     handled and acked, nothing leaves the store by an Ack its handler
//     did not ask for, and the store ends empty;
//   * no job runs twice at once under a live lease;
//   * Stop(), called with faults on and handlers running: once it returns
//     no handler runs and the scheduler makes no store call at all (so no
//     lease is renewed); the store still shows reserved only the jobs
//     LeasesKeptAfterStop() allows, and they come back after their ttr;
//   * the store errors the workers and the keeper met, which no caller
//     sees, are counted in the scheduler's metrics
//     (delayq_store_call_errors_total), one for each injected failure.

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/faults/fault_harness.h"
#include "tests/testing/faulty_backend.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kTtr = absl::Seconds(10);
const absl::Duration kStep = absl::Milliseconds(500);
constexpr int kJobs = 40;
constexpr int kConcurrency = 3;
// Workers, the timer thread and the lease keeper.
constexpr int kThreads = kConcurrency + 2;

// How long job `i` works: most briefly, every fourth for 2.5 ttrs.
absl::Duration WorkOf(int i) {
  return i % 4 == 0 ? kTtr * 2.5 : absl::Milliseconds(300 * (i % 7));
}

// The sum of delayq_store_call_errors_total in a metrics text, for the
// codes a failing store gives (a stale lease's FailedPrecondition is no
// store failure).
int64_t StoreErrors(const std::string& text) {
  int64_t sum = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "delayq_store_call_errors_total{")) continue;
    if (!absl::StrContains(line, "code=\"UNAVAILABLE\"") &&
        !absl::StrContains(line, "code=\"DEADLINE_EXCEEDED\"")) {
      continue;
    }
    int64_t n = 0;
    if (absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &n)) sum += n;
  }
  return sum;
}

class WorkerFaultsTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    store_ = OpenStore(GetParam().store);
    FaultPlan plan = MixedPlan(GetParam().seed, 0.1, 0.1, absl::Seconds(3));
    faulty_ = std::make_unique<FaultyBackend>(store_.get(), plan, &clock_);
    faulty_->set_enabled(false);
    SchedulerOptions options;
    options.clock = &clock_;
    options.poll_interval = absl::Seconds(1);
    ASSERT_OK_AND_ASSIGN(
        scheduler_,
        Scheduler::Create(metrics_.Instrument(faulty_->Borrow()), options));
    metrics_.Attach(*scheduler_);
    HandlerOptions handler_options;
    handler_options.concurrency = kConcurrency;
    handler_options.batch = 2;
    scheduler_->HandleLeases(
        "t",
        [this](const Lease& lease) -> absl::Status {
          const size_t run = runs_.Begin(lease, clock_.Now());
          int i = 0;
          (void)absl::SimpleAtoi(absl::string_view(lease.job.id).substr(1), &i);
          clock_.SleepUntil(clock_.Now() + WorkOf(i));
          runs_.End(run, clock_.Now());
          if (i % 5 == 1 && lease.job.attempts == 1) {
            return absl::InternalError("first attempts of these fail");
          }
          absl::MutexLock lock(&mu_);
          succeeded_.insert(lease.job.id);
          return absl::OkStatus();
        },
        handler_options);
  }

  void TearDown() override {
    StopWhileAdvancing(*scheduler_, clock_, absl::ZeroDuration(), kStep);
  }

  // Moves the clock a step once the threads are quiet.
  void Step() {
    AwaitWaiters(clock_, kThreads, absl::Milliseconds(200));
    clock_.Advance(kStep);
  }

  bool AllDone() {
    if (!LostJobs(*faulty_).empty()) return false;
    return JobsIn(*store_, {"t"}) == 0;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_;
  std::unique_ptr<FaultyBackend> faulty_;
  Metrics metrics_;  // outlives the scheduler
  std::unique_ptr<Scheduler> scheduler_;
  RunLog runs_;
  absl::Mutex mu_;
  std::set<std::string> succeeded_ ABSL_GUARDED_BY(mu_);
};

TEST_P(WorkerFaultsTest, WorkersLoseNothingAndStopCleanly) {
  SCOPED_TRACE(absl::StrCat("seed ", GetParam().seed,
                            " (replay: DELAYQ_FAULT_SEEDS=", GetParam().seed,
                            ")"));
  faulty_->set_enabled(true);
  ASSERT_OK(scheduler_->Start());
  int enqueue_errors = 0;
  for (int i = 0; i < kJobs; ++i) {
    JobOptions o;
    o.id = absl::StrCat("j", i);
    o.delay = absl::Seconds(i % 10);
    o.ttr = kTtr;
    o.max_attempts = 1000;  // lapsed leases must not kill jobs here
    o.backoff = Backoff::Fixed(absl::Seconds(1));
    const absl::StatusOr<std::string> id = scheduler_->Enqueue("t", "p", o);
    if (!id.ok()) {
      EXPECT_TRUE(IsInjectable(id.status())) << id.status();
      ++enqueue_errors;
    }
    if (i % 4 == 3) Step();
  }
  // A minute of work with faults on.
  for (int i = 0; i < 120; ++i) Step();
  // Then a burst of long jobs, so that at Stop() workers are in the first
  // job of a batch whose second waits its turn.
  for (int i = 100; i < 100 + 4 * 2 * kConcurrency; i += 4) {
    JobOptions o;
    o.id = absl::StrCat("j", i);
    o.ttr = kTtr;
    o.max_attempts = 1000;
    const absl::StatusOr<std::string> id = scheduler_->Enqueue("t", "p", o);
    if (!id.ok()) {
      EXPECT_TRUE(IsInjectable(id.status())) << id.status();
      ++enqueue_errors;
    }
  }
  for (int i = 0; i < 4; ++i) Step();
  // Stop() with handlers running.

  // Stop() waits out its grace on the simulated clock.
  StopWhileAdvancing(*scheduler_, clock_, absl::Seconds(5), kStep);
  const absl::Time stop_time = clock_.Now();
  const TopicStats at_stop = store_->Stats("t").value_or(TopicStats{});
  EXPECT_EQ(runs_.Running(), 0) << "a handler runs after Stop() returned";
  const std::vector<std::string> kept =
      LeasesKeptAfterStop(*store_, *faulty_, {"t"}, clock_.Now());
  EXPECT_TRUE(kept.empty()) << absl::StrJoin(kept, "\n") << "\n"
                            << faulty_->Report();
  // The scheduler's threads are gone: however far the clock moves, nothing
  // runs and no lease is renewed.
  int64_t calls_at_stop = 0;
  for (int c = 0; c < kStoreCallCount; ++c) {
    calls_at_stop += faulty_->Calls(static_cast<StoreCall>(c));
  }
  for (int i = 0; i < 3 * 20; ++i) clock_.Advance(kStep);
  absl::SleepFor(absl::Milliseconds(20));  // a thread that wrongly lives on
  int64_t calls_later = 0;
  for (int c = 0; c < kStoreCallCount; ++c) {
    calls_later += faulty_->Calls(static_cast<StoreCall>(c));
  }
  EXPECT_EQ(calls_later, calls_at_stop) << "store calls after Stop()";
  EXPECT_EQ(runs_.BeganSince(stop_time), 0) << "handlers began after Stop()";

  // Faults stop; the workers start again and finish everything.
  faulty_->set_enabled(false);
  const int64_t injected = faulty_->Failures();
  ASSERT_OK(scheduler_->Start());
  // Bounded in real time too, so that a run that cannot finish fails with
  // its findings rather than by the test's timeout.
  const absl::Time drain_until = absl::Now() + absl::Seconds(5);
  for (int i = 0; i < 2000 && !AllDone() && absl::Now() < drain_until; ++i) {
    Step();
  }
  StopWhileAdvancing(*scheduler_, clock_, absl::ZeroDuration(), kStep);

  const std::string report = faulty_->Report();
  const std::vector<std::string> lost = LostJobs(*faulty_);
  EXPECT_TRUE(lost.empty()) << "lost: " << absl::StrJoin(lost, ",") << "\n"
                            << report;
  EXPECT_EQ(JobsIn(*store_, {"t"}), 0) << report;
  std::set<std::string> succeeded;
  {
    absl::MutexLock lock(&mu_);
    succeeded = succeeded_;
  }
  const std::vector<std::string> unasked = UnaskedEnds(*faulty_, succeeded, {});
  EXPECT_TRUE(unasked.empty()) << absl::StrJoin(unasked, "\n");
  for (const std::string& id : faulty_->Added()) {
    EXPECT_EQ(succeeded.count(id), 1u) << id << " never handled";
  }
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(runs_.Runs(), faulty_->Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n") << "\n"
                                << report;
  // Every failure injected reached the metrics, the one report of errors
  // that no caller sees.
  EXPECT_EQ(StoreErrors(metrics_.PrometheusText()), injected) << report;

  // The run exercised what it claims to.
  EXPECT_GT(faulty_->Failures(StoreCall::kTouch), 0) << report;
  EXPECT_GT(faulty_->Calls(StoreCall::kTouch), 5) << report;
  EXPECT_GT(injected, 10) << report;
  int overlapping_redeliveries = 0;
  {
    const std::vector<RunLog::Run> all = runs_.Runs();
    for (size_t i = 0; i < all.size(); ++i) {
      for (size_t j = 0; j < all.size(); ++j) {
        overlapping_redeliveries += i != j && all[i].id == all[j].id &&
                                    all[i].start < all[j].start &&
                                    all[j].start < all[i].end;
      }
    }
  }
  printf(
      "seed %llu: %zu jobs, %zu runs (%d overlapping after a lapse), "
      "%lld failures and %lld delays injected, %lld Touch calls, %d "
      "enqueue errors, %lld jobs reserved in the store after Stop\n",
      static_cast<unsigned long long>(GetParam().seed), faulty_->Added().size(),
      runs_.Runs().size(), overlapping_redeliveries,
      static_cast<long long>(injected),
      static_cast<long long>(faulty_->Delays()),
      static_cast<long long>(faulty_->Calls(StoreCall::kTouch)), enqueue_errors,
      static_cast<long long>(at_stop.reserved));
}

INSTANTIATE_TEST_SUITE_P(Faults, WorkerFaultsTest,
                         ::testing::ValuesIn(FaultCases()), FaultCaseTestName);

}  // namespace
}  // namespace testing
}  // namespace delayq
