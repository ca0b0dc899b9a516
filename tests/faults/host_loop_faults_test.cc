// Copyright delayq authors.
//
// The scheduler's own calls (Enqueue, Reserve, Ack, Fail, Release, Touch,
// Cancel, Tick) from a host loop on one thread, on the simulated clock,
// while the store fails them before or after acting, or stalls, on a
// seeded schedule. One thread makes every call, so a seed replays exactly.
//
// Checked for every seed, on the memory store and on a SQLite file:
//   * every failure injected into a store call that changes the store
//     comes back to the caller of the scheduler call that made it, and
//     no Unavailable or DeadlineExceeded comes back that was not injected;
//   * no job is lost: once faults stop, every job the store ever held (an
//     Enqueue that returned OK, and one whose Add reply was lost) is
//     reserved and acked or was cancelled, no job leaves the store by an
//     Ack or Cancel the test did not ask for, and the store ends empty;
//   * no job is held twice at once under a live lease.

#include <random>
#include <set>
#include <string>
#include <vector>

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
const absl::Duration kTtr = absl::Seconds(10);
constexpr int kSteps = 400;

// Calls whose failure the scheduler deliberately does not report: the
// safety-net reads that the next look repeats (NextDue after a Tick,
// ListSchedules when the schedules are read again).
bool Unreported(StoreCall call) {
  return call == StoreCall::kNextDue || call == StoreCall::kListSchedules;
}

class HostLoopFaultsTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    store_ = OpenStore(GetParam().store);
    FaultPlan plan = MixedPlan(GetParam().seed, 0.12, 0.1, absl::Seconds(4));
    faulty_ = std::make_unique<FaultyBackend>(store_.get(), plan, &clock_);
    faulty_->set_enabled(false);
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(faulty_->Borrow(), options));
    faulty_->set_enabled(true);
  }

  // The failures injected since injection number `from` that the
  // scheduler must report.
  int ReportableSince(size_t from) {
    const std::vector<Injection> all = faulty_->Injections();
    int n = 0;
    for (size_t i = from; i < all.size(); ++i) {
      if (all[i].kind != FaultKind::kDelay && !Unreported(all[i].call)) ++n;
    }
    return n;
  }

  // Checks one scheduler call's status against what was injected into it.
  void CheckReported(const char* what, const absl::Status& s, size_t from) {
    const int injected = ReportableSince(from);
    if (injected > 0) {
      EXPECT_FALSE(s.ok()) << what << " returned OK though the store failed "
                           << injected << " of its calls";
      ++reported_;
    }
    if (IsInjectable(s)) {
      EXPECT_GT(injected, 0)
          << what << " returned " << s << " though nothing was injected";
    }
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Backend> store_;
  std::unique_ptr<FaultyBackend> faulty_;
  std::unique_ptr<Scheduler> scheduler_;
  int reported_ = 0;
};

