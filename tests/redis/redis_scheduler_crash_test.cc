// Copyright delayq authors.
//
// A worker process is SIGKILLed while its handlers are in the middle of jobs.
// The jobs it held come back when their ttr (1 s) runs out and are handled by
// the surviving processes; nothing is lost, and a job is handled twice only
// when the killed process had finished it but died before acknowledging.

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

constexpr int kStuckJobs = 2;
constexpr int kGroups = 60;  // 600 ordinary jobs

// Polls `done` (bounded by `limit`) until it returns true.
template <typename F>
bool WaitUntil(F done, absl::Duration limit) {
  const absl::Time give_up = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

TEST(RedisSchedulerCrashTest, JobsOfAKilledWorkerReturnAfterTheirTtr) {
  RedisOptions options = testing::FreshRedisOptions();
  const std::string url = absl::StrCat("redis://127.0.0.1:", options.port,
                                       "?namespace=", options.ns);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(url));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(std::move(backend)));
  JobOptions short_ttr;
  short_ttr.ttr = absl::Seconds(1);

  // The victim starts alone, so it is the one that takes the jobs that
  // block its handlers. It keeps their leases alive while it lives.
  WorkerProcess victim(url, WorkerFile("victim"),
                       {"handle=jobs", "threads=4", "hang=1"});
  ASSERT_GT(victim.pid(), 0);
  const std::string victim_pid = absl::StrCat(victim.pid());
  JobOptions stuck = short_ttr;
  stuck.id = "stuck";
  ASSERT_OK(scheduler
                ->EnqueueBatch(
                    "jobs", std::vector<std::string>(kStuckJobs, "hang"), stuck)
                .status());
  auto begun = [&] {
    int n = 0;
    for (const WorkerRecord& r : victim.Records()) n += r.event == "begin";
    return n;
  };
  ASSERT_TRUE(
      WaitUntil([&] { return begun() == kStuckJobs; }, absl::Seconds(20)))
      << "the victim did not take the blocking jobs";

  // The victim alone works through the first half of the ordinary jobs,
  // then two survivors join for the second half, and the victim is killed
  // while its blocked handlers hold their leases and its other workers are
  // likely mid-job.
  auto enqueue_groups = [&](int from, int to) {
    for (int g = from; g < to; ++g) {
      JobOptions job_options = short_ttr;
      job_options.id = absl::StrCat("n-", g);
      ASSERT_OK(scheduler
                    ->EnqueueBatch("jobs", std::vector<std::string>(10, "work"),
                                   job_options)
                    .status());
    }
  };
  enqueue_groups(0, kGroups / 2);
  auto victim_done = [&] {
    int n = 0;
    for (const WorkerRecord& r : victim.Records()) n += r.event == "done";
    return n;
  };
  ASSERT_TRUE(WaitUntil([&] { return victim_done() >= kGroups * 10 / 2; },
                        absl::Seconds(20)));
  std::vector<std::unique_ptr<WorkerProcess>> survivors;
  for (int s = 0; s < 2; ++s) {
    survivors.push_back(std::make_unique<WorkerProcess>(
        url, WorkerFile(absl::StrCat("survivor", s)),
        std::vector<std::string>{"handle=jobs", "threads=2"}));
    ASSERT_GT(survivors.back()->pid(), 0);
  }
  enqueue_groups(kGroups / 2, kGroups);
  ASSERT_OK_AND_ASSIGN(Job held, scheduler->Get("stuck-0"));
  EXPECT_EQ(held.state, JobState::kReserved);
  victim.Kill();
  const absl::Time killed_at = absl::Now();

  std::set<std::string> expected = {};
  for (int i = 0; i < kStuckJobs; ++i)
    expected.insert(absl::StrCat("stuck-", i));
  for (std::string& id : testing::GroupIds("n", kGroups)) {
    expected.insert(std::move(id));
  }
  auto all_done = [&] {
    std::set<std::string> seen;
    for (const auto& s : survivors) {
      for (const WorkerRecord& r : s->Records()) seen.insert(r.id);
    }
    for (const WorkerRecord& r : victim.Records()) {
      if (r.event == "done") seen.insert(r.id);
    }
    return seen.size() >= expected.size();
  };
  EXPECT_TRUE(WaitUntil(all_done, absl::Seconds(20))) << "jobs lost";
  ::testing::Test::RecordProperty(
      "seconds_from_kill_to_all_done",
      absl::StrCat(absl::ToDoubleSeconds(absl::Now() - killed_at)));
  for (const auto& s : survivors) {
    const int status = s->Finish();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "survivor status " << status;
  }

  // Every record, by id.
  std::map<std::string, std::vector<WorkerRecord>> by_id;
  for (const WorkerRecord& r : victim.Records()) by_id[r.id].push_back(r);
  for (const auto& s : survivors) {
    for (const WorkerRecord& r : s->Records()) by_id[r.id].push_back(r);
  }
  for (const std::string& id : expected) {
    int done = 0;
    for (const WorkerRecord& r : by_id[id]) done += r.event == "done";
    EXPECT_GE(done, 1) << id << " was never handled";
  }
  // The blocked jobs were begun by the victim and finished by a survivor on
  // their second attempt (the expired lease counted as the first).
  for (int i = 0; i < kStuckJobs; ++i) {
    const std::vector<WorkerRecord>& rs = by_id[absl::StrCat("stuck-", i)];
    ASSERT_EQ(rs.size(), 2u) << "stuck-" << i;
    EXPECT_EQ(rs[0].event, "begin");
    EXPECT_EQ(rs[0].pid, victim_pid);
    EXPECT_EQ(rs[1].event, "done");
    EXPECT_NE(rs[1].pid, victim_pid);
    EXPECT_EQ(rs[1].attempts, 2);
  }
  // A second delivery of an ordinary job happens only when the victim
  // handled it and died before its ack reached the store.
  for (const auto& [id, rs] : by_id) {
    if (rs.size() < 2 || id.rfind("stuck-", 0) == 0) continue;
    EXPECT_EQ(rs.size(), 2u) << id;
    EXPECT_EQ(rs[0].pid, victim_pid) << id << " delivered twice";
    EXPECT_EQ(rs[1].attempts, 2) << id;
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("jobs"));
  EXPECT_EQ(stats, TopicStats{});
}

}  // namespace
}  // namespace delayq
