// Copyright delayq authors.
//
// How closely a topic's rate limit holds in real time, with several
// workers (each with a scheduler and store connection of its own, as
// separate processes would have) taking jobs as fast as the limit lets
// them; and what the limit check costs on the reserve path.
//
//   bazel run -c opt //bench:rate_limit -- --store=sqlite --rate=50
//       --seconds=60 --workers=4   (one command line)
//
// Prints one JSON line per measurement:
//   {"bench":"rate_limit", "store", "configured_per_s", "achieved_per_s",
//    "error_pct", "max_in_any_period", "workers", "seconds"}
//   {"bench":"limit_check_cost", "store", "unlimited_jobs_per_s",
//    "limited_jobs_per_s"}
// achieved_per_s counts the reservations made in the measured period
// after the first one; max_in_any_period is the most reservations any
// window of one period saw (the limit promises at most rate * period with
// burst 1, and burst more after a quiet spell).

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "delayq/delayq.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_path.h"

ABSL_FLAG(std::string, store, "sqlite", "memory, sqlite or redis");
ABSL_FLAG(int64_t, rate, 50, "reservations per second the limit allows");
ABSL_FLAG(int, seconds, 10, "how long to measure");
ABSL_FLAG(int, workers, 4, "workers, each with its own store connection");
ABSL_FLAG(int, cost_jobs, 5000, "jobs for the limit check's cost");

namespace delayq {
namespace {

constexpr char kTopic[] = "bench.limited";

[[noreturn]] void Die(const absl::Status& s) {
  std::fprintf(stderr, "rate_limit: %s\n", s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Must(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return *std::move(v);
}

void Must(const absl::Status& s) {
  if (!s.ok()) Die(s);
}

std::unique_ptr<Scheduler> Open(const std::string& url) {
  return Must(Scheduler::Create(Must(OpenBackend(url))));
}

// Reserve + ack of `n` ready jobs by one caller, jobs/s.
double ReserveAckRate(Scheduler& scheduler, absl::string_view topic, int n) {
  std::vector<std::string> payloads(n, "p");
  Must(scheduler.EnqueueBatch(topic, payloads).status());
  const absl::Time start = absl::Now();
  for (int i = 0; i < n; ++i) {
    std::optional<Lease> lease = Must(scheduler.Reserve(topic));
    if (!lease.has_value()) Die(absl::InternalError("ran out of jobs"));
    Must(scheduler.Ack(*lease));
  }
  return n / absl::ToDoubleSeconds(absl::Now() - start);
}

void Run() {
  const std::string store = absl::GetFlag(FLAGS_store);
  std::unique_ptr<testing::RedisServer> redis;
  std::string url;
  if (store == "memory") {
    url = "memory:";
  } else if (store == "sqlite") {
    url = absl::StrCat("sqlite:", testing::FreshTempPath("rate_limit", ".db"));
  } else if (store == "redis") {
    redis = Must(testing::RedisServer::Start());
    url = absl::StrCat("redis://127.0.0.1:", redis->port());
  } else {
    Die(absl::InvalidArgumentError("--store is memory, sqlite or redis"));
  }
  const int64_t rate = absl::GetFlag(FLAGS_rate);
  const int seconds = absl::GetFlag(FLAGS_seconds);
  // A memory store lives in one object: its workers share one scheduler.
  const int connections = store == "memory" ? 1 : absl::GetFlag(FLAGS_workers);
  std::vector<std::unique_ptr<Scheduler>> schedulers;
  for (int i = 0; i < connections; ++i) schedulers.push_back(Open(url));
  Scheduler& first = *schedulers[0];

  TopicLimit limit;
  limit.rate = rate;
  limit.period = absl::Seconds(1);
  Must(first.SetLimit(kTopic, limit));
  std::vector<std::string> payloads(rate * seconds * 2 + 100, "p");
  Must(first.EnqueueBatch(kTopic, payloads).status());

  absl::Mutex mu;
  std::vector<absl::Time> taken;
  const absl::Time end =
      absl::Now() + absl::Seconds(seconds) + absl::Milliseconds(200);
  std::vector<std::thread> threads;
  for (int w = 0; w < absl::GetFlag(FLAGS_workers); ++w) {
    Scheduler& s = *schedulers[w % connections];
    threads.emplace_back([&, &s = s] {
      while (absl::Now() < end) {
        std::optional<Lease> lease =
            Must(s.Reserve(kTopic, absl::Milliseconds(100)));
        if (!lease.has_value()) continue;
        const absl::Time at = absl::Now();
        Must(s.Ack(*lease));
        absl::MutexLock lock(&mu);
        taken.push_back(at);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::sort(taken.begin(), taken.end());
  if (taken.empty()) Die(absl::InternalError("nothing was reserved"));
  const absl::Time from = taken.front();
  const absl::Time to = from + absl::Seconds(seconds);
  const int64_t in_period =
      std::lower_bound(taken.begin(), taken.end(), to) - taken.begin();
  size_t max_window = 0;
  for (size_t i = 0, j = 0; i < taken.size(); ++i) {
    while (taken[i] - taken[j] >= absl::Seconds(1)) ++j;
    max_window = std::max(max_window, i - j + 1);
  }
  const double achieved = static_cast<double>(in_period) / seconds;
  std::printf(
      "{\"bench\":\"rate_limit\",\"store\":\"%s\",\"configured_per_s\":%lld,"
      "\"achieved_per_s\":%.3f,\"error_pct\":%.3f,\"max_in_any_period\":%zu,"
      "\"workers\":%d,\"seconds\":%d}\n",
      store.c_str(), static_cast<long long>(rate), achieved,
      100.0 * (achieved - rate) / rate, max_window,
      absl::GetFlag(FLAGS_workers), seconds);

  // The limit check's cost: the same reserve + ack loop on a topic without
  // a limit and on one whose limit never binds.
  const int n = absl::GetFlag(FLAGS_cost_jobs);
  const double unlimited = ReserveAckRate(first, "bench.free", n);
  TopicLimit loose;
  loose.rate = 1'000'000'000;
  loose.concurrency = 1'000'000;
  Must(first.SetLimit("bench.loose", loose));
  const double limited = ReserveAckRate(first, "bench.loose", n);
  std::printf(
      "{\"bench\":\"limit_check_cost\",\"store\":\"%s\","
      "\"unlimited_jobs_per_s\":%.0f,\"limited_jobs_per_s\":%.0f}\n",
      store.c_str(), unlimited, limited);
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  delayq::Run();
  return 0;
}