TEST_P(HostLoopFaultsTest, CallsReportFailuresAndLoseNothing) {
  SCOPED_TRACE(absl::StrCat("seed ", GetParam().seed,
                            " (replay: DELAYQ_FAULT_SEEDS=", GetParam().seed,
                            ")"));
  std::mt19937_64 rng(GetParam().seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  RunLog runs;
  struct Held {
    Lease lease;
    size_t run;
  };
  std::vector<Held> held;
  std::vector<std::string> ids;
  std::set<std::string> enqueued_ok;
  // Ids the test asked to ack or to cancel.
  std::set<std::string> asked_to_ack, asked_to_cancel;
  int next_id = 0;

  auto end_run = [&](size_t i) {
    runs.End(held[i].run, clock_.Now());
    held.erase(held.begin() + i);
  };
  // A lease call's outcome: done with the lease unless the store could not
  // be asked (then it is tried again later, or lapses).
  auto settle = [&](size_t i, const absl::Status& s) {
    if (s.ok() || absl::IsFailedPrecondition(s)) {
      end_run(i);
    } else {
      EXPECT_TRUE(IsInjectable(s)) << s;
    }
  };

  for (int step = 0; step < kSteps; ++step) {
    const size_t from = faulty_->Injections().size();
    switch (pick(9)) {
      case 0:
      case 1: {
        JobOptions o;
        o.id = absl::StrCat("j", next_id++);
        o.delay = absl::Milliseconds(static_cast<int64_t>(pick(5000)));
        o.ttr = kTtr;
        o.max_attempts = 1000;  // lapsed leases must not kill jobs here
        o.backoff = Backoff::Fixed(absl::Seconds(1));
        absl::StatusOr<std::string> id = scheduler_->Enqueue("t", "p", o);
        CheckReported("Enqueue", id.status(), from);
        ids.push_back(o.id);
        if (id.ok()) enqueued_ok.insert(*id);
        break;
      }
      case 2: {
        absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve("t");
        CheckReported("Reserve", lease.status(), from);
        if (lease.ok() && lease->has_value()) {
          held.push_back({**lease, runs.Begin(**lease, clock_.Now())});
        }
        break;
      }
      case 3:
        if (!held.empty()) {
          const size_t i = pick(held.size());
          asked_to_ack.insert(held[i].lease.job.id);
          const absl::Status s = scheduler_->Ack(held[i].lease);
          CheckReported("Ack", s, from);
          settle(i, s);
        }
        break;
      case 4:
        if (!held.empty()) {
          const size_t i = pick(held.size());
          const absl::Status s = scheduler_->Fail(held[i].lease, "boom");
          CheckReported("Fail", s, from);
          settle(i, s);
        }
        break;
      case 5:
        if (!held.empty()) {
          const size_t i = pick(held.size());
          const absl::Status s =
              scheduler_->Release(held[i].lease, absl::Seconds(1));
          CheckReported("Release", s, from);
          settle(i, s);
        }
        break;
      case 6:
        if (!held.empty()) {
          const size_t i = pick(held.size());
          const absl::Status s = scheduler_->Touch(held[i].lease);
          CheckReported("Touch", s, from);
          if (absl::IsFailedPrecondition(s)) end_run(i);
        }
        break;
      case 7:
        if (!ids.empty() && pick(4) == 0) {
          const std::string& id = ids[pick(ids.size())];
          asked_to_cancel.insert(id);
          const absl::Status s = scheduler_->Cancel(id);
          CheckReported("Cancel", s, from);
        } else {
          const absl::StatusOr<int> ticked = scheduler_->Tick();
          CheckReported("Tick", ticked.status(), from);
        }
        break;
      case 8:
        clock_.Advance(absl::Milliseconds(static_cast<int64_t>(pick(3000))));
        break;
    }
  }

  // Faults stop. Every job the store holds must come out and be acked.
  faulty_->set_enabled(false);
  for (Held& h : held) runs.End(h.run, clock_.Now());
  held.clear();
  for (int round = 0; round < 20; ++round) {
    clock_.Advance(kTtr);
    ASSERT_OK(scheduler_->Tick());
    for (;;) {
      ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease,
                           scheduler_->Reserve("t"));
      if (!lease.has_value()) break;
      const size_t run = runs.Begin(*lease, clock_.Now());
      asked_to_ack.insert(lease->job.id);
      ASSERT_OK(scheduler_->Ack(*lease));
      runs.End(run, clock_.Now());
    }
    if (JobsIn(*store_, {"t"}) == 0) break;
  }

  const std::string report = faulty_->Report();
  EXPECT_EQ(JobsIn(*store_, {"t"}), 0) << report;
  const std::vector<std::string> lost = LostJobs(*faulty_);
  EXPECT_TRUE(lost.empty()) << "lost: " << absl::StrJoin(lost, ",") << "\n"
                            << report;
  const std::vector<std::string> unasked =
      UnaskedEnds(*faulty_, asked_to_ack, asked_to_cancel);
  EXPECT_TRUE(unasked.empty()) << absl::StrJoin(unasked, "\n") << "\n"
                               << report;
  const std::set<std::string> added = faulty_->Added();
  for (const std::string& id : enqueued_ok) {
    EXPECT_EQ(added.count(id), 1u) << id << " was enqueued but not stored";
  }
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(runs.Runs(), faulty_->Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n") << "\n"
                                << report;

  // The run exercised what it claims to.
  int lost_adds = 0;
  for (const Injection& in : faulty_->Injections()) {
    lost_adds += in.call == StoreCall::kAdd && in.kind == FaultKind::kFailAfter;
  }
  EXPECT_GT(reported_, 20) << report;
  EXPECT_GT(faulty_->Delays(), 10) << report;
  EXPECT_GT(lost_adds, 0) << report;
  printf(
      "seed %llu: %zu jobs added, %d failures reported, %lld injected, "
      "%d lost Add replies, %lld delays\n",
      static_cast<unsigned long long>(GetParam().seed), added.size(), reported_,
      static_cast<long long>(faulty_->Failures()), lost_adds,
      static_cast<long long>(faulty_->Delays()));
}

// Cancel() reads the job first when anyone listens, to name its topic in
// the event. When that read fails, the cancel must not go on and tell the
// listeners of a job of no topic: the caller hears of the failure.
TEST(CancelFaultsTest, AFailedTopicReadIsReportedNotAnEventWithoutATopic) {
  for (FaultKind kind : {FaultKind::kFailBefore, FaultKind::kFailAfter}) {
    SCOPED_TRACE(FaultKindName(kind));
    SimulatedClock clock(kStart);
    std::unique_ptr<Backend> store = NewMemoryBackend();
    FaultyBackend faulty(store.get(), FaultPlan{}, &clock);
    SchedulerOptions options;
    options.clock = &clock;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                         Scheduler::Create(faulty.Borrow(), options));
    std::vector<Event> cancelled;
    scheduler->AddListener([&](const Event& e) {
      if (e.type == EventType::kCancelled) cancelled.push_back(e);
    });
    JobOptions o;
    o.id = "a";
    ASSERT_OK(scheduler->Enqueue("t", "p", o));
    faulty.ForceNext(StoreCall::kGet, kind);
    const absl::Status s = scheduler->Cancel("a");
    EXPECT_EQ(faulty.Failures(StoreCall::kGet), 1);
    EXPECT_TRUE(IsInjectable(s)) << s;
    for (const Event& e : cancelled) {
      EXPECT_EQ(e.topic, "t") << "a cancel event without its topic";
    }
    // Nothing was cancelled; the retry does it and names the topic.
    EXPECT_OK(store->Get("a"));
    ASSERT_OK(scheduler->Cancel("a"));
    ASSERT_EQ(cancelled.size(), 1u);
    EXPECT_EQ(cancelled[0].topic, "t");
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, HostLoopFaultsTest,
                         ::testing::ValuesIn(FaultCases()), FaultCaseTestName);

}  // namespace
}  // namespace testing
}  // namespace delayq
