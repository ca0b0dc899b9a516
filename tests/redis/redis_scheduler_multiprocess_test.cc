// Copyright delayq authors.
//
// Several processes, each a Scheduler with handler threads, share one Redis
// namespace. They and the test enqueue 20,000 jobs, a third ready at once and
// the rest delayed by up to 2 s; every job must be handled exactly once and
// the store must end empty. One more process enqueues delayed jobs and exits
// before they are due: the others must promote and handle them.

#include <sys/wait.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/open.h"
#include "delayq/redis_backend.h"
#include "delayq/scheduler.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/redis/worker_process.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using testing::WorkerFile;
using testing::WorkerProcess;
using testing::WorkerRecord;

constexpr int kWorkers = 3;
constexpr int kGroupsPerWorker = 600;  // 6,000 jobs each
constexpr int kTestGroups = 180;       // 1,800 jobs
constexpr int kGoneGroups = 20;        // 200 jobs
constexpr int kTotal =
    (kWorkers * kGroupsPerWorker + kTestGroups + kGoneGroups) * 10;
static_assert(kTotal == 20000, "the test promises 20,000 jobs");

TEST(RedisSchedulerMultiProcessTest, EveryJobHandledExactlyOnce) {
  RedisOptions options = testing::FreshRedisOptions();
  const std::string url = absl::StrCat("redis://127.0.0.1:", options.port,
                                       "?namespace=", options.ns);

  // The process that enqueues and leaves: its jobs are due 1.5 s later,
  // long after it exited (it starts before the workers exist).
  WorkerProcess gone(url, WorkerFile("gone"),
                     {"enqueue=gone:20:alpha,beta", "delay_ms=1500"});
  ASSERT_GT(gone.pid(), 0);
  const int gone_status = gone.Wait();
  ASSERT_TRUE(WIFEXITED(gone_status) && WEXITSTATUS(gone_status) == 0)
      << "status " << gone_status;

  std::vector<std::unique_ptr<WorkerProcess>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(std::make_unique<WorkerProcess>(
        url, WorkerFile(absl::StrCat("worker", w)),
        std::vector<std::string>{
            "handle=alpha,beta", "threads=3",
            absl::StrCat("batch=", w == 1 ? 4 : 1),
            absl::StrCat("enqueue=w", w, ":", kGroupsPerWorker,
                         ":alpha,beta")}));
    ASSERT_GT(workers.back()->pid(), 0);
  }

  // The test enqueues too, through a scheduler of its own that runs no
  // threads (nobody calls Tick() on it: the workers must find these jobs).
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(url));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(std::move(backend)));
  for (int g = 0; g < kTestGroups; ++g) {
    JobOptions job_options;
    job_options.id = absl::StrCat("t-", g);
    job_options.delay =
        g % 3 == 0 ? absl::ZeroDuration() : absl::Milliseconds((g * 37) % 2000);
    std::vector<std::string> payloads(10, "work");
    ASSERT_OK(
        scheduler
            ->EnqueueBatch(g % 2 == 0 ? "alpha" : "beta", payloads, job_options)
            .status());
  }

  std::set<std::string> expected;
  for (int w = 0; w < kWorkers; ++w) {
    for (std::string& id :
         testing::GroupIds(absl::StrCat("w", w), kGroupsPerWorker)) {
      expected.insert(std::move(id));
    }
  }
  for (std::string& id : testing::GroupIds("t", kTestGroups)) {
    expected.insert(std::move(id));
  }
  const std::vector<std::string> gone_ids =
      testing::GroupIds("gone", kGoneGroups);
  expected.insert(gone_ids.begin(), gone_ids.end());
  ASSERT_EQ(expected.size(), static_cast<size_t>(kTotal));

  // Wait until every job was handled somewhere (bounded: a lost job fails
  // the test instead of hanging it).
  const absl::Time give_up = absl::Now() + absl::Seconds(90);
  for (;;) {
    std::set<std::string> seen;
    for (const auto& w : workers) {
      for (const WorkerRecord& r : w->Records()) seen.insert(r.id);
    }
    if (seen.size() >= expected.size() || absl::Now() > give_up) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  for (const auto& w : workers) {
    const int status = w->Finish();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker status " << status;
  }

  std::map<std::string, int> handled;
  for (int w = 0; w < kWorkers; ++w) {
    int n = 0;
    for (const WorkerRecord& r : workers[w]->Records()) {
      EXPECT_EQ(r.event, "done");
      EXPECT_EQ(r.attempts, 1) << r.id << " was delivered more than once";
      handled[r.id]++;
      ++n;
    }
    // How the work spread depends on scheduling; recorded, not asserted.
    ::testing::Test::RecordProperty(absl::StrCat("worker_", w, "_jobs"), n);
  }
  int lost = 0;
  for (const std::string& id : expected) {
    if (handled.count(id) == 0) ++lost;
  }
  EXPECT_EQ(lost, 0) << "jobs never handled";
  int duplicated = 0;
  int unexpected = 0;
  for (const auto& [id, n] : handled) {
    if (n > 1) ++duplicated;
    if (expected.count(id) == 0) ++unexpected;
  }
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(unexpected, 0);
  int gone_handled = 0;
  for (const std::string& id : gone_ids) gone_handled += handled.count(id);
  EXPECT_EQ(gone_handled, kGoneGroups * 10)
      << "jobs of the process that exited were not all handled";

  for (const char* topic : {"alpha", "beta"}) {
    ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats(topic));
    EXPECT_EQ(stats, TopicStats{}) << topic;
  }
}

}  // namespace
}  // namespace delayq
