// Copyright delayq authors.
//
// The lease keeper (the automatic Touch() while a handler runs) when the
// store fails its renewals. One worker runs a handler that takes 6 ttrs of
// simulated time; the test moves the clock in steps once the threads are
// quiet.
//   * Renewals that fail before reaching the store: the lease lapses and
//     the job is delivered again while the first handler still runs,
//     which is allowed only because the lease lapsed (checked).
//   * Renewals whose replies are lost: the store extended the lease each
//     time, so the job is never delivered twice.
//   * Seeded faults on renewals, reservations and acks, on both stores:
//     no job runs twice at once under a live lease, none is lost.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
const absl::Duration kWork = kTtr * 6;
constexpr int kJobs = 3;
constexpr int kWorkers = 2;

class KeeperRun {
 public:
  KeeperRun(StoreKind kind, FaultPlan plan)
      : store_(OpenStore(kind)),
        faulty_(store_.get(), std::move(plan), &clock_) {}

  // Runs kJobs long jobs with faults on, then finishes them with faults
  // off. Returns false when the jobs did not finish.
  bool Run() {
    faulty_.set_enabled(false);
    SchedulerOptions options;
    options.clock = &clock_;
    auto scheduler = Scheduler::Create(faulty_.Borrow(), options);
    if (!scheduler.ok()) return false;
    HandlerOptions handler_options;
    handler_options.concurrency = kWorkers;
    (*scheduler)
        ->HandleLeases(
            "t",
            [this](const Lease& lease) {
              const size_t run = runs_.Begin(lease, clock_.Now());
              clock_.SleepUntil(clock_.Now() + kWork);
              runs_.End(run, clock_.Now());
              return absl::OkStatus();
            },
            handler_options);
    for (int i = 0; i < kJobs; ++i) {
      JobOptions o;
      o.id = absl::StrCat("j", i);
      o.ttr = kTtr;
      o.max_attempts = 1000;
      if (!(*scheduler)->Enqueue("t", "p", o).ok()) return false;
    }
    faulty_.set_enabled(true);
    if (!(*scheduler)->Start().ok()) return false;
    // Workers, the timer thread and the keeper. Each step waits for all of
    // them (up to 1 s of real time, for a loaded machine) before the clock
    // moves on, or a renewal still under way would count as one not made.
    const int threads = kWorkers + 2;
    const absl::Duration patience = absl::Seconds(1);
    for (int i = 0; i < 400; ++i) {
      AwaitWaiters(clock_, threads, patience);
      clock_.Advance(absl::Milliseconds(500));
    }
    faulty_.set_enabled(false);
    // Bounded in real time too, so that a run that cannot finish fails
    // with its findings rather than by the test's timeout.
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    for (int i = 0;
         i < 2000 && JobsIn(*store_, {"t"}) != 0 && absl::Now() < give_up;
         ++i) {
      AwaitWaiters(clock_, threads, patience);
      clock_.Advance(absl::Milliseconds(500));
    }
    StopWhileAdvancing(**scheduler, clock_, absl::ZeroDuration());
    return JobsIn(*store_, {"t"}) == 0;
  }

  // Runs per job.
  std::map<std::string, int> RunsPerJob() const {
    std::map<std::string, int> out;
    for (const RunLog::Run& r : runs_.Runs()) ++out[r.id];
    return out;
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_;
  FaultyBackend faulty_;
  RunLog runs_;
};

class LeaseKeeperFaultsTest : public ::testing::TestWithParam<StoreKind> {};

TEST_P(LeaseKeeperFaultsTest, RenewalsThatNeverArriveLetTheLeaseLapse) {
  FaultPlan plan;
  plan.fail_before = 1;
  plan.calls = {StoreCall::kTouch};
  KeeperRun run(GetParam(), plan);
  EXPECT_TRUE(run.Run()) << run.faulty_.Report();
  EXPECT_GT(run.faulty_.Failures(StoreCall::kTouch), 0);
  // Jobs ran more than once: their leases lapsed under the handlers.
  EXPECT_GT(run.runs_.Runs().size(), static_cast<size_t>(kJobs));
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(run.runs_.Runs(), run.faulty_.Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n");
  EXPECT_TRUE(LostJobs(run.faulty_).empty());
}

TEST_P(LeaseKeeperFaultsTest, RenewalsWhoseRepliesAreLostStillKeepTheLease) {
  FaultPlan plan;
  plan.fail_after = 1;
  plan.calls = {StoreCall::kTouch};
  KeeperRun run(GetParam(), plan);
  EXPECT_TRUE(run.Run()) << run.faulty_.Report();
  EXPECT_GT(run.faulty_.Failures(StoreCall::kTouch), 0);
  for (const auto& [id, n] : run.RunsPerJob()) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(run.RunsPerJob().size(), static_cast<size_t>(kJobs));
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(run.runs_.Runs(), run.faulty_.Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n");
  EXPECT_TRUE(LostJobs(run.faulty_).empty());
}

INSTANTIATE_TEST_SUITE_P(Faults, LeaseKeeperFaultsTest,
                         ::testing::Values(StoreKind::kMemory,
                                           StoreKind::kSqlite),
                         [](const ::testing::TestParamInfo<StoreKind>& info) {
                           return info.param == StoreKind::kMemory ? "Memory"
                                                                   : "Sqlite";
                         });

class SeededLeaseKeeperFaultsTest : public ::testing::TestWithParam<FaultCase> {
};

TEST_P(SeededLeaseKeeperFaultsTest, NoRunTwiceUnderALiveLease) {
  SCOPED_TRACE(absl::StrCat("seed ", GetParam().seed,
                            " (replay: DELAYQ_FAULT_SEEDS=", GetParam().seed,
                            ")"));
  FaultPlan plan = MixedPlan(GetParam().seed, 0.25, 0.2, absl::Seconds(6));
  plan.calls = {StoreCall::kTouch, StoreCall::kReserve, StoreCall::kAck};
  KeeperRun run(GetParam().store, plan);
  EXPECT_TRUE(run.Run()) << run.faulty_.Report();
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(run.runs_.Runs(), run.faulty_.Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n") << "\n"
                                << run.faulty_.Report();
  EXPECT_TRUE(LostJobs(run.faulty_).empty()) << run.faulty_.Report();
  EXPECT_GT(run.faulty_.Failures(StoreCall::kTouch), 0) << run.faulty_.Report();
  printf("seed %llu: %zu runs of %d jobs, %lld of %lld renewals failed\n",
         static_cast<unsigned long long>(GetParam().seed),
         run.runs_.Runs().size(), kJobs,
         static_cast<long long>(run.faulty_.Failures(StoreCall::kTouch)),
         static_cast<long long>(run.faulty_.Calls(StoreCall::kTouch)));
}

INSTANTIATE_TEST_SUITE_P(Faults, SeededLeaseKeeperFaultsTest,
                         ::testing::ValuesIn(FaultCases()), FaultCaseTestName);

}  // namespace
}  // namespace testing
}  // namespace delayq
