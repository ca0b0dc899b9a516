// Copyright delayq authors.
//
// workloads.h — the standard workloads (see the design's Benchmarks section),
// run against a delayq Scheduler on any store.
//
//   w1  ready throughput: enqueue N immediate jobs, then consume them with C
//       threads (reserve + ack); once one job per call, once batched.
//   w2  delayed lateness: N jobs due spread evenly over 5 s, handlers
//       waiting; delivery time minus due time.
//   w3  TTR redelivery: N jobs with ttr 1 s reserved and never acked; time
//       from the lease deadline to the second delivery.
//   w4  handler start: an idle Handle() worker waits; one immediate job is
//       enqueued every 10 ms; time from Enqueue() to the handler's entry.
//   idle Redis commands, or PostgreSQL transactions and statements, per
//       second while N jobs wait far in the future and a started scheduler
//       with a worker has nothing to do (Redis and PostgreSQL only).
//
// Every workload counts deliveries per job, so a duplicate or a lost job
// shows up in its report.
//
// Shapes: with `two_process` (the default for SQLite, Redis and PostgreSQL,
// which processes share), the consumers of w1-w4 run in a process of their own
// (consumer_process.h), as services deploy them; otherwise producer and
// consumers share one Scheduler in one process.

#ifndef DELAYQ_BENCH_WORKLOADS_WORKLOADS_H_
#define DELAYQ_BENCH_WORKLOADS_WORKLOADS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/workloads/report.h"

namespace delayq {
namespace bench {

struct WorkloadConfig {
  // The store, as OpenBackend() takes it.
  std::string store_url;
  int64_t n = 0;
  int concurrency = 1;
  // Jobs per EnqueueBatch() / ReserveBatch() call in w1's batched mode.
  int batch = 100;
  // w1's modes: one job per call, batched; both by default. Chained: one
  // job per call, each ack reserving the next (off by default).
  bool w1_single = true;
  bool w1_batched = true;
  bool w1_chained = false;
  // w2: how far ahead of the first due time enqueueing starts.
  absl::Duration lead = absl::Seconds(2);
  // w2: the span the due times are spread over.
  absl::Duration spread = absl::Seconds(5);
  // idle: how long to count commands.
  absl::Duration window = absl::Seconds(10);
  // A tag that keeps this run's topics apart from earlier runs' in the store.
  std::string run_tag;
  // Consumers in a process of their own (see above).
  bool two_process = false;
  // Whether the schedulers write the store's event log
  // (SchedulerOptions::event_log), to measure what it costs.
  bool event_log = true;
};

absl::StatusOr<std::vector<Report>> RunW1(const WorkloadConfig& config);
absl::StatusOr<std::vector<Report>> RunW2(const WorkloadConfig& config);
absl::StatusOr<std::vector<Report>> RunW3(const WorkloadConfig& config);
absl::StatusOr<std::vector<Report>> RunW4(const WorkloadConfig& config);
absl::StatusOr<std::vector<Report>> RunIdle(const WorkloadConfig& config);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_WORKLOADS_H_
