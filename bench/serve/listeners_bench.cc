// Copyright delayq authors.
//
// What the event listeners of `delayq serve` cost a job: enqueue, reserve
// and ack in batches of 100 on the memory store, with no listener, with the
// metrics attached, and with the metrics and the store's event log (as the
// server runs: the scheduler's default). One process, no HTTP, under the
// programs' runtime policy.
//
//   bazel run -c opt //bench:listeners_bench

#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "delayq/delayq.h"
#include "tools/common/runtime_policy.h"

namespace delayq {
namespace {

constexpr char kTopic[] = "bench";
constexpr int kBatch = 100;

enum Listeners { kNone, kMetrics, kMetricsAndEventLog };

void BM_BatchLifecycle(benchmark::State& state) {
  SetRuntimePolicy();
  const auto listeners = static_cast<Listeners>(state.range(0));
  Metrics metrics;
  SchedulerOptions options;
  options.event_log = listeners == kMetricsAndEventLog;
  std::unique_ptr<Scheduler> scheduler =
      Scheduler::Create(metrics.Instrument(NewMemoryBackend()), options)
          .value();
  if (listeners != kNone) metrics.Attach(*scheduler);
  // Writing as the server does: by the writer's own thread.
  if (!scheduler->Start().ok()) std::abort();
  const std::vector<std::string> payloads(kBatch, "{\"order\":12345}");
  for (auto _ : state) {
    if (!scheduler->EnqueueBatch(kTopic, payloads).ok()) std::abort();
    absl::StatusOr<std::vector<Lease>> leases =
        scheduler->ReserveBatch(kTopic, kBatch);
    if (!leases.ok() || leases->size() != kBatch) std::abort();
    if (!scheduler->AckBatch(*leases).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_BatchLifecycle)
    ->ArgName("listeners")
    ->Arg(kNone)
    ->Arg(kMetrics)
    ->Arg(kMetricsAndEventLog);

}  // namespace
}  // namespace delayq
