// Copyright delayq authors.
//
// A scheduler restarted on an existing SQLite file picks up where the last
// one left off: delayed jobs and expired leases written by an earlier
// process are promoted on time, from the store's own due times.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

std::unique_ptr<Scheduler> OpenOn(const std::string& path,
                                  SimulatedClock* clock) {
  SqliteOptions sqlite;
  sqlite.path = path;
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenSqliteBackend(sqlite);
  EXPECT_TRUE(backend.ok()) << backend.status();
  SchedulerOptions options;
  options.clock = clock;
  options.poll_interval = absl::Hours(1);  // only the restart may tell it
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::Create(*std::move(backend), options);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  return scheduler.ok() ? *std::move(scheduler) : nullptr;
}

// Collects the ids handlers saw.
struct Seen {
  absl::Mutex mu;
  std::vector<std::string> ids;
  bool WaitFor(size_t n) {
    absl::MutexLock lock(&mu);
    struct Args {
      Seen* self;
      size_t n;
    } args{this, n};
    return mu.AwaitWithTimeout(absl::Condition(
                                   +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                     return a->self->ids.size() >= a->n;
                                   },
                                   &args),
                               absl::Seconds(20));
  }
};

TEST(SqliteSchedulerTest, RestartedSchedulerPromotesWhatAnEarlierOneLeft) {
  const std::string path = testing::FreshDbPath("restart");
  SimulatedClock clock(kStart);
  {
    std::unique_ptr<Scheduler> first = OpenOn(path, &clock);
    ASSERT_NE(first, nullptr);
    JobOptions later;
    later.id = "respawn-boss";
    later.delay = absl::Seconds(90);
    ASSERT_OK(first->Enqueue("boss", "dragon", later));
    JobOptions leased;
    leased.id = "half-done";
    leased.ttr = absl::Seconds(30);
    ASSERT_OK(first->Enqueue("work", "x", leased));
    ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, first->Reserve("work"));
    ASSERT_TRUE(lease.has_value());
    // The process dies here, holding the lease.
  }

  std::unique_ptr<Scheduler> second = OpenOn(path, &clock);
  ASSERT_NE(second, nullptr);
  Seen seen;
  auto record = [&seen](const Job& job) {
    absl::MutexLock lock(&seen.mu);
    seen.ids.push_back(job.id + "@" + std::to_string(job.attempts));
    return absl::OkStatus();
  };
  second->Handle("boss", record);
  second->Handle("work", record);
  ASSERT_OK(second->Start());

  // Neither is due yet; nothing runs.
  clock.Advance(absl::Seconds(29));
  ASSERT_OK_AND_ASSIGN(TopicStats work, second->Stats("work"));
  EXPECT_EQ(work.reserved, 1);
  // The lease ends at +30 s: the job is delivered again, as attempt 2.
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(seen.WaitFor(1));
  // The handler has run; its ack follows. Moving the clock past the new
  // lease's end before the ack lands would rightly deliver it a third time.
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  do {
    ASSERT_OK_AND_ASSIGN(work, second->Stats("work"));
  } while (work.total() != 0 && absl::Now() < give_up);
  ASSERT_EQ(work.total(), 0);
  // The boss respawns at +90 s.
  clock.Advance(absl::Seconds(60));
  ASSERT_TRUE(seen.WaitFor(2));
  second->Stop();
  absl::MutexLock lock(&seen.mu);
  EXPECT_EQ(seen.ids,
            (std::vector<std::string>{"half-done@2", "respawn-boss@1"}));
  ASSERT_OK_AND_ASSIGN(TopicStats boss, second->Stats("boss"));
  EXPECT_EQ(boss.total(), 0);
}

}  // namespace
}  // namespace delayq
