// Copyright delayq authors.

#include "tests/testing/crash_rounds.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/counts.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/worker_log.h"
#include "tests/testing/worker_process.h"

namespace delayq {
namespace testing {

void RunCrashRounds(const CrashRounds& test) {
  const int rounds = test.rounds;
  std::mt19937 rng(20261121);
  WorkerLog all;
  std::set<std::string> acked;        // Ack returned OK
  std::set<std::string> maybe_acked;  // killed during Ack
  int killed_mid_run = 0;
  for (int round = 0; round < rounds; ++round) {
    std::unique_ptr<WorkerProcess> child = WorkerProcess::Start(test.url);
    ASSERT_NE(child, nullptr);
    ASSERT_TRUE(child->Send(absl::StrCat("churn r", round)));
    // Kill at a random moment once the child has started working (its first
    // report is out), so the kill lands mid-call whatever the start-up cost.
    // Its reports are read meanwhile: a full pipe would stall it in write().
    ASSERT_TRUE(child->NextStartingWith("P ", absl::Seconds(20)));
    child->ReadFor(absl::Microseconds(
        rng() % absl::ToInt64Microseconds(test.kill_within)));
    const int status = child->Kill();
    // Anything but the kill means the child failed on its own.
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "round " << round << ", status " << status << ": "
        << child->lines().back();
    child->Collect(absl::Seconds(10));  // what it said before it died

    WorkerLog log;
    AddToWorkerLog(child->lines(), &log);
    if (!log.produced.empty()) ++killed_mid_run;
    for (const auto& a : log.acked) acked.insert(a.id);
    // The job whose Ack() was running when the kill came may be either way.
    std::set<std::string> in_flight(log.acking.begin(), log.acking.end());
    for (const auto& a : log.acked) in_flight.erase(a.id);
    EXPECT_LE(in_flight.size(), 1u) << "round " << round;
    maybe_acked.insert(in_flight.begin(), in_flight.end());

    ASSERT_EQ(test.check_after_kill(), "") << "round " << round;
    std::unique_ptr<Backend> backend = test.open();
    ASSERT_NE(backend, nullptr);
    for (const std::string& id : log.produced) {
      if (maybe_acked.count(id)) continue;
      if (acked.count(id)) {
        EXPECT_THAT(backend->Get(id), StatusIs(absl::StatusCode::kNotFound))
            << "acknowledged job came back: " << id;
      } else {
        EXPECT_OK(backend->Get(id).status()) << "job lost: " << id;
      }
    }
    all.produced.insert(all.produced.end(), log.produced.begin(),
                        log.produced.end());
    all.reserved.insert(all.reserved.end(), log.reserved.begin(),
                        log.reserved.end());
  }
  // The kills landed while the child was working.
  EXPECT_EQ(killed_mid_run, rounds);

  // Leases each job's last reported reservation still held at `now`.
  std::map<std::string, int64_t> last_deadline;
  for (const auto& r : all.reserved) last_deadline[r.id] = r.deadline_us;

  std::unique_ptr<Backend> backend = test.open();
  ASSERT_NE(backend, nullptr);
  const absl::Time now = absl::Now();
  std::set<std::string> drained;
  int held_back = 0;
  // One Reserve() moves at most kReservePromoteLimit due jobs: move them
  // all first.
  for (bool more = true; more;) {
    ASSERT_OK_AND_ASSIGN(PromoteResult p, backend->PromoteDue(now, 1000));
    more = p.more;
  }
  // First at `now`: a job whose reported lease has not expired stays held.
  ASSERT_OK_AND_ASSIGN(auto ready, backend->Reserve("crash", 1 << 20, now));
  for (const Lease& l : ready) {
    auto it = last_deadline.find(l.job.id);
    if (it != last_deadline.end()) {
      EXPECT_LE(it->second, absl::ToUnixMicros(now))
          << "delivered while its lease was live: " << l.job.id;
    }
    ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", now));
    drained.insert(l.job.id);
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("crash"));
  held_back = static_cast<int>(stats.reserved);
  // Then after every ttr (1 s) has passed: the rest come back.
  const absl::Time later = now + absl::Seconds(2);
  // One Reserve() moves at most kReservePromoteLimit due jobs: move them
  // all first.
  for (bool more = true; more;) {
    ASSERT_OK_AND_ASSIGN(PromoteResult p, backend->PromoteDue(later, 1000));
    more = p.more;
  }
  ASSERT_OK_AND_ASSIGN(auto rest, backend->Reserve("crash", 1 << 20, later));
  EXPECT_EQ(static_cast<int>(rest.size()), held_back);
  for (const Lease& l : rest) {
    ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", later));
    EXPECT_TRUE(drained.insert(l.job.id).second) << l.job.id;
  }
  ASSERT_OK_AND_ASSIGN(stats, backend->Stats("crash"));
  EXPECT_EQ(stats.total(), 0);

  // The counts were written with the transitions they count, so the kills
  // left none counted twice or lost: every job stored was counted once as
  // enqueued and, all of them being acknowledged now, once as done.
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  JobCounts counted;
  for (const TopicTotals& t : totals) {
    if (t.topic == "crash") counted = t.counts;
  }
  EXPECT_EQ(counted.enqueued, counted.done);
  EXPECT_GE(counted.enqueued, static_cast<int64_t>(all.produced.size()));
  EXPECT_GE(counted.done, static_cast<int64_t>(acked.size() + drained.size()));
  EXPECT_LE(counted.done, static_cast<int64_t>(acked.size() + drained.size() +
                                               maybe_acked.size()));
  EXPECT_EQ(counted.dead + counted.failed, 0);

  for (const std::string& id : all.produced) {
    if (maybe_acked.count(id)) continue;
    EXPECT_NE(acked.count(id) + drained.count(id), 0u) << "lost: " << id;
    EXPECT_FALSE(acked.count(id) && drained.count(id))
        << "acknowledged job delivered again: " << id;
  }
  std::printf(
      "rounds %d (%d killed mid-run), jobs reported %zu, acked by the "
      "children %zu, killed during Ack %zu, drained %zu (%d still leased "
      "at the end)\n",
      rounds, killed_mid_run, all.produced.size(), acked.size(),
      maybe_acked.size(), drained.size(), held_back);
}

}  // namespace testing
}  // namespace delayq
