// Copyright delayq authors.
//
// The fault wrapper itself: every call of the Backend interface goes
// through it, a failure before a call leaves the store as it was and one
// after leaves the change, a seed gives one schedule, delays move the
// simulated clock, and the ledger follows the store's own replies.

#include "tests/testing/faulty_backend.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/faults/fault_harness.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace testing {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

NewJob MakeJob(std::string id, absl::Time run_at = kNow) {
  return PlainJob(std::move(id), "t", run_at);
}

ScheduleRecord MakeSchedule() {
  ScheduleRecord s;
  s.name = "every";
  s.spec = "@every 1m";
  s.topic = "t";
  return s;
}

// One call of each kind, made on `b`.
std::vector<std::pair<StoreCall, std::function<absl::Status(Backend&)>>>
EveryCall() {
  Lease lease;
  lease.job.id = "a";
  lease.token = 1;
  return {
      {StoreCall::kAdd, [](Backend& b) { return b.Add({MakeJob("x")}, kNow); }},
      {StoreCall::kReserve,
       [](Backend& b) { return b.Reserve("t", 1, kNow).status(); }},
      {StoreCall::kAck,
       [](Backend& b) { return b.Ack("a", 1, /*result=*/"", kNow); }},
      {StoreCall::kAckBatch,
       [lease](Backend& b) { return b.AckBatch({lease}, kNow).status(); }},
      {StoreCall::kFail,
       [](Backend& b) { return b.Fail("a", 1, "e", kNow, kNow).status(); }},
      {StoreCall::kRelease,
       [](Backend& b) { return b.Release("a", 1, kNow, kNow); }},
      {StoreCall::kTouch,
       [](Backend& b) { return b.Touch("a", 1, kNow).status(); }},
      {StoreCall::kCancel, [](Backend& b) { return b.Cancel("a", kNow); }},
      {StoreCall::kGet, [](Backend& b) { return b.Get("a").status(); }},
      {StoreCall::kList,
       [](Backend& b) { return b.List("t", JobState::kReady, 10).status(); }},
      {StoreCall::kStats, [](Backend& b) { return b.Stats("t").status(); }},
      {StoreCall::kTopics, [](Backend& b) { return b.Topics().status(); }},
      {StoreCall::kKick,
       [](Backend& b) { return b.Kick("t", 1, kNow).status(); }},
      {StoreCall::kKickJob, [](Backend& b) { return b.KickJob("a", kNow); }},
      {StoreCall::kPromoteDue,
       [](Backend& b) { return b.PromoteDue(kNow, 10).status(); }},
      {StoreCall::kNextDue, [](Backend& b) { return b.NextDue().status(); }},
      {StoreCall::kReplace,
       [](Backend& b) { return b.Replace(MakeJob("a"), kNow); }},
      {StoreCall::kSetPaused,
       [](Backend& b) { return b.SetPaused("t", true, kNow); }},
      {StoreCall::kPausedTopics,
       [](Backend& b) { return b.PausedTopics().status(); }},
      {StoreCall::kSetLimit,
       [](Backend& b) {
         TopicLimit limit;
         limit.concurrency = 1;
         return b.SetLimit("t", limit, kNow);
       }},
      {StoreCall::kClearLimit,
       [](Backend& b) { return b.ClearLimit("t", kNow); }},
      {StoreCall::kLimits, [](Backend& b) { return b.Limits().status(); }},
      {StoreCall::kPutSchedule,
       [](Backend& b) { return b.PutSchedule(MakeSchedule(), kNow); }},
      {StoreCall::kRemoveSchedule,
       [](Backend& b) { return b.RemoveSchedule("every", kNow); }},
      {StoreCall::kListSchedules,
       [](Backend& b) { return b.ListSchedules().status(); }},
      {StoreCall::kFireSchedule,
       [](Backend& b) {
         return b.FireSchedule("every", 0, kNow, {MakeJob("f")}, kNow);
       }},
      {StoreCall::kSubscribe,
       [](Backend& b) {
         return b.Subscribe([](const StoreNews&) {}).status();
       }},
  };
}

