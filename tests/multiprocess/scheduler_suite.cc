// Copyright delayq authors.
//
// Scheduler level: worker processes, each a Scheduler with handler threads,
// share one store. Every job is handled exactly once, including the jobs of
// a process that enqueued and left; the jobs a killed worker held come back
// after their ttr and are handled by the others.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kGroupsPerWorker = 600;  // 6,000 jobs each
constexpr int kTestGroups = 180;       // 1,800 jobs
constexpr int kGoneGroups = 20;        // 200 jobs
constexpr int kTotal =
    (kWorkers * kGroupsPerWorker + kTestGroups + kGoneGroups) * 10;
static_assert(kTotal == 20000, "the test promises 20,000 jobs");

// Workers that also look at the store every 200 ms, as a busy deployment's
// would: these cases are about delivery, not about news.
const std::vector<std::string> kPolling = {"poll=200ms", "news_poll=30s"};

// The ids of every "got" line of `workers`.
std::set<std::string> Handled(const std::vector<WorkerProcess*>& workers) {
  std::set<std::string> seen;
  for (const WorkerProcess* w : workers) {
    for (const Delivery& d : Deliveries(w->lines())) {
      if (d.event == "got") seen.insert(d.id);
    }
  }
  return seen;
}

// The test and three workers enqueue 20,000 jobs, a third ready at once and
// the rest delayed by up to 2 s. One more process enqueues delayed jobs and
// exits before they are due: the others must promote and handle them.
TEST_P(MultiProcessTest, EveryJobHandledExactlyOnce) {
  // The process that enqueues and leaves: its jobs are due 1.5 s later,
  // long after it exited (it runs before the workers exist).
  std::unique_ptr<WorkerProcess> gone = StartWorker(kPolling);
  ASSERT_NE(gone, nullptr);
  ASSERT_OK(gone->Run("enqueue gone 20 alpha,beta delay=1500ms"));
  ASSERT_TRUE(ExitedCleanly(gone->Finish()));

  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<WorkerProcess*> all;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(StartWorker(kPolling));
    ASSERT_NE(workers.back(), nullptr);
    all.push_back(workers.back().get());
    const std::string batch = absl::StrCat(" threads=3 batch=", w == 1 ? 4 : 1);
    ASSERT_OK(all.back()->Run("handle alpha" + batch));
    ASSERT_OK(all.back()->Run("handle beta" + batch));
    ASSERT_OK(all.back()->Run("start"));
    ASSERT_TRUE(all.back()->Send(
        absl::StrCat("enqueue w", w, " ", kGroupsPerWorker, " alpha,beta")));
  }

  // The test enqueues too, through a scheduler of its own that runs no
  // threads (nobody calls Tick() on it: the workers must find these jobs).
  std::unique_ptr<Scheduler> scheduler = OpenScheduler();
  ASSERT_NE(scheduler, nullptr);
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
    for (std::string& id : GroupIds(absl::StrCat("w", w), kGroupsPerWorker)) {
      expected.insert(std::move(id));
    }
  }
  for (std::string& id : GroupIds("t", kTestGroups)) {
    expected.insert(std::move(id));
  }
  const std::vector<std::string> gone_ids = GroupIds("gone", kGoneGroups);
  expected.insert(gone_ids.begin(), gone_ids.end());
  ASSERT_EQ(expected.size(), static_cast<size_t>(kTotal));

  // Until every job was handled somewhere (bounded: a lost job fails the
  // test instead of hanging it).
  CollectUntil(
      all, [&] { return Handled(all).size() >= expected.size(); },
      GetParam().drain_patience);
  std::map<std::string, int> handled;
  for (int w = 0; w < kWorkers; ++w) {
    const int status = all[w]->Finish();
    EXPECT_TRUE(ExitedCleanly(status)) << absl::StrJoin(Errors(*all[w]), "\n");
    EXPECT_EQ(Count(*all[w], "ok enqueue"), 1);
    int n = 0;
    for (const Delivery& d : Deliveries(all[w]->lines())) {
      EXPECT_EQ(d.event, "got");
      EXPECT_EQ(d.attempts, 1) << d.id << " was delivered more than once";
      handled[d.id]++;
      ++n;
    }
    // How the work spread depends on scheduling; recorded, not asserted.
    ::testing::Test::RecordProperty(absl::StrCat("worker_", w, "_jobs"), n);
  }
  int lost = 0;
  for (const std::string& id : expected) lost += handled.count(id) == 0;
  EXPECT_EQ(lost, 0) << "jobs never handled";
  int duplicated = 0;
  int unexpected = 0;
  for (const auto& [id, n] : handled) {
    duplicated += n > 1;
    unexpected += expected.count(id) == 0;
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

constexpr int kStuckJobs = 2;
constexpr int kGroups = 60;  // 600 ordinary jobs

// A worker process is SIGKILLed while its handlers are in the middle of
// jobs. Nothing is lost, and a job is handled twice only when the killed
// process had finished it but died before acknowledging.
TEST_P(MultiProcessTest, JobsOfAKilledWorkerReturnAfterTheirTtr) {
  std::unique_ptr<Scheduler> scheduler = OpenScheduler();
  ASSERT_NE(scheduler, nullptr);
  JobOptions short_ttr;
  short_ttr.ttr = absl::Seconds(1);

  // The victim starts alone, so it is the one that takes the jobs that
  // block its handlers. It keeps their leases alive while it lives.
  std::unique_ptr<WorkerProcess> victim = StartWorker(kPolling);
  ASSERT_NE(victim, nullptr);
  ASSERT_OK(victim->Run("handle jobs threads=4 hang=1"));
  ASSERT_OK(victim->Run("start"));
  JobOptions stuck = short_ttr;
  stuck.id = "stuck";
  ASSERT_OK(scheduler
                ->EnqueueBatch(
                    "jobs", std::vector<std::string>(kStuckJobs, "hang"), stuck)
                .status());
  auto count = [&](const std::string& event) {
    int n = 0;
    for (const Delivery& d : Deliveries(victim->lines())) n += d.event == event;
    return n;
  };
  ASSERT_TRUE(CollectUntil(
      {victim.get()}, [&] { return count("begin") == kStuckJobs; },
      absl::Seconds(20)))
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
  ASSERT_TRUE(CollectUntil(
      {victim.get()}, [&] { return count("got") >= kGroups * 10 / 2; },
      absl::Seconds(20)))
      << "the victim got " << count("got") << " of " << kGroups * 10 / 2
      << " jobs: " << absl::StrJoin(Errors(*victim), "\n");
  std::vector<std::unique_ptr<WorkerProcess>> survivors;
  std::vector<WorkerProcess*> all = {victim.get()};
  for (int s = 0; s < 2; ++s) {
    survivors.push_back(StartWorker(kPolling));
    ASSERT_NE(survivors.back(), nullptr);
    ASSERT_OK(survivors.back()->Run("handle jobs threads=2"));
    ASSERT_OK(survivors.back()->Run("start"));
    all.push_back(survivors.back().get());
  }
  enqueue_groups(kGroups / 2, kGroups);
  ASSERT_OK_AND_ASSIGN(Job held, scheduler->Get("stuck-0"));
  EXPECT_EQ(held.state, JobState::kReserved);
  victim->Kill();
  const absl::Time killed_at = absl::Now();

  std::set<std::string> expected;
  for (int i = 0; i < kStuckJobs; ++i) {
    expected.insert(absl::StrCat("stuck-", i));
  }
  for (std::string& id : GroupIds("n", kGroups)) expected.insert(std::move(id));
  // The victim's last words are still in its pipe; Handled() reads them.
  // Done when every job was handled and the store is empty: a job the
  // victim handled but could not ack comes back after its ttr and must be
  // handled again before the survivors stop.
  auto store_empty = [&] {
    absl::StatusOr<TopicStats> stats = scheduler->Stats("jobs");
    return stats.ok() && *stats == TopicStats{};
  };
  EXPECT_TRUE(CollectUntil(
      all,
      [&] { return Handled(all).size() >= expected.size() && store_empty(); },
      absl::Seconds(20)))
      << "jobs lost";
  ::testing::Test::RecordProperty(
      "seconds_from_kill_to_all_done",
      absl::StrCat(absl::ToDoubleSeconds(absl::Now() - killed_at)));
  for (const auto& s : survivors) {
    const int status = s->Finish();
    EXPECT_TRUE(ExitedCleanly(status)) << absl::StrJoin(Errors(*s), "\n");
  }

  // Every delivery, by id, the victim's first: it handled before the
  // survivors existed or died before they redelivered.
  std::map<std::string, std::vector<std::pair<Delivery, bool>>> by_id;
  for (const WorkerProcess* w : all) {
    for (const Delivery& d : Deliveries(w->lines())) {
      by_id[d.id].push_back({d, w == victim.get()});
    }
  }
  for (const std::string& id : expected) {
    int done = 0;
    for (const auto& [d, from_victim] : by_id[id]) done += d.event == "got";
    EXPECT_GE(done, 1) << id << " was never handled";
  }
  // The blocked jobs were begun by the victim and finished by a survivor on
  // their second attempt (the expired lease counted as the first).
  for (int i = 0; i < kStuckJobs; ++i) {
    const auto& rs = by_id[absl::StrCat("stuck-", i)];
    ASSERT_EQ(rs.size(), 2u) << "stuck-" << i;
    EXPECT_EQ(rs[0].first.event, "begin");
    EXPECT_TRUE(rs[0].second);
    EXPECT_EQ(rs[1].first.event, "got");
    EXPECT_FALSE(rs[1].second);
    EXPECT_EQ(rs[1].first.attempts, 2);
  }
  // A second delivery of an ordinary job happens only when the victim
  // handled it and died before its ack reached the store.
  for (const auto& [id, rs] : by_id) {
    if (rs.size() < 2 || id.rfind("stuck-", 0) == 0) continue;
    EXPECT_EQ(rs.size(), 2u) << id;
    EXPECT_TRUE(rs[0].second) << id << " delivered twice";
    EXPECT_EQ(rs[1].first.attempts, 2) << id;
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("jobs"));
  EXPECT_EQ(stats, TopicStats{});

  // The store counted each transition once, in the step that made it,
  // whichever process made it and however it died: every job enqueued once
  // and done once; the victim's leases expired (its blocked jobs' at
  // least), and no attempt failed.
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals,
                       scheduler->CountTotals());
  JobCounts counted;
  for (const TopicTotals& t : totals) {
    if (t.topic == "jobs") counted = t.counts;
  }
  EXPECT_EQ(counted.enqueued, static_cast<int64_t>(expected.size()));
  EXPECT_EQ(counted.done, static_cast<int64_t>(expected.size()));
  EXPECT_GE(counted.expired, kStuckJobs);
  EXPECT_EQ(counted.failed + counted.dead, 0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
