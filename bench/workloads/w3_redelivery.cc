// Copyright delayq authors.
//
// W3, TTR redelivery: N jobs with ttr 1 s are reserved and never acked (the
// worker "died"). Handlers then wait on the topic; redelivery time is when a
// handler is entered minus the first lease's deadline. A job never
// redelivered is lost; one delivered again after its handler acked it is a
// duplicate.

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

constexpr absl::Duration kTtr = absl::Seconds(1);
// How long after the last deadline the run waits for missing redeliveries.
constexpr absl::Duration kGiveUpAfter = absl::Seconds(30);
// How long enqueueing and the first reservations may take.
constexpr absl::Duration kReserveWithin = absl::Seconds(60);

}  // namespace

absl::StatusOr<std::vector<Report>> RunW3(const WorkloadConfig& config) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = OpenScheduler(config);
  if (!opened.ok()) return opened.status();
  Scheduler& scheduler = **opened;
  const std::string topic = Topic(config, "w3");
  const int64_t n = config.n;

  // The handlers' scheduler exists before the leases are taken, and their
  // process is not the one that holds them: in the two-process shape only
  // the store's news tells it when the leases run out.
  ConsumerArgs args;
  args.topic = topic;
  args.n = n;
  args.concurrency = config.concurrency;
  args.give_up = absl::Now() + kReserveWithin + kGiveUpAfter;
  // One more ttr after the last redelivery, so that a further delivery of
  // an acked job would show.
  args.linger = kTtr + absl::Milliseconds(500);
  absl::StatusOr<std::unique_ptr<HandlerRun>> handlers =
      HandlerRun::Prepare(config, scheduler, args);
  if (!handlers.ok()) return handlers.status();

  std::vector<std::string> payloads;
  for (int64_t i = 0; i < n; ++i) payloads.push_back(absl::StrCat(i, "|w3"));
  JobOptions options;
  options.ttr = kTtr;
  options.max_attempts = 3;
  for (int64_t i = 0; i < n; i += 1000) {
    std::vector<std::string> chunk(
        payloads.begin() + i,
        payloads.begin() + std::min<int64_t>(n, i + 1000));
    absl::StatusOr<std::vector<std::string>> ids =
        scheduler.EnqueueBatch(topic, chunk, options);
    if (!ids.ok()) return ids.status();
  }

  // The first leases, abandoned.
  std::vector<absl::Time> deadline(n, absl::InfinitePast());
  int64_t reserved = 0;
  while (reserved < n) {
    absl::StatusOr<std::vector<Lease>> leases =
        scheduler.ReserveBatch(topic, 100);
    if (!leases.ok()) return leases.status();
    if (leases->empty()) {
      return absl::InternalError(absl::StrCat("w3: only ", reserved, " of ", n,
                                              " jobs could be reserved"));
    }
    for (const Lease& lease : *leases) {
      const int64_t i = ParseIndex(lease.job.payload);
      if (i < 0 || i >= n || deadline[i] != absl::InfinitePast()) {
        return absl::InternalError(absl::StrCat(
            "w3: job ", lease.job.id, " reserved twice before any deadline"));
      }
      deadline[i] = lease.deadline;
      ++reserved;
    }
  }
  DQ_RETURN_IF_ERROR((*handlers)->Start());
  absl::StatusOr<FirstDeliveries> first = (*handlers)->Finish(deadline);
  if (!first.ok()) return first.status();
  absl::StatusOr<TopicStats> left = scheduler.Stats(topic);
  if (!left.ok()) return left.status();

  Report report(SystemName(scheduler), "w3");
  report.Param("shape", ShapeName(config));
  report.Param("n", n);
  report.Param("concurrency", static_cast<int64_t>(config.concurrency));
  report.Param("ttr_ms", absl::ToInt64Milliseconds(kTtr));
  report.MetricJson("redelivery_ms", Distribution(first->ms));
  report.Metric("redelivered", first->delivered);
  report.Metric("lost", first->missing);
  report.Metric("duplicates", first->duplicates);
  report.Metric("left_in_store",
                left->delayed + left->ready + left->reserved + left->dead);
  return std::vector<Report>{std::move(report)};
}

}  // namespace bench
}  // namespace delayq
