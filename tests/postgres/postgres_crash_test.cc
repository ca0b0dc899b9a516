// Copyright delayq authors.
//
// Crashes and restarts on PostgreSQL, on a real server the test starts: a
// worker process killed with SIGKILL at random moments while it enqueues,
// reserves and acks (tests/testing/crash_rounds.h), processes killed
// around a batch's last acks and its close (tests/testing/batch_rounds.h),
// and the server restarted while producers enqueue: cleanly, and at once
// (an immediate stop, as a power cut) on a server that keeps PostgreSQL's
// default durability.

#include <atomic>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/batch_rounds.h"
#include "tests/testing/crash_rounds.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::CrashRounds;
using ::delayq::testing::PostgresServer;
using ::delayq::testing::RunCrashRounds;

std::unique_ptr<Backend> Open(const std::string& url) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
  EXPECT_OK(backend.status());
  return backend.ok() ? *std::move(backend) : nullptr;
}

TEST(PostgresCrashTest, KilledProcessLosesNothingAndAckedJobsStayGone) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  CrashRounds test;
  test.url = server->Url("crash");
  test.open = [url = test.url] { return Open(url); };
  // A round trip a call: longer runs than on a file, so that each round
  // sees as many calls.
  test.kill_within = absl::Milliseconds(250);
  RunCrashRounds(test);
}

TEST(PostgresCrashTest, KillsAroundABatchsLastAcksReleaseItsCompletionOnce) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  testing::BatchRounds test;
  test.url = server->Url("batchcrash");
  test.open = [url = test.url] { return Open(url); };
  test.kill = true;
  testing::RunBatchRounds(test);
}

// Producers that enqueue in a loop, each job an id of its own; they keep
// the ids whose Add() returned OK.
class Producers {
 public:
  Producers(Backend* store, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, store, t] { Produce(store, t); });
    }
  }
  ~Producers() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t ok() const { return ok_count_.load(); }
  int64_t failed() const { return failed_.load(); }
  std::set<std::string> committed() {
    absl::MutexLock lock(&mu_);
    return committed_;
  }

 private:
  void Produce(Backend* store, int thread) {
    for (int i = 0; !stop_; ++i) {
      NewJob job;
      job.id = absl::StrCat("load-", thread, "-", i);
      job.topic = "load";
      const absl::Time now = absl::Now();
      job.run_at = now;
      if (store->Add({job}, now).ok()) {
        absl::MutexLock lock(&mu_);
        committed_.insert(job.id);
        ++ok_count_;
      } else {
        // Unavailable while the server is down; whether a job whose
        // commit was cut off is stored is not known, so it is not
        // checked.
        ++failed_;
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_count_{0};
  std::atomic<int64_t> failed_{0};
  absl::Mutex mu_;
  std::set<std::string> committed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

// Consumers that reserve and ack in a loop; they keep the ids they sent an
// Ack() for, and those whose Ack() returned OK.
class Consumers {
 public:
  Consumers(Backend* store, int threads) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, store] { Consume(store); });
    }
  }
  ~Consumers() { Stop(); }

  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::set<std::string> acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  std::set<std::string> tried() {
    absl::MutexLock lock(&mu_);
    return tried_;
  }

 private:
  void Consume(Backend* store) {
    while (!stop_) {
      absl::StatusOr<std::vector<Lease>> leases =
          store->Reserve("load", 1, absl::Now());
      if (!leases.ok() || leases->empty()) {
        absl::SleepFor(absl::Milliseconds(5));
        continue;
      }
      const Lease& lease = leases->front();
      // An ack whose reply was lost may have committed.
      const bool ok =
          store->Ack(lease.job.id, lease.token, "", absl::Now()).ok();
      absl::MutexLock lock(&mu_);
      tried_.insert(lease.job.id);
      if (ok) acked_.insert(lease.job.id);
    }
  }

  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::set<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> tried_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

