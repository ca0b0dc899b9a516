// Copyright delayq authors.
//
// The schedule runner (FireSchedule) under seeded store faults: two
// schedulers share one store, as two processes would, each over a fault
// wrapper of its own, and run one schedule "@every 10s" from a host loop
// (Tick() on the simulated clock). Occurrences missed while the store
// failed must all run (missed = all), once each.
//
// Checked for every seed, on the memory store and on a SQLite file:
//   * every occurrence from the schedule's start to the end of the run is
//     enqueued exactly once: the occurrence times of the jobs the store
//     added are 10 s apart with no gap, from the first after the start to
//     the last before the end (a lost FireSchedule reply is a fired one:
//     the next try is refused by the revision and reads the store again);
//   * nothing is lost: every job the store added is acked in the end;
//   * Tick() fails only with the injected codes, and FireSchedule did fail.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/faults/fault_harness.h"
#include "tests/testing/faulty_backend.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kEvery = absl::Seconds(10);

class ScheduleFaultsTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ScheduleFaultsTest, EveryOccurrenceOnceThroughFaults) {
  SCOPED_TRACE(absl::StrCat("seed ", GetParam().seed,
                            " (replay: DELAYQ_FAULT_SEEDS=", GetParam().seed,
                            ")"));
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> store = OpenStore(GetParam().store);
  std::vector<std::unique_ptr<FaultyBackend>> faulty;
  std::vector<std::unique_ptr<Scheduler>> schedulers;
  for (uint64_t k = 0; k < 2; ++k) {
    FaultPlan plan =
        MixedPlan(GetParam().seed * 2 + k, 0.15, 0.1, absl::Seconds(3));
    faulty.push_back(
        std::make_unique<FaultyBackend>(store.get(), plan, &clock));
    faulty.back()->set_enabled(false);
    SchedulerOptions options;
    options.clock = &clock;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> s,
                         Scheduler::Create(faulty.back()->Borrow(), options));
    schedulers.push_back(std::move(s));
  }
  ScheduleOptions options;
  options.missed = MissedPolicy::All(kMaxMissedRuns);
  // Lost replies cost attempts; the jobs must not go dead here.
  options.job.max_attempts = 1000;
  ASSERT_OK(schedulers[0]->Schedule("every", "@every 10s", "s", "p", options));
  for (auto& f : faulty) f->set_enabled(true);

  int tick_errors = 0;
  auto step = [&] {
    clock.Advance(absl::Seconds(1));
    for (auto& s : schedulers) {
      const absl::StatusOr<int> ticked = s->Tick();
      if (!ticked.ok()) {
        EXPECT_TRUE(IsInjectable(ticked.status())) << ticked.status();
        ++tick_errors;
      }
      // Consume, so that the store ends empty; lease calls may fail too.
      for (;;) {
        absl::StatusOr<std::optional<Lease>> lease = s->Reserve("s");
        if (!lease.ok() || !lease->has_value()) break;
        (void)s->Ack(**lease);
      }
    }
  };
  for (int i = 0; i < 300; ++i) step();
  for (auto& f : faulty) f->set_enabled(false);
  for (int i = 0; i < 30; ++i) step();
  // No more occurrences from here on.
  ASSERT_OK(schedulers[0]->Unschedule("every"));
  const absl::Time end = clock.Now();
  // Leases whose Ack failed lapse; take them again.
  for (int i = 0; i < 10 && JobsIn(*store, {"s"}) != 0; ++i) {
    clock.Advance(absl::Seconds(60));
    step();
  }

  std::string report;
  std::set<std::string> added, acked;
  int64_t fire_failures = 0;
  for (auto& f : faulty) {
    absl::StrAppend(&report, f->Report());
    for (const std::string& id : f->Added()) added.insert(id);
    for (const std::string& id : f->Acked()) acked.insert(id);
    fire_failures += f->Failures(StoreCall::kFireSchedule);
  }
  // The occurrences the store holds or held, in order.
  std::vector<absl::Time> times;
  for (const std::string& id : added) {
    ASSERT_TRUE(absl::StartsWith(id, "every@")) << id;
    absl::Time at;
    std::string err;
    ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, id.substr(6), &at, &err))
        << id << ": " << err;
    times.push_back(at);
  }
  std::sort(times.begin(), times.end());
  ASSERT_FALSE(times.empty()) << report;
  EXPECT_LE(times.front() - kStart, kEvery) << report;
  EXPECT_LT(end - times.back(), kEvery) << report;
  for (size_t i = 1; i < times.size(); ++i) {
    EXPECT_EQ(times[i] - times[i - 1], kEvery)
        << "between " << absl::FormatTime(times[i - 1]) << " and "
        << absl::FormatTime(times[i]) << "\n"
        << report;
  }
  for (const std::string& id : added) {
    EXPECT_EQ(acked.count(id), 1u) << id << " lost\n" << report;
  }
  EXPECT_EQ(JobsIn(*store, {"s"}), 0);
  EXPECT_GT(fire_failures, 0) << report;
  printf(
      "seed %llu: %zu occurrences, %lld FireSchedule failures, %d Tick "
      "errors\n",
      static_cast<unsigned long long>(GetParam().seed), times.size(),
      static_cast<long long>(fire_failures), tick_errors);
}

INSTANTIATE_TEST_SUITE_P(Faults, ScheduleFaultsTest,
                         ::testing::ValuesIn(FaultCases()), FaultCaseTestName);

}  // namespace
}  // namespace testing
}  // namespace delayq
