// Copyright delayq authors.
//
// Several processes, each with several threads, produce and consume the same
// topics of one SQLite file. Every job is delivered and acknowledged exactly
// once, and no job is ever leased to two holders whose leases overlap.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_path.h"
#include "tests/sqlite/worker_log.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshDbPath;
using ::delayq::testing::WorkerLog;

constexpr int kProcesses = 2;
constexpr int kThreads = 3;
constexpr int kJobsPerThread = 150;
constexpr int kTopics = 3;

TEST(SqliteMultiProcessTest, EveryJobDeliveredNoOverlappingLeases) {
  const std::string path = FreshDbPath("multiprocess");
  std::vector<pid_t> pids;
  std::vector<std::string> prefixes;
  for (int p = 0; p < kProcesses; ++p) {
    prefixes.push_back(absl::StrCat(path, ".proc", p));
    pids.push_back(testing::SpawnWorker(
        {"work", path, prefixes.back(), absl::StrCat(kThreads),
         absl::StrCat(kJobsPerThread), absl::StrCat(kTopics),
         absl::StrCat("w", p)}));
  }
  for (pid_t pid : pids) EXPECT_EQ(testing::WaitWorker(pid), 0);

  WorkerLog log;
  for (const std::string& prefix : prefixes) {
    for (int t = 0; t < kThreads; ++t) {
      testing::ReadWorkerLog(absl::StrCat(prefix, ".", t), &log);
    }
  }
  // Whatever a process left behind (a job produced after the others went
  // idle) is drained here, with a time past every ttr.
  SqliteOptions options;
  options.path = path;
  ASSERT_OK_AND_ASSIGN(auto backend, OpenSqliteBackend(options));
  const absl::Time later = absl::Now() + absl::Hours(1);
  // One Reserve() moves at most kReservePromoteLimit due jobs: move them
  // all first.
  for (bool more = true; more;) {
    ASSERT_OK_AND_ASSIGN(PromoteResult p, backend->PromoteDue(later, 1000));
    more = p.more;
  }
  for (int topic = 0; topic < kTopics; ++topic) {
    ASSERT_OK_AND_ASSIGN(
        auto leases,
        backend->Reserve(absl::StrCat("mp", topic), 1 << 20, later));
    for (const Lease& l : leases) {
      log.reserved.push_back({l.job.id, l.token, absl::ToUnixMicros(later),
                              absl::ToUnixMicros(l.deadline)});
      ASSERT_OK(backend->Ack(l.job.id, l.token, later));
      log.acked.push_back({l.job.id, l.token, 0});
    }
  }

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
  ASSERT_OK_AND_ASSIGN(auto topics, backend->Topics());
  EXPECT_TRUE(topics.empty());
  std::printf("jobs %zu, redeliveries %d, refused late acks %d\n",
              produced.size(), redelivered, refused);
}

}  // namespace
}  // namespace delayq
