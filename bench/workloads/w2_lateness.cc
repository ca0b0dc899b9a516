// Copyright delayq authors.
//
// W2, delayed lateness: N jobs whose absolute run_at times are spread evenly
// over `spread` (5 s), starting `lead` after the run begins so that
// enqueueing (one Enqueue per job, in due order) stays ahead of the due
// times. Handlers registered with Handle() and Start()ed before the first
// job is enqueued wait for them. Lateness is the time the handler is
// entered minus the job's due time.

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"
#include "bench/workloads/consumer_process.h"
#include "bench/workloads/idle_memory_probe.h"

namespace delayq {
namespace bench {

// How long after the last due time the run waits for missing deliveries.
constexpr absl::Duration kGiveUpAfter = absl::Seconds(30);

absl::StatusOr<std::vector<Report>> RunW2(const WorkloadConfig& config) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = OpenScheduler(config);
  if (!opened.ok()) return opened.status();
  Scheduler& scheduler = **opened;
  const std::string topic = Topic(config, "w2");
  const int64_t n = config.n;

  std::vector<absl::Time> due(n);
  const absl::Time first_due = absl::Now() + config.lead;
  for (int64_t i = 0; i < n; ++i) due[i] = first_due + config.spread * i / n;
  ConsumerArgs args;
  args.topic = topic;
  args.n = n;
  args.concurrency = config.concurrency;
  args.give_up = due[n - 1] + kGiveUpAfter;
  absl::StatusOr<std::unique_ptr<HandlerRun>> handlers =
      HandlerRun::Prepare(config, scheduler, args);
  if (!handlers.ok()) return handlers.status();
  DQ_RETURN_IF_ERROR((*handlers)->Start());
  StallProbe probe;
  // With the default lead, its idle second ends before the first job is due.
  IdleMemoryProbe memory_probe(absl::Seconds(1));

  int64_t enqueued_late = 0;
  {
    std::atomic<int64_t> enqueued{0};
    Progress progress("w2 enqueue", n, &enqueued);
    for (int64_t i = 0; i < n; ++i) {
      JobOptions options;
      options.run_at = due[i];
      absl::StatusOr<std::string> id =
          scheduler.Enqueue(topic, absl::StrCat(i, "|w2"), options);
      if (!id.ok()) return id.status();
      if (absl::Now() > due[i]) ++enqueued_late;
      enqueued.fetch_add(1);
    }
  }
  absl::StatusOr<FirstDeliveries> first = (*handlers)->Finish(due);
  if (!first.ok()) return first.status();
  absl::StatusOr<TopicStats> left = scheduler.Stats(topic);
  if (!left.ok()) return left.status();

  Report report(SystemName(scheduler), "w2");
  report.Param("shape", ShapeName(config));
  report.Param("n", n);
  report.Param("concurrency", static_cast<int64_t>(config.concurrency));
  report.Param("spread_s",
               static_cast<int64_t>(absl::ToInt64Seconds(config.spread)));
  report.Param("lead_ms", absl::ToInt64Milliseconds(config.lead));
  report.MetricJson("lateness_ms", Distribution(first->ms));
  report.MetricJson("host_oversleep_ms", probe.Finish());
  report.MetricJson("host_idle_memory", memory_probe.Finish());
  report.Metric("delivered", first->delivered);
  report.Metric("duplicates", first->duplicates);
  report.Metric("missing", first->missing);
  report.Metric("enqueued_late", enqueued_late);
  report.Metric("left_in_store",
                left->delayed + left->ready + left->reserved + left->dead);
  return std::vector<Report>{std::move(report)};
}

}  // namespace bench
}  // namespace delayq