TEST(FaultyBackendTest, EveryCallOfTheInterfaceGoesThroughIt) {
  auto calls = EveryCall();
  ASSERT_EQ(calls.size(), static_cast<size_t>(kStoreCallCount));
  for (FaultKind kind : {FaultKind::kFailBefore, FaultKind::kFailAfter}) {
    for (absl::StatusCode code : {absl::StatusCode::kUnavailable,
                                  absl::StatusCode::kDeadlineExceeded}) {
      std::unique_ptr<Backend> store = NewMemoryBackend();
      FaultyBackend faulty(store.get(), FaultPlan{});
      for (auto& [call, make] : calls) {
        SCOPED_TRACE(StoreCallName(call));
        faulty.ForceNext(call, kind, code);
        EXPECT_EQ(make(faulty).code(), code);
        EXPECT_EQ(faulty.Calls(call), 1);
        EXPECT_EQ(faulty.Failures(call), 1);
      }
      EXPECT_EQ(faulty.Injections().size(), calls.size());
    }
  }
}

TEST(FaultyBackendTest, FailBeforeLeavesTheStoreAsItWas) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultyBackend faulty(store.get(), FaultPlan{});
  faulty.ForceNext(StoreCall::kAdd, FaultKind::kFailBefore);
  EXPECT_THAT(faulty.Add({MakeJob("a")}, kNow),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(store->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_TRUE(faulty.Added().empty());

  ASSERT_OK(faulty.Add({MakeJob("a")}, kNow));
  faulty.ForceNext(StoreCall::kReserve, FaultKind::kFailBefore);
  EXPECT_FALSE(faulty.Reserve("t", 1, kNow).ok());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("t"));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_TRUE(faulty.Leases().empty());
}

TEST(FaultyBackendTest, FailAfterLeavesTheChangeAndTheLedgerKnowsIt) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultyBackend faulty(store.get(), FaultPlan{});
  faulty.ForceNext(StoreCall::kAdd, FaultKind::kFailAfter,
                   absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(faulty.Add({MakeJob("a")}, kNow),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_OK(store->Get("a"));
  EXPECT_EQ(faulty.Added(), std::set<std::string>{"a"});

  // A lost Reserve reply: the store holds the lease, the caller has none.
  faulty.ForceNext(StoreCall::kReserve, FaultKind::kFailAfter);
  EXPECT_FALSE(faulty.Reserve("t", 1, kNow).ok());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("t"));
  EXPECT_EQ(stats.reserved, 1);
  const auto leases = faulty.Leases();
  ASSERT_EQ(leases.size(), 1u);
  const GrantedLease& granted = leases.begin()->second;
  EXPECT_EQ(granted.granted_at, kNow);
  EXPECT_EQ(granted.deadline, kNow + absl::Seconds(60));

  // A lost Touch reply still moved the deadline.
  faulty.ForceNext(StoreCall::kTouch, FaultKind::kFailAfter);
  EXPECT_FALSE(faulty.Touch("a", granted.token, kNow + absl::Seconds(10)).ok());
  EXPECT_EQ(faulty.Leases().begin()->second.deadline, kNow + absl::Seconds(70));

  // A lost Ack reply: the job is gone.
  faulty.ForceNext(StoreCall::kAck, FaultKind::kFailAfter);
  EXPECT_FALSE(faulty.Ack("a", granted.token, /*result=*/"", kNow).ok());
  EXPECT_THAT(store->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(faulty.Acked(), std::set<std::string>{"a"});
  EXPECT_EQ(faulty.Leases().begin()->second.ended_by, StoreCall::kAck);
  EXPECT_TRUE(LostJobs(faulty).empty());
}

TEST(FaultyBackendTest, AFailedEndOfALeaseIsRecorded) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultyBackend faulty(store.get(), FaultPlan{});
  ASSERT_OK(faulty.Add({MakeJob("a")}, kNow));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, faulty.Reserve("t", 1, kNow));
  ASSERT_EQ(leases.size(), 1u);
  faulty.ForceNext(StoreCall::kRelease, FaultKind::kFailBefore);
  EXPECT_FALSE(faulty.Release("a", leases[0].token, kNow, kNow).ok());
  const auto failed = faulty.EndsFailedBefore();
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed.begin()->first, "a");
  EXPECT_EQ(failed.begin()->second, leases[0].token);
  EXPECT_EQ(LostJobs(faulty), std::vector<std::string>{"a"});
}

