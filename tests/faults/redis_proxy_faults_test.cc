// Copyright delayq authors.
//
// The Redis store behind FaultProxy, a TCP proxy between the client and a
// real redis-server that drops connections, delays bytes, cuts replies
// midway and black-holes connections.
//   * Each fault alone, on direct store calls: every call returns OK or
//     Unavailable / DeadlineExceeded within the connect and command
//     timeouts (plus slack), never hangs, and calls succeed again once the
//     fault clears.
//   * A scheduler with worker threads and its lease keeper, on the
//     simulated clock, through a seeded sequence of faults: nothing is
//     lost (every job whose Enqueue returned OK is handled, and the store
//     ends empty, so a job added by an Enqueue whose reply was cut was
//     handled too), no job runs twice at once under a live lease, Stop()
//     returns promptly even while the network is black-holed, and work
//     resumes once the faults clear.
// The network's timeouts are real time; the scheduler's clock is
// simulated and moved by the test in steps.

#include <atomic>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/faults/fault_harness.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/fault_proxy.h"
#include "tests/testing/faulty_backend.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace testing {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kConnectTimeout = absl::Milliseconds(300);
const absl::Duration kCommandTimeout = absl::Milliseconds(500);
// The longest a call may take: a connect, a command, and scheduling slack
// on a shared machine. What this catches is a call that hangs (waits with
// no limit), so the slack is generous: a loaded machine took 4.3 s where
// the timeouts add up to 0.8 s.
const absl::Duration kBound =
    kConnectTimeout + kCommandTimeout + absl::Seconds(10);
const absl::Duration kTtr = absl::Seconds(10);

RedisOptions OptionsFor(int port, const std::string& ns) {
  RedisOptions o;
  o.port = port;
  o.ns = ns;
  o.connect_timeout = kConnectTimeout;
  o.command_timeout = kCommandTimeout;
  o.pool_size = 4;
  o.max_clock_skew = absl::InfiniteDuration();  // simulated times
  return o;
}

NewJob MakeJob(std::string id) {
  NewJob job = PlainJob(std::move(id), "t", kStart);
  job.max_attempts = 1000;
  return job;
}

class RedisProxyFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(proxy_, FaultProxy::Start(SharedRedisServer().port()));
    static int counter = 0;
    ns_ = absl::StrCat("proxy", counter++);
    // The truth, read around the proxy, with the default timeouts: only
    // the proxied calls are to fail fast (a loaded machine, or a sanitizer,
    // once took more than 500 ms to answer a direct call).
    RedisOptions direct = OptionsFor(SharedRedisServer().port(), ns_);
    direct.connect_timeout = RedisOptions().connect_timeout;
    direct.command_timeout = RedisOptions().command_timeout;
    ASSERT_OK_AND_ASSIGN(direct_, OpenRedisBackend(direct));
  }

  std::unique_ptr<Backend> Proxied() {
    absl::StatusOr<std::unique_ptr<Backend>> b =
        OpenRedisBackend(OptionsFor(proxy_->port(), ns_));
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *std::move(b) : nullptr;
  }

  std::unique_ptr<FaultProxy> proxy_;
  std::string ns_;
  std::unique_ptr<Backend> direct_;
};

// A store call, timed: OK or a network failure, within the bound.
absl::Status Timed(const std::string& what,
                   const std::function<absl::Status()>& call) {
  const absl::Time start = absl::Now();
  const absl::Status s = call();
  const absl::Duration took = absl::Now() - start;
  EXPECT_LE(took, kBound) << what << " took " << took << ": " << s;
  EXPECT_TRUE(s.ok() || IsInjectable(s)) << what << ": " << s;
  return s;
}

// Calls a store makes all the time, each timed; returns how many failed.
int SomeCalls(Backend& b, const std::string& prefix, int n) {
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    const std::string id = absl::StrCat(prefix, "-", i);
    failed +=
        !Timed("Add " + id, [&] { return b.Add({MakeJob(id)}, kStart); }).ok();
    failed += !Timed("Reserve", [&] {
                 return b.Reserve("t", 1, kStart).status();
               }).ok();
    failed += !Timed("NextDue", [&] { return b.NextDue().status(); }).ok();
  }
  return failed;
}

// Calls until one succeeds; how many it took (0: none did).
int Recovers(Backend& b) {
  for (int i = 1; i <= 5; ++i) {
    if (Timed("Stats", [&] { return b.Stats("t").status(); }).ok()) return i;
  }
  return 0;
}

