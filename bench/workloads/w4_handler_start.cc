// Copyright delayq authors.
//
// W4, handler start: an idle worker waits in Handle() (in a process of its
// own in the two-process shape); the producer enqueues one immediate job
// every 10 ms. Latency is the handler's entry minus the moment just before
// Enqueue() was called: what a web request that hands work to a worker
// waits for, when the worker has nothing else to do.

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"
#include "bench/workloads/consumer_process.h"

namespace delayq {
namespace bench {
namespace {

constexpr absl::Duration kEvery = absl::Milliseconds(10);
constexpr absl::Duration kGiveUpAfter = absl::Seconds(30);

}  // namespace

absl::StatusOr<std::vector<Report>> RunW4(const WorkloadConfig& config) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = OpenScheduler(config);
  if (!opened.ok()) return opened.status();
  Scheduler& scheduler = **opened;
  const std::string topic = Topic(config, "w4");
  const int64_t n = config.n;

  std::vector<absl::Time> sent(n, absl::InfiniteFuture());
  ConsumerArgs args;
  args.topic = topic;
  args.n = n;
  args.concurrency = 1;
  args.give_up = absl::Now() + kEvery * n + kGiveUpAfter;
  absl::StatusOr<std::unique_ptr<HandlerRun>> handlers =
      HandlerRun::Prepare(config, scheduler, args);
  if (!handlers.ok()) return handlers.status();
  DQ_RETURN_IF_ERROR((*handlers)->Start());
  // Let the worker settle into its wait.
  absl::SleepFor(absl::Milliseconds(200));

  {
    std::atomic<int64_t> enqueued{0};
    Progress progress("w4 enqueue", n, &enqueued);
    const absl::Time begin = absl::Now();
    for (int64_t i = 0; i < n; ++i) {
      absl::SleepFor(begin + kEvery * i - absl::Now());
      sent[i] = absl::Now();
      absl::StatusOr<std::string> id =
          scheduler.Enqueue(topic, absl::StrCat(i, "|w4"));
      if (!id.ok()) return id.status();
      enqueued.fetch_add(1);
    }
  }
  absl::StatusOr<FirstDeliveries> first = (*handlers)->Finish(sent);
  if (!first.ok()) return first.status();

  Report report(SystemName(scheduler), "w4");
  report.Param("shape", ShapeName(config));
  report.Param("n", n);
  report.Param("every_ms", absl::ToInt64Milliseconds(kEvery));
  report.MetricJson("handler_start_ms", Distribution(first->ms));
  report.Metric("delivered", first->delivered);
  report.Metric("duplicates", first->duplicates);
  report.Metric("missing", first->missing);
  return std::vector<Report>{std::move(report)};
}

}  // namespace bench
}  // namespace delayq
