// Copyright delayq authors.
//
// The memory backend against the conformance suite, plus a multi-threaded
// stress test of its locking.

#include "delayq/memory_backend.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;
using ::delayq::testing::BatchConformanceTest;
using ::delayq::testing::DependencyConformanceTest;
using ::delayq::testing::DependencyResultsTest;

const BackendFactory kMemory{"memory",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return NewMemoryBackend();
                             }};

INSTANTIATE_TEST_SUITE_P(Memory, BackendConformanceTest,
                         ::testing::Values(kMemory), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Memory, DependencyConformanceTest,
                         ::testing::Values(kMemory), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Memory, BatchConformanceTest,
                         ::testing::Values(kMemory), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Memory, DependencyResultsTest,
                         ::testing::Values(kMemory), BackendFactoryName);

// Producers add jobs while consumers reserve, ack, fail and release them on
// the same topics and a janitor promotes. Leases never expire here (long ttr,
// fixed times), so each job must be held by at most one lease at a time and
// acked exactly once, and nothing may be left or lost at the end.
TEST(MemoryBackendStressTest, ConcurrentProducersAndConsumersLoseNothing) {
  constexpr int kProducers = 3;
  constexpr int kConsumers = 4;
  constexpr int kJobsPerProducer = 1500;
  constexpr int kTotal = kProducers * kJobsPerProducer;
  const std::string topics[] = {"stress.a", "stress.b"};
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  // Producers add jobs due up to 50 ms after t0; consumers act at t0 + 100 ms,
  // so every job is due for them, delayed ones through Reserve's promotion.
  const absl::Time consume_at = t0 + absl::Milliseconds(100);
  std::unique_ptr<Backend> backend = NewMemoryBackend();

  std::mutex mu;
  absl::flat_hash_map<std::string, uint64_t> held;  // id -> live lease token
  absl::flat_hash_map<std::string, int> acked;
  std::atomic<int> done{0};
  std::atomic<int> producers_left{kProducers};
  std::atomic<int> violations{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kJobsPerProducer; i += 3) {
        std::vector<NewJob> batch;
        for (int k = i; k < std::min(i + 3, kJobsPerProducer); ++k) {
          NewJob job;
          job.id = absl::StrCat("p", p, "-", k);
          job.topic = topics[k % 2];
          job.payload = job.id;
          job.priority = k % 3;
          job.max_attempts = 1000;
          job.ttr = absl::Hours(1);
          job.run_at = t0 + absl::Milliseconds(k % 50);
          batch.push_back(job);
        }
        if (!backend->Add(batch, t0).ok()) violations++;
      }
      producers_left--;
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      int round = 0;
      while (done.load() < kTotal && violations.load() == 0) {
        const std::string& topic = topics[(c + round++) % 2];
        absl::StatusOr<std::vector<Lease>> leases =
            backend->Reserve(topic, 1 + c % 3, consume_at);
        if (!leases.ok()) {
          violations++;
          return;
        }
        if (leases->empty()) {
          std::this_thread::yield();
          continue;
        }
        for (const Lease& lease : *leases) {
          {
            std::lock_guard<std::mutex> lock(mu);
            if (!held.emplace(lease.job.id, lease.token).second) violations++;
          }
          const int choice = (round + lease.job.id.size()) % 5;
          {
            // The holder gives the lease up before it ends it, so the job is
            // never in `held` while a second lease on it could exist.
            std::lock_guard<std::mutex> lock(mu);
            held.erase(lease.job.id);
            if (choice == 0 || choice == 1) {
              // ends below with Fail or Release: the job comes back
            } else {
              acked[lease.job.id]++;
            }
          }
          absl::Status status;
          if (choice == 0) {
            status =
                backend
                    ->Fail(lease.job.id, lease.token, "again", t0, consume_at)
                    .status();
          } else if (choice == 1) {
            status =
                backend->Release(lease.job.id, lease.token, t0, consume_at);
          } else {
            status = backend->Ack(lease.job.id, lease.token, /*result=*/"",
                                  consume_at);
            done++;
          }
          if (!status.ok()) violations++;
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (done.load() < kTotal && violations.load() == 0) {
      if (!backend->PromoteDue(consume_at, 16).ok()) violations++;
      std::this_thread::yield();
    }
  });
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(done.load(), kTotal);
  EXPECT_EQ(acked.size(), static_cast<size_t>(kTotal));
  for (const auto& [id, count] : acked) EXPECT_EQ(count, 1) << id;
  for (const std::string& topic : topics) {
    absl::StatusOr<TopicStats> stats = backend->Stats(topic);
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->total(), 0) << topic;
  }
  absl::StatusOr<std::vector<std::string>> left = backend->Topics();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST(MemoryEventLogTest, KeepsTheNewestEventsWithinItsBound) {
  MemoryOptions options;
  options.events.max_events = 50;
  std::unique_ptr<Backend> backend = NewMemoryBackend(options);
  testing::CheckEventLogBound(*backend, 50, /*slack=*/0);
}

// Batches whose size does not divide the bound: the ring wraps inside a
// batch, and a read goes back across the wrap. Two jobs' events
// alternate, so each job's read also passes over the other's.
TEST(MemoryEventLogTest, KeepsTheNewestInOrderAcrossTheRingsWrap) {
  MemoryOptions options;
  options.events.max_events = 50;
  std::unique_ptr<Backend> backend = NewMemoryBackend(options);
  int written = 0;
  for (int round = 0; round < 23; ++round) {
    std::vector<LoggedEvent> batch;
    for (int i = 0; i < 7; ++i, ++written) {
      LoggedEvent e;
      e.id = written % 2 == 0 ? "even" : "odd";
      e.attempts = written;
      e.who = std::string(40, 'w');  // longer than a string keeps inline
      batch.push_back(e);
    }
    ASSERT_TRUE(backend->AppendEvents(batch).ok());
  }
  // 161 written; the newest 50 are 111..160: 25 of each job.
  for (const std::string id : {"even", "odd"}) {
    absl::StatusOr<std::vector<LoggedEvent>> kept = backend->JobEvents(id, 100);
    ASSERT_TRUE(kept.ok());
    ASSERT_EQ(kept->size(), 25u) << id;
    const int first = id == "even" ? 112 : 111;
    for (size_t i = 0; i < kept->size(); ++i) {
      EXPECT_EQ((*kept)[i].attempts, first + 2 * static_cast<int>(i)) << id;
      EXPECT_EQ((*kept)[i].who, std::string(40, 'w'));
    }
    absl::StatusOr<std::vector<LoggedEvent>> newest = backend->JobEvents(id, 3);
    ASSERT_TRUE(newest.ok());
    ASSERT_EQ(newest->size(), 3u);
    EXPECT_EQ(newest->back().attempts, id == "even" ? 160 : 159);
  }
}

TEST(MemoryEventLogTest, KeepsNothingWhenOff) {
  MemoryOptions options;
  options.events.max_events = 0;
  std::unique_ptr<Backend> backend = NewMemoryBackend(options);
  LoggedEvent e;
  e.id = "j";
  ASSERT_TRUE(backend->AppendEvents({e}).ok());
  absl::StatusOr<std::vector<LoggedEvent>> events = backend->JobEvents("j", 10);
  ASSERT_TRUE(events.ok());
  EXPECT_TRUE(events->empty());
}

}  // namespace
}  // namespace delayq
