// Copyright delayq authors.
//
// Idle load on Redis: N jobs due a day from now, a scheduler Start()ed with
// default options and one worker (default HandlerOptions) on their topic,
// and nothing due. Counts the commands the server runs meanwhile (INFO
// commandstats before and after `window`).

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"
#include "bench/workloads/redis_stats.h"
#include "delayq/redis_backend.h"

namespace delayq {
namespace bench {

// Lets the scheduler finish starting (first look at the store) before
// counting.
constexpr absl::Duration kSettle = absl::Seconds(2);

absl::StatusOr<std::vector<Report>> RunIdle(const WorkloadConfig& config) {
  if (!absl::StartsWith(config.store_url, "redis://")) {
    return absl::InvalidArgumentError(
        "the idle workload counts Redis commands: it needs a redis:// store");
  }
  absl::StatusOr<RedisOptions> redis = ParseRedisUrl(config.store_url);
  if (!redis.ok()) return redis.status();
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
  int64_t handled = 0;
  scheduler.Handle(topic, [&handled](const Job&) {
    ++handled;  // one worker thread: no race
    return absl::OkStatus();
  });
  DQ_RETURN_IF_ERROR(scheduler.Start());
  absl::SleepFor(kSettle);
  std::fprintf(stderr, "idle: counting Redis commands for %s\n",
               absl::FormatDuration(config.window).c_str());
  absl::StatusOr<IdleLoad> load =
      MeasureIdleLoad(redis->host, redis->port, config.window);
  scheduler.Stop(absl::Seconds(5));
  if (!load.ok()) return load.status();

  Report report(SystemName(scheduler), "idle");
  report.Param("pending", config.n);
  report.Param("window_s", absl::ToInt64Seconds(config.window));
  report.Param("workers", static_cast<int64_t>(1));
  report.Metric("commands", load->total);
  report.Metric("commands_per_s", load->per_second);
  report.MetricJson("by_command", CommandCountsJson(load->by_command));
  report.Metric("script_calls", ScriptCalls(load->by_command));
  report.Metric("handled", handled);
  return std::vector<Report>{std::move(report)};
}

}  // namespace bench
}  // namespace delayq