// Waits until the producers have `n` more OKs than `since`; false when
// `patience` passes first.
bool WaitForOks(const Producers& producers, int64_t since, int64_t n,
                absl::Duration patience) {
  const absl::Time give_up = absl::Now() + patience;
  while (producers.ok() < since + n) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

TEST(PostgresRestartTest, ARestartUnderLoadLosesNoCommittedJob) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  std::unique_ptr<Backend> store = Open(server->Url("restart_load"));
  ASSERT_NE(store, nullptr);
  Producers producers(store.get(), 4);
  ASSERT_TRUE(WaitForOks(producers, 0, 200, absl::Seconds(20)));
  for (int restart = 0; restart < 3; ++restart) {
    ASSERT_OK(server->Restart());
    // The store reconnects by itself: enqueues succeed again.
    ASSERT_TRUE(WaitForOks(producers, producers.ok(), 200, absl::Seconds(20)))
        << "no enqueue succeeded after restart " << restart;
  }
  producers.Stop();
  const std::set<std::string> committed = producers.committed();
  ASSERT_OK_AND_ASSIGN(
      std::vector<Job> stored,
      store->List("load", JobState::kReady, static_cast<int>(1 << 20)));
  std::set<std::string> found;
  for (const Job& job : stored) found.insert(job.id);
  int lost = 0;
  for (const std::string& id : committed) {
    if (found.count(id) == 0 && ++lost <= 10) {
      ADD_FAILURE() << "committed job lost: " << id;
    }
  }
  EXPECT_EQ(lost, 0);
  std::printf("enqueued %zu (OK), %lld refused during the restarts\n",
              committed.size(), static_cast<long long>(producers.failed()));
}

// An immediate stop of a server that keeps PostgreSQL's default durability
// (the shared test server does not) loses nothing the store acknowledged:
// every job whose Add() returned OK is there after each restart unless an
// Ack() of it was sent, and none whose Ack() returned OK is there again
// (it would run twice). Producers and consumers run throughout.
TEST(PostgresRestartTest, AnImmediateStopLosesNoAcknowledgedCommit) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<PostgresServer> server,
      PostgresServer::Start(PostgresServer::Durability::kDurable));
  std::unique_ptr<Backend> store = Open(server->Url("immediate"));
  ASSERT_NE(store, nullptr);
  Producers producers(store.get(), 4);
  Consumers consumers(store.get(), 2);
  ASSERT_TRUE(WaitForOks(producers, 0, 200, absl::Seconds(30)));
  for (int crash = 0; crash < 3; ++crash) {
    ASSERT_OK(server->RestartAfterCrash());
    ASSERT_TRUE(WaitForOks(producers, producers.ok(), 200, absl::Seconds(30)))
        << "no enqueue succeeded after crash " << crash;
  }
  producers.Stop();
  consumers.Stop();
  const std::set<std::string> committed = producers.committed();
  const std::set<std::string> acked = consumers.acked();
  const std::set<std::string> tried = consumers.tried();
  std::set<std::string> stored;
  for (JobState state : {JobState::kReady, JobState::kReserved}) {
    ASSERT_OK_AND_ASSIGN(std::vector<Job> jobs,
                         store->List("load", state, 1 << 20));
    for (const Job& job : jobs) stored.insert(job.id);
  }
  int lost = 0, twice = 0;
  for (const std::string& id : committed) {
    if (tried.count(id) == 0 && stored.count(id) == 0 && ++lost <= 10) {
      ADD_FAILURE() << "acknowledged enqueue lost: " << id;
    }
  }
  for (const std::string& id : acked) {
    if (stored.count(id) > 0 && ++twice <= 10) {
      ADD_FAILURE() << "acknowledged ack lost (the job would run again): "
                    << id;
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(twice, 0);
  EXPECT_GT(acked.size(), 0u);
  std::printf("enqueued %zu, acked %zu (OK), %lld enqueues refused\n",
              committed.size(), acked.size(),
              static_cast<long long>(producers.failed()));
}

}  // namespace
}  // namespace delayq
