// Copyright delayq authors.

#include "tests/faults/fault_harness.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/testing/eventually.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

// Fixed, so that every run of the suite tries the same schedules.
constexpr uint64_t kSeeds[] = {1, 2, 3, 4, 5};

}  // namespace

FaultPlan MixedPlan(uint64_t seed, double fail, double delay,
                    absl::Duration max_delay) {
  FaultPlan plan;
  plan.seed = seed;
  plan.fail_before = fail;
  plan.fail_after = fail;
  plan.delay = delay;
  plan.max_delay = max_delay;
  return plan;
}

std::unique_ptr<Backend> OpenStore(StoreKind kind) {
  if (kind == StoreKind::kMemory) return NewMemoryBackend();
  absl::StatusOr<std::unique_ptr<Backend>> store =
      OpenBackend(absl::StrCat("sqlite:", FreshDbPath("faults")));
  if (!store.ok()) {
    fprintf(stderr, "FATAL: cannot open SQLite: %s\n",
            store.status().ToString().c_str());
    abort();
  }
  return *std::move(store);
}

std::vector<uint64_t> FaultSeeds() {
  const char* env = std::getenv("DELAYQ_FAULT_SEEDS");
  std::vector<uint64_t> seeds;
  if (env != nullptr && *env != '\0') {
    for (absl::string_view part : absl::StrSplit(env, ',')) {
      uint64_t seed;
      if (absl::SimpleAtoi(part, &seed)) seeds.push_back(seed);
    }
  }
  if (seeds.empty()) seeds.assign(std::begin(kSeeds), std::end(kSeeds));
  return seeds;
}

std::vector<FaultCase> FaultCases() {
  std::vector<FaultCase> out;
  for (StoreKind kind : {StoreKind::kMemory, StoreKind::kSqlite}) {
    for (uint64_t seed : FaultSeeds()) out.push_back({kind, seed});
  }
  return out;
}

std::string FaultCaseName(const FaultCase& c) {
  return absl::StrCat(c.store == StoreKind::kMemory ? "Memory" : "Sqlite",
                      "_seed", c.seed);
}

std::string FaultCaseTestName(const ::testing::TestParamInfo<FaultCase>& info) {
  return FaultCaseName(info.param);
}

std::ostream& operator<<(std::ostream& out, const FaultCase& c) {
  return out << FaultCaseName(c);
}

bool AwaitWaiters(const SimulatedClock& clock, int n, absl::Duration patience) {
  return Eventually(
      patience, [&] { return clock.Waiters() >= n; }, absl::Microseconds(200));
}

absl::Duration StopWhileAdvancing(Scheduler& scheduler, SimulatedClock& clock,
                                  absl::Duration grace, absl::Duration step) {
  const absl::Time start = absl::Now();
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    scheduler.Stop(grace);
    stopped = true;
  });
  while (!stopped) {
    AwaitWaiters(clock, 1, absl::Milliseconds(20));
    clock.Advance(step);
  }
  stopper.join();
  return absl::Now() - start;
}

size_t RunLog::Begin(const Lease& lease, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Run run;
  run.id = lease.job.id;
  run.token = lease.token;
  run.start = now;
  runs_.push_back(std::move(run));
  ++running_;
  return runs_.size() - 1;
}

void RunLog::End(size_t index, absl::Time now) {
  absl::MutexLock lock(&mu_);
  runs_[index].end = now;
  --running_;
}

std::vector<RunLog::Run> RunLog::Runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

std::set<std::string> RunLog::Finished() const {
  absl::MutexLock lock(&mu_);
  std::set<std::string> out;
  for (const Run& r : runs_) {
    if (r.end != absl::InfiniteFuture()) out.insert(r.id);
  }
  return out;
}

int RunLog::Running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

int RunLog::BeganSince(absl::Time t) const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const Run& r : runs_) n += r.start >= t;
  return n;
}

