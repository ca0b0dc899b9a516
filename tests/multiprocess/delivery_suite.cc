// Copyright delayq authors.
//
// Store level: several processes, each with several threads, on one store.
// Every job is delivered and acknowledged exactly once, a job is leased
// again only once its previous lease expired, and a late Ack() is refused.

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/worker_log.h"

namespace delayq {
namespace testing {
namespace {

// Adds to `log` what a final drain at `later` (past every ttr) finds on
// `topics`: whatever a process left behind.
void DrainLeftovers(Backend& store, const std::vector<std::string>& topics,
                    absl::Time later, WorkerLog* log) {
  // One Reserve() moves at most kReservePromoteLimit due jobs: move them
  // all first.
  for (bool more = true; more;) {
    ASSERT_OK_AND_ASSIGN(PromoteResult p, store.PromoteDue(later, 1000));
    more = p.more;
  }
  for (const std::string& topic : topics) {
    ASSERT_OK_AND_ASSIGN(auto leases, store.Reserve(topic, 1 << 20, later));
    for (const Lease& l : leases) {
      log->reserved.push_back({l.job.id, l.token, absl::ToUnixMicros(later),
                               absl::ToUnixMicros(l.deadline)});
      ASSERT_OK(store.Ack(l.job.id, l.token, /*result=*/"", later));
      log->acked.push_back({l.job.id, l.token, 0});
    }
  }
}

constexpr int kProcesses = 2;
constexpr int kThreads = 3;
constexpr int kJobsPerThread = 150;
constexpr int kTopics = 3;

TEST_P(MultiProcessTest, EveryJobDeliveredNoOverlappingLeases) {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<WorkerProcess*> all;
  for (int p = 0; p < kProcesses; ++p) {
    workers.push_back(StartWorker());
    ASSERT_NE(workers.back(), nullptr);
    all.push_back(workers.back().get());
    ASSERT_TRUE(workers.back()->Send(absl::StrCat(
        "work ", kThreads, " ", kJobsPerThread, " ", kTopics, " w", p)));
  }
  ASSERT_TRUE(CollectUntil(
      all, [&] { return AllSaid(all, "ok work"); }, absl::Minutes(3)))
      << "a worker did not finish";

  WorkerLog log;
  for (WorkerProcess* w : all) {
    AddToWorkerLog(w->lines(), &log);
    const int status = w->Finish();
    EXPECT_TRUE(ExitedCleanly(status)) << absl::StrJoin(Errors(*w), "\n");
  }
  std::unique_ptr<Backend> store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> topics;
  for (int t = 0; t < kTopics; ++t) topics.push_back(absl::StrCat("mp", t));
  DrainLeftovers(*store, topics, absl::Now() + absl::Hours(1), &log);

  const std::set<std::string> produced(log.produced.begin(),
                                       log.produced.end());
  EXPECT_EQ(produced.size(), log.produced.size());
  EXPECT_EQ(produced.size(), size_t{kProcesses * kThreads * kJobsPerThread});

  // Reservations per job, in time order; tokens never repeat.
  std::map<std::string, std::vector<WorkerLog::Reservation>> by_job;
  std::set<uint64_t> tokens;
  for (const auto& r : log.reserved) {
    EXPECT_TRUE(tokens.insert(r.token).second) << "token reused: " << r.token;
    by_job[r.id].push_back(r);
  }
  int redelivered = 0;
  for (auto& [id, rs] : by_job) {
    EXPECT_TRUE(produced.count(id)) << id;
    std::sort(rs.begin(), rs.end(),
              [](const auto& a, const auto& b) { return a.now_us < b.now_us; });
    for (size_t i = 1; i < rs.size(); ++i) {
      // The job was leased again only once the previous lease had expired.
      EXPECT_GE(rs[i].now_us, rs[i - 1].deadline_us) << id;
      ++redelivered;
    }
  }
  std::map<std::string, int> ok_acks;
  int refused = 0;
  for (const auto& a : log.acked) {
    if (a.code == 0) {
      ++ok_acks[a.id];
      // Only the job's last lease can have been acknowledged.
      ASSERT_TRUE(by_job.count(a.id)) << a.id;
      EXPECT_EQ(a.token, by_job[a.id].back().token) << a.id;
    } else {
      EXPECT_EQ(a.code,
                static_cast<int>(absl::StatusCode::kFailedPrecondition));
      ++refused;
    }
  }
  for (const std::string& id : produced) {
    EXPECT_EQ(ok_acks[id], 1)
        << id << " acknowledged " << ok_acks[id] << " times";
  }
  ASSERT_OK_AND_ASSIGN(auto left, store->Topics());
  EXPECT_TRUE(left.empty());
  std::printf("jobs %zu, redeliveries %d, refused late acks %d\n",
              produced.size(), redelivered, refused);
}

constexpr int kDrainers = 3;
constexpr int kThreadsPerDrainer = 4;
constexpr int kJobsPerTopic = 1000;
const char* const kDrainTopics[] = {"alpha", "beta", "gamma"};

// Leases are long, so none expires and none may be handed out twice.
TEST_P(MultiProcessTest, EveryJobDeliveredExactlyOnceAcrossProcesses) {
  std::unique_ptr<Backend> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const absl::Time now = absl::Now();
  for (const char* topic : kDrainTopics) {
    std::vector<NewJob> batch;
    for (int i = 0; i < kJobsPerTopic; ++i) {
      NewJob j;
      j.id = absl::StrCat(topic, "-", i);
      j.topic = topic;
      j.payload = "x";
      j.ttr = absl::Minutes(10);  // no lease expires during the test
      j.run_at = now;
      batch.push_back(std::move(j));
    }
    ASSERT_OK(store->Add(batch, now));
  }

  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<WorkerProcess*> all;
  for (int p = 0; p < kDrainers; ++p) {
    workers.push_back(StartWorker());
    ASSERT_NE(workers.back(), nullptr);
    all.push_back(workers.back().get());
    ASSERT_TRUE(workers.back()->Send(
        absl::StrCat("drain ", kThreadsPerDrainer, " alpha,beta,gamma")));
  }
  ASSERT_TRUE(CollectUntil(
      all, [&] { return AllSaid(all, "ok drain"); }, absl::Minutes(3)))
      << "a worker did not finish";

  std::map<std::string, int> deliveries;
  for (int p = 0; p < kDrainers; ++p) {
    const int status = workers[p]->Finish();
    EXPECT_TRUE(ExitedCleanly(status))
        << absl::StrJoin(Errors(*workers[p]), "\n");
    int n = 0;
    for (const std::string& line : workers[p]->lines()) {
      if (line.rfind("acked ", 0) != 0) continue;
      deliveries[line.substr(6)]++;
      ++n;
    }
    // How the work spread depends on scheduling; recorded, not asserted.
    ::testing::Test::RecordProperty(absl::StrCat("process_", p, "_jobs"), n);
  }
  EXPECT_EQ(deliveries.size(), 3u * kJobsPerTopic) << "jobs lost";
  int duplicated = 0;
  for (const auto& [id, n] : deliveries) duplicated += n > 1 ? 1 : 0;
  EXPECT_EQ(duplicated, 0);
  for (const char* topic : kDrainTopics) {
    ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats(topic));
    EXPECT_EQ(stats, TopicStats{}) << topic;
  }
}

}  // namespace
}  // namespace testing
}  // namespace delayq
