// Copyright delayq authors.
//
// Several producers and consumers on one scheduler and the real clock:
// every job is delivered, none is lost, and no job is held under two live
// leases at once.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

constexpr int kProducers = 4;
constexpr int kConsumers = 4;
constexpr int kJobsPerProducer = 3000;
constexpr int kTotal = kProducers * kJobsPerProducer;

struct Ledger {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> acked ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, bool> held ABSL_GUARDED_BY(mu);
  int overlaps ABSL_GUARDED_BY(mu) = 0;
};

void Produce(Scheduler& scheduler, int producer) {
  absl::BitGen gen;
  for (int i = 0; i < kJobsPerProducer; ++i) {
    JobOptions options;
    options.id = absl::StrCat("p", producer, "-", i);
    // A third of the jobs are delayed by up to 50 ms.
    if (absl::Uniform(gen, 0, 3) == 0) {
      options.delay = absl::Milliseconds(absl::Uniform(gen, 1, 50));
    }
    options.priority = absl::Uniform(gen, 0, 3);
    ASSERT_OK(scheduler.Enqueue("stress", "x", options));
  }
}

void Consume(Scheduler& scheduler, Ledger& ledger, std::atomic<int>& done) {
  absl::BitGen gen;
  while (done.load() < kTotal) {
    const int batch = absl::Uniform(gen, 1, 5);
    absl::StatusOr<std::vector<Lease>> leases =
        scheduler.ReserveBatch("stress", batch, absl::Milliseconds(20));
    ASSERT_TRUE(leases.ok()) << leases.status();
    for (const Lease& lease : *leases) {
      {
        absl::MutexLock lock(&ledger.mu);
        if (ledger.held[lease.job.id]) ++ledger.overlaps;
        ledger.held[lease.job.id] = true;
      }
      // Every tenth first attempt is handed back, to mix in releases.
      if (lease.job.attempts == 1 && absl::Uniform(gen, 0, 10) == 0) {
        {
          absl::MutexLock lock(&ledger.mu);
          ledger.held[lease.job.id] = false;
        }
        ASSERT_OK(scheduler.Release(lease, absl::Milliseconds(1)));
        continue;
      }
      {
        absl::MutexLock lock(&ledger.mu);
        ledger.held[lease.job.id] = false;
        ++ledger.acked[lease.job.id];
      }
      ASSERT_OK(scheduler.Ack(lease));
      ++done;
    }
  }
}

TEST(StressTest, ProducersAndConsumersLoseAndDuplicateNothing) {
  ASSERT_OK_AND_ASSIGN(auto scheduler, Scheduler::Create(NewMemoryBackend()));
  ASSERT_OK(scheduler->Start());  // the timer thread promotes delayed jobs
  Ledger ledger;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] { Consume(*scheduler, ledger, done); });
  }
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] { Produce(*scheduler, p); });
  }
  for (std::thread& t : threads) t.join();
  scheduler->Stop();

  absl::MutexLock lock(&ledger.mu);
  EXPECT_EQ(ledger.overlaps, 0);
  EXPECT_EQ(ledger.acked.size(), static_cast<size_t>(kTotal));
  for (const auto& [id, count] : ledger.acked) {
    EXPECT_EQ(count, 1) << id;
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("stress"));
  EXPECT_EQ(stats.total(), 0);
}

// Consumers that sometimes stall past the ttr: their jobs are delivered
// again, their late acks are refused, and every job is still acknowledged
// exactly once.
TEST(StressTest, StalledConsumersAreFencedOff) {
  constexpr int kJobs = 2000;
  ASSERT_OK_AND_ASSIGN(auto scheduler, Scheduler::Create(NewMemoryBackend()));
  ASSERT_OK(scheduler->Start());
  JobOptions options;
  options.ttr = absl::Milliseconds(30);
  options.max_attempts = 100;
  std::vector<std::string> payloads(kJobs, "x");
  ASSERT_OK(scheduler->EnqueueBatch("stall", payloads, options));

  absl::Mutex mu;
  absl::flat_hash_map<std::string, int> acked;
  std::atomic<int> refused{0};
  std::atomic<int> done{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      absl::BitGen gen;
      while (done.load() < kJobs) {
        absl::StatusOr<std::optional<Lease>> lease =
            scheduler->Reserve("stall", absl::Milliseconds(20));
        ASSERT_TRUE(lease.ok()) << lease.status();
        if (!lease->has_value()) continue;
        // One delivery in 25 stalls well past its 30 ms lease.
        if (absl::Uniform(gen, 0, 25) == 0) {
          absl::SleepFor(absl::Milliseconds(60));
        }
        absl::Status s = scheduler->Ack(**lease);
        if (absl::IsFailedPrecondition(s)) {
          ++refused;
          continue;
        }
        ASSERT_OK(s);
        absl::MutexLock lock(&mu);
        ++acked[(*lease)->job.id];
        ++done;
      }
    });
  }
  for (std::thread& t : consumers) t.join();
  scheduler->Stop();

  EXPECT_GT(refused.load(), 0) << "no consumer stalled past its lease";
  absl::MutexLock lock(&mu);
  EXPECT_EQ(acked.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, count] : acked) EXPECT_EQ(count, 1) << id;
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("stall"));
  EXPECT_EQ(stats.total(), 0);
}

}  // namespace
}  // namespace delayq
