// Copyright delayq authors.
//
// Helpers the workload files share: opening a scheduler on a store URL and
// naming systems and topics.

#ifndef DELAYQ_BENCH_WORKLOADS_COMMON_H_
#define DELAYQ_BENCH_WORKLOADS_COMMON_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bench/workloads/report.h"
#include "bench/workloads/workloads.h"
#include "delayq/delayq.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace bench {

// A scheduler with default options (real clock) on `config.store_url`,
// writing the event log as `config.event_log` says.
inline absl::StatusOr<std::unique_ptr<Scheduler>> OpenScheduler(
    const WorkloadConfig& config) {
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      OpenBackend(config.store_url);
  if (!backend.ok()) return backend.status();
  SchedulerOptions options;
  options.event_log = config.event_log;
  return Scheduler::Create(*std::move(backend), options);
}

// "delayq-memory", "delayq-sqlite", "delayq-redis".
inline std::string SystemName(const Scheduler& scheduler) {
  return absl::StrCat("delayq-", scheduler.backend().Name());
}

inline std::string Topic(const WorkloadConfig& config,
                         absl::string_view workload) {
  return absl::StrCat("bench.", workload, ".", config.run_tag);
}

// "two-process" or "one-process", the shape every report names.
inline std::string ShapeName(const WorkloadConfig& config) {
  return config.two_process ? "two-process" : "one-process";
}

// W1's consumers: `concurrency` threads reserve (`batch` at a time when > 1)
// and ack until the topic stays empty; `done` counts acks as they happen.
// `chained`: one job at a time, each ack reserving the thread's next job in
// the same call (Scheduler::AckAndReserve()).
struct ConsumeResult {
  absl::Duration elapsed;  // from the start to the last ack
  int64_t ack_errors = 0;
  absl::Status error;
};
ConsumeResult Consume(Scheduler& scheduler, const std::string& topic,
                      int concurrency, int batch, bool chained, Tally& tally,
                      std::atomic<int64_t>& done);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_COMMON_H_