std::vector<std::string> LiveLeaseOverlaps(
    const std::vector<RunLog::Run>& runs,
    const std::map<FaultyBackend::LeaseKey, GrantedLease>& leases) {
  std::vector<std::string> problems;
  std::map<std::string, std::vector<const RunLog::Run*>> by_job;
  for (const RunLog::Run& r : runs) by_job[r.id].push_back(&r);
  for (const auto& [id, job_runs] : by_job) {
    for (size_t i = 0; i < job_runs.size(); ++i) {
      for (size_t j = i + 1; j < job_runs.size(); ++j) {
        const RunLog::Run* a = job_runs[i];
        const RunLog::Run* b = job_runs[j];
        if (b->start < a->start) std::swap(a, b);
        // Runs that touch end to start do not overlap.
        if (!(b->start < a->end)) continue;
        if (a->token == b->token) {
          problems.push_back(absl::StrCat("job ", id, ": two runs at once on ",
                                          "one lease, token ", a->token));
          continue;
        }
        auto la = leases.find({id, a->token});
        auto lb = leases.find({id, b->token});
        if (la == leases.end() || lb == leases.end()) {
          problems.push_back(absl::StrCat(
              "job ", id, ": a run on a lease the store never granted"));
          continue;
        }
        // The store grants a job again only once its lease ended: by an
        // ack, fail, release or cancel, or by a lapse decided at or past
        // the lease's deadline (the latest the store gave it). So the
        // lease granted first must have ended so. (The runs' own times
        // cannot order the grants: every call's `now` is read before it.)
        auto ended = [](const GrantedLease& g) {
          if (!g.ended_by.has_value()) return false;
          const bool lapse = *g.ended_by == StoreCall::kPromoteDue ||
                             *g.ended_by == StoreCall::kReserve;
          return !lapse || g.ended_at >= g.deadline;
        };
        const GrantedLease& first = la->second.grant_seq < lb->second.grant_seq
                                        ? la->second
                                        : lb->second;
        if (!ended(first)) {
          auto describe = [](const GrantedLease& g) {
            std::string out =
                absl::StrCat("token ", g.token, " granted at ",
                             absl::FormatTime(g.granted_at), " until ",
                             absl::FormatTime(g.deadline));
            if (g.ended_by.has_value()) {
              absl::StrAppend(&out, ", ended by ", StoreCallName(*g.ended_by),
                              " at ", absl::FormatTime(g.ended_at));
            } else {
              absl::StrAppend(&out, ", never ended");
            }
            return out;
          };
          problems.push_back(
              absl::StrCat("job ", id, ": runs overlap under two live leases: ",
                           describe(la->second), "; ", describe(lb->second)));
        }
      }
    }
  }
  return problems;
}

std::vector<std::string> LostJobs(const FaultyBackend& faulty) {
  std::vector<std::string> lost;
  const std::set<std::string> acked = faulty.Acked();
  const std::set<std::string> cancelled = faulty.Cancelled();
  for (const std::string& id : faulty.Added()) {
    if (acked.count(id) == 0 && cancelled.count(id) == 0) lost.push_back(id);
  }
  return lost;
}

std::vector<std::string> UnaskedEnds(
    const FaultyBackend& faulty, const std::set<std::string>& asked_to_ack,
    const std::set<std::string>& asked_to_cancel) {
  std::vector<std::string> out;
  for (const std::string& id : faulty.Acked()) {
    if (asked_to_ack.count(id) == 0) {
      out.push_back(absl::StrCat(id, " acked unasked"));
    }
  }
  for (const std::string& id : faulty.Cancelled()) {
    if (asked_to_cancel.count(id) == 0) {
      out.push_back(absl::StrCat(id, " cancelled unasked"));
    }
  }
  return out;
}

std::vector<std::string> LeasesKeptAfterStop(
    Backend& store, const FaultyBackend& faulty,
    const std::vector<std::string>& topics, absl::Time now) {
  std::vector<std::string> problems;
  const auto leases = faulty.Leases();
  const auto failed_ends = faulty.EndsFailedBefore();
  for (const std::string& topic : topics) {
    absl::StatusOr<std::vector<Job>> reserved =
        store.List(topic, JobState::kReserved, 100000);
    if (!reserved.ok()) {
      problems.push_back(reserved.status().ToString());
      continue;
    }
    for (const Job& job : *reserved) {
      // The newest lease the store granted on the job.
      const GrantedLease* newest = nullptr;
      for (auto it = leases.lower_bound({job.id, 0});
           it != leases.end() && it->first.first == job.id; ++it) {
        if (newest == nullptr || it->second.granted_at >= newest->granted_at) {
          newest = &it->second;
        }
      }
      if (newest == nullptr) {
        problems.push_back(absl::StrCat(job.id, ": reserved, no lease known"));
        continue;
      }
      if (newest->deadline <= now || newest->reply_lost ||
          newest->touch_reply_lost) {
        continue;
      }
      bool end_failed = false;
      auto range = failed_ends.equal_range(job.id);
      for (auto it = range.first; it != range.second; ++it) {
        end_failed |= it->second == newest->token;
      }
      if (end_failed) continue;
      problems.push_back(absl::StrCat(
          job.id, ": still reserved after Stop() under token ", newest->token,
          " until ", absl::FormatTime(newest->deadline),
          ", though its end never failed"));
    }
  }
  return problems;
}

int64_t JobsIn(Backend& store, const std::vector<std::string>& topics) {
  int64_t n = 0;
  for (const std::string& topic : topics) {
    absl::StatusOr<TopicStats> stats = store.Stats(topic);
    if (!stats.ok()) return -1;
    n += stats->delayed + stats->ready + stats->reserved + stats->dead;
  }
  return n;
}

}  // namespace testing
}  // namespace delayq