TEST_F(RedisProxyFaultsTest, EachFaultFailsInTimeAndClears) {
  struct Fault {
    const char* name;
    std::function<void(FaultProxy&)> apply;
  };
  const std::vector<Fault> faults = {
      {"drop", [](FaultProxy& p) { p.DropAll(); }},
      {"drop and refuse",
       [](FaultProxy& p) {
         p.SetRefuse(true);
         p.DropAll();
       }},
      {"delay past the command timeout",
       [](FaultProxy& p) {
         p.SetDelay(kCommandTimeout + absl::Milliseconds(200));
       }},
      {"cut a reply after 3 bytes", [](FaultProxy& p) { p.CutNextReply(3); }},
      {"black hole",
       [](FaultProxy& p) {
         p.SetBlackHole(true);
         p.DropAll();  // so that new connections meet it too
       }},
  };
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.name);
    std::unique_ptr<Backend> b = Proxied();
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(SomeCalls(*b, absl::StrCat(fault.name, "-warm"), 1), 0);
    fault.apply(*proxy_);
    const int failed = SomeCalls(*b, fault.name, 2);
    EXPECT_GT(failed, 0) << "the fault changed nothing";
    proxy_->Clear();
    EXPECT_GT(Recovers(*b), 0) << "no call succeeded after the fault cleared";
  }
  EXPECT_GT(proxy_->cuts(), 0);
}

// A slow network within the command timeout is only slow.
TEST_F(RedisProxyFaultsTest, DelayWithinTheTimeoutOnlySlows) {
  std::unique_ptr<Backend> b = Proxied();
  ASSERT_NE(b, nullptr);
  proxy_->SetDelay(kCommandTimeout / 10);
  EXPECT_EQ(SomeCalls(*b, "slow", 3), 0);
}

// The scheduler through a seeded sequence of faults.
class RedisProxySchedulerTest : public RedisProxyFaultsTest,
                                public ::testing::WithParamInterface<uint64_t> {
};