// The calls a host loop might make, in a fixed order, against a store.
std::vector<Injection> RunFixedCalls(uint64_t seed) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultPlan plan;
  plan.seed = seed;
  plan.fail_before = 0.2;
  plan.fail_after = 0.2;
  plan.delay = 0.2;
  SimulatedClock clock(kNow);
  FaultyBackend faulty(store.get(), plan, &clock);
  for (int i = 0; i < 50; ++i) {
    (void)faulty.Add({MakeJob(absl::StrCat("j", i))}, kNow);
    (void)faulty.Reserve("t", 1, kNow);
    (void)faulty.PromoteDue(kNow, 10);
    (void)faulty.Stats("t");
  }
  return faulty.Injections();
}

TEST(FaultyBackendTest, OneSeedGivesOneSchedule) {
  const std::vector<Injection> a = RunFixedCalls(11);
  const std::vector<Injection> b = RunFixedCalls(11);
  const std::vector<Injection> c = RunFixedCalls(12);
  ASSERT_FALSE(a.empty());
  auto text = [](const std::vector<Injection>& v) {
    std::string out;
    for (const Injection& in : v) absl::StrAppend(&out, in.ToString(), "\n");
    return out;
  };
  EXPECT_EQ(text(a), text(b));
  EXPECT_NE(text(a), text(c));
  // About 60% of 200 calls get a fault; every kind comes up.
  int kinds[3] = {};
  for (const Injection& in : a) ++kinds[static_cast<int>(in.kind)];
  EXPECT_GT(kinds[0], 10);
  EXPECT_GT(kinds[1], 10);
  EXPECT_GT(kinds[2], 10);
}

// A call's decision depends on its own kind and index only, so calls of
// other kinds in between (another thread's) do not change it.
TEST(FaultyBackendTest, ADecisionDependsOnItsCallOnly) {
  FaultPlan plan;
  plan.seed = 5;
  plan.fail_before = 0.5;
  std::unique_ptr<Backend> s1 = NewMemoryBackend();
  std::unique_ptr<Backend> s2 = NewMemoryBackend();
  FaultyBackend f1(s1.get(), plan);
  FaultyBackend f2(s2.get(), plan);
  std::vector<bool> r1, r2;
  for (int i = 0; i < 40; ++i) r1.push_back(f1.NextDue().ok());
  for (int i = 0; i < 40; ++i) {
    (void)f2.Stats("t");
    (void)f2.Topics();
    r2.push_back(f2.NextDue().ok());
  }
  EXPECT_EQ(r1, r2);
}

TEST(FaultyBackendTest, ADelayMovesTheSimulatedClock) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  SimulatedClock clock(kNow);
  FaultyBackend faulty(store.get(), FaultPlan{}, &clock);
  faulty.ForceNext(StoreCall::kNextDue, FaultKind::kDelay,
                   absl::StatusCode::kOk, absl::Seconds(3));
  EXPECT_OK(faulty.NextDue());
  EXPECT_EQ(clock.Now(), kNow + absl::Seconds(3));
  EXPECT_EQ(faulty.Delays(), 1);
  EXPECT_EQ(faulty.Failures(), 0);
}

TEST(FaultyBackendTest, DisabledInjectsNothingButStillCounts) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultPlan plan;
  plan.fail_before = 1;
  FaultyBackend faulty(store.get(), plan);
  EXPECT_FALSE(faulty.NextDue().ok());
  faulty.set_enabled(false);
  EXPECT_OK(faulty.NextDue());
  EXPECT_EQ(faulty.Calls(StoreCall::kNextDue), 2);
  EXPECT_EQ(faulty.Failures(), 1);
  EXPECT_NE(faulty.Report().find("NextDue[0] fail-before"), std::string::npos)
      << faulty.Report();
}

TEST(FaultyBackendTest, OnlyThePlansCallsGetFaults) {
  std::unique_ptr<Backend> store = NewMemoryBackend();
  FaultPlan plan;
  plan.fail_before = 1;
  plan.calls = {StoreCall::kAck};
  FaultyBackend faulty(store.get(), plan);
  EXPECT_OK(faulty.NextDue());
  EXPECT_THAT(faulty.Ack("a", 1, /*result=*/"", kNow),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
