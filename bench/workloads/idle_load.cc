// Copyright delayq authors.
//
// Idle load on Redis or PostgreSQL: N jobs due a day from now, a scheduler
// Start()ed with default options and one worker (default HandlerOptions) on
// their topic, and nothing due. Counts what the server runs meanwhile: Redis
// commands (INFO commandstats before and after `window`), PostgreSQL
// transactions and statements (postgres_stats.h).

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"
#include "bench/workloads/postgres_stats.h"
#include "bench/workloads/redis_stats.h"
#include "delayq/redis_backend.h"

namespace delayq {
namespace bench {

// Lets the scheduler finish starting (first look at the store) before
// counting.
constexpr absl::Duration kSettle = absl::Seconds(2);

namespace {

bool IsPostgres(absl::string_view url) {
  return absl::StartsWith(url, "postgres://") ||
         absl::StartsWith(url, "postgresql://");
}

// Enqueues N jobs due a day from now, starts a worker on their topic and
// waits for the start to settle; `handled` counts what it wrongly runs.
absl::StatusOr<std::unique_ptr<Scheduler>> StartIdleScheduler(
    const WorkloadConfig& config, int64_t& handled) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = OpenScheduler(config);
  if (!opened.ok()) return opened.status();
  Scheduler& scheduler = **opened;
  const std::string topic = Topic(config, "idle");
  JobOptions options;
  options.delay = absl::Hours(24);
  {
    std::atomic<int64_t> done{0};
    Progress progress("idle enqueue", config.n, &done);
    std::vector<std::string> payloads;
    for (int64_t i = 0; i < config.n; i += 1000) {
      payloads.clear();
      for (int64_t j = i; j < std::min<int64_t>(config.n, i + 1000); ++j) {
        payloads.push_back(absl::StrCat(j, "|idle"));
      }
      absl::StatusOr<std::vector<std::string>> ids =
          scheduler.EnqueueBatch(topic, payloads, options);
      if (!ids.ok()) return ids.status();
      done.fetch_add(payloads.size());
    }
  }
  scheduler.Handle(topic, [&handled](const Job&) {
    ++handled;  // one worker thread: no race
    return absl::OkStatus();
  });
  DQ_RETURN_IF_ERROR(scheduler.Start());
  absl::SleepFor(kSettle);
  return opened;
}

Report IdleReport(const WorkloadConfig& config, const Scheduler& scheduler,
                  int64_t handled) {
  Report report(SystemName(scheduler), "idle");
  report.Param("pending", config.n);
  report.Param("window_s", absl::ToInt64Seconds(config.window));
  report.Param("workers", static_cast<int64_t>(1));
  report.Metric("handled", handled);
  return report;
}

}  // namespace

absl::StatusOr<std::vector<Report>> RunIdle(const WorkloadConfig& config) {
  const bool postgres = IsPostgres(config.store_url);
  if (!postgres && !absl::StartsWith(config.store_url, "redis://")) {
    return absl::InvalidArgumentError(
        "the idle workload counts what the server runs: it needs a redis:// "
        "or postgres:// store");
  }
  int64_t handled = 0;
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
      StartIdleScheduler(config, handled);
  if (!scheduler.ok()) return scheduler.status();
  std::fprintf(stderr, "idle: counting the server's work for %s\n",
               absl::FormatDuration(config.window).c_str());
  if (postgres) {
    absl::StatusOr<PostgresIdleLoad> load =
        MeasurePostgresIdleLoad(config.store_url, config.window);
    (*scheduler)->Stop(absl::Seconds(5));
    if (!load.ok()) return load.status();
    Report report = IdleReport(config, **scheduler, handled);
    report.Metric("transactions", load->transactions);
    report.Metric("transactions_per_s", load->transactions_per_second);
    report.Metric("statements", load->statements);
    report.Metric("statements_per_s", load->statements_per_second);
    report.MetricJson("by_statement", CommandCountsJson(load->by_statement));
    return std::vector<Report>{std::move(report)};
  }
  absl::StatusOr<RedisOptions> redis = ParseRedisUrl(config.store_url);
  if (!redis.ok()) return redis.status();
  absl::StatusOr<IdleLoad> load =
      MeasureIdleLoad(redis->host, redis->port, config.window);
  (*scheduler)->Stop(absl::Seconds(5));
  if (!load.ok()) return load.status();
  Report report = IdleReport(config, **scheduler, handled);
  report.Metric("commands", load->total);
  report.Metric("commands_per_s", load->per_second);
  report.MetricJson("by_command", CommandCountsJson(load->by_command));
  report.Metric("script_calls", ScriptCalls(load->by_command));
  return std::vector<Report>{std::move(report)};
}

}  // namespace bench
}  // namespace delayq