TEST_P(RedisProxySchedulerTest, NothingLostThroughNetworkFaults) {
  const uint64_t seed = GetParam();
  SCOPED_TRACE(
      absl::StrCat("seed ", seed, " (replay: DELAYQ_FAULT_SEEDS=", seed, ")"));
  std::mt19937_64 rng(seed);
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> redis = Proxied();
  ASSERT_NE(redis, nullptr);
  // No faults of its own: it keeps the ledger of leases for the checks.
  FaultyBackend ledger(redis.get(), FaultPlan{}, &clock);
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(ledger.Borrow(), options));
  RunLog runs;
  absl::Mutex mu;
  std::set<std::string> succeeded;
  constexpr int kWorkers = 2;
  HandlerOptions handler_options;
  handler_options.concurrency = kWorkers;
  scheduler->HandleLeases(
      "t",
      [&](const Lease& lease) {
        const size_t run = runs.Begin(lease, clock.Now());
        int i = 0;
        (void)absl::SimpleAtoi(absl::string_view(lease.job.id).substr(1), &i);
        clock.SleepUntil(clock.Now() +
                         (i % 4 == 0 ? kTtr * 2.5 : absl::Seconds(i % 3)));
        runs.End(run, clock.Now());
        absl::MutexLock lock(&mu);
        succeeded.insert(lease.job.id);
        return absl::OkStatus();
      },
      handler_options);
  ASSERT_OK(scheduler->Start());
  const int threads = kWorkers + 2;  // and the timer and the keeper

  std::set<std::string> enqueued;
  int next = 0, enqueue_errors = 0;
  auto enqueue = [&](int n) {
    for (int i = 0; i < n; ++i) {
      JobOptions o;
      o.id = absl::StrCat("j", next++);
      o.ttr = kTtr;
      o.max_attempts = 1000;
      o.delay = absl::Seconds(static_cast<int64_t>(rng() % 5));
      const absl::Time start = absl::Now();
      const absl::StatusOr<std::string> id = scheduler->Enqueue("t", "p", o);
      EXPECT_LE(absl::Now() - start, kBound) << "Enqueue hung";
      if (id.ok()) {
        enqueued.insert(*id);
      } else {
        EXPECT_TRUE(IsInjectable(id.status())) << id.status();
        ++enqueue_errors;
      }
    }
  };
  // Moves the simulated clock for `real` of real time.
  auto run_for = [&](absl::Duration real) {
    const absl::Time until = absl::Now() + real;
    while (absl::Now() < until) {
      AwaitWaiters(clock, threads, absl::Milliseconds(50));
      clock.Advance(absl::Milliseconds(250));
    }
  };

  enqueue(10);
  run_for(absl::Milliseconds(300));
  std::vector<std::string> applied;
  for (int phase = 0; phase < 6; ++phase) {
    switch (rng() % 5) {
      case 0:
        applied.push_back("drop");
        proxy_->DropAll();
        break;
      case 1:
        applied.push_back("refuse");
        proxy_->SetRefuse(true);
        proxy_->DropAll();
        break;
      case 2: {
        const absl::Duration d =
            absl::Milliseconds(static_cast<int64_t>(50 + rng() % 700));
        applied.push_back(absl::StrCat("delay ", absl::FormatDuration(d)));
        proxy_->SetDelay(d);
        break;
      }
      case 3: {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 60);
        applied.push_back(absl::StrCat("cut after ", n));
        proxy_->CutNextReply(n);
        break;
      }
      case 4:
        applied.push_back("black hole");
        proxy_->SetBlackHole(true);
        proxy_->DropAll();
        break;
    }
    enqueue(4);
    run_for(absl::Milliseconds(800));
    proxy_->Clear();
    run_for(absl::Milliseconds(300));
  }
  SCOPED_TRACE(absl::StrCat("faults: ", absl::StrJoin(applied, ", ")));

  // Stop() while the network is black-holed must not hang.
  proxy_->SetBlackHole(true);
  proxy_->DropAll();
  const absl::Duration stop_took = StopWhileAdvancing(
      *scheduler, clock, absl::ZeroDuration(), absl::Milliseconds(250));
  // A handler still running is waited for (its simulated work), and each
  // thread may be in one store call.
  EXPECT_LE(stop_took, 3 * kBound) << "Stop() took " << stop_took;
  EXPECT_EQ(runs.Running(), 0);
  const absl::Time stop_time = clock.Now();

  // The faults clear; the workers start again and finish everything.
  proxy_->Clear();
  ASSERT_OK(scheduler->Start());
  enqueue(3);
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  for (;;) {
    std::set<std::string> done;
    {
      absl::MutexLock lock(&mu);
      done = succeeded;
    }
    bool all = JobsIn(*direct_, {"t"}) == 0;
    for (const std::string& id : enqueued) all &= done.count(id) > 0;
    if (all || absl::Now() > give_up) break;
    run_for(absl::Milliseconds(100));
  }
  StopWhileAdvancing(*scheduler, clock, absl::ZeroDuration(),
                     absl::Milliseconds(250));

  EXPECT_EQ(JobsIn(*direct_, {"t"}), 0);
  {
    absl::MutexLock lock(&mu);
    for (const std::string& id : enqueued) {
      EXPECT_EQ(succeeded.count(id), 1u) << id << " never handled";
    }
  }
  const std::vector<std::string> overlaps =
      LiveLeaseOverlaps(runs.Runs(), ledger.Leases());
  EXPECT_TRUE(overlaps.empty()) << absl::StrJoin(overlaps, "\n");
  printf(
      "seed %llu: faults %s; %zu jobs enqueued, %d enqueue errors, %zu "
      "runs, %lld connections, %lld cut, Stop() in %s (from sim %s)\n",
      static_cast<unsigned long long>(seed),
      absl::StrJoin(applied, ", ").c_str(), enqueued.size(), enqueue_errors,
      runs.Runs().size(), static_cast<long long>(proxy_->accepted()),
      static_cast<long long>(proxy_->cuts()),
      absl::FormatDuration(stop_took).c_str(),
      absl::FormatTime(stop_time).c_str());
}

std::vector<uint64_t> ProxySeeds() {
  // Each seed runs about six seconds of real time: two by default.
  std::vector<uint64_t> seeds = FaultSeeds();
  if (seeds.size() > 2 && std::getenv("DELAYQ_FAULT_SEEDS") == nullptr) {
    seeds.resize(2);
  }
  return seeds;
}

INSTANTIATE_TEST_SUITE_P(Faults, RedisProxySchedulerTest,
                         ::testing::ValuesIn(ProxySeeds()),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                           return absl::StrCat("seed", info.param);
                         });

}  // namespace
}  // namespace testing
}  // namespace delayq
