// Copyright delayq authors.
//
// What the event listeners of `delayq serve` cost a job: enqueue, reserve
// and ack in batches of 100 on the memory store, with no listener, with the
// metrics attached, and with the metrics and the job history (as the
// server runs). One process, no HTTP, under the programs' runtime policy.
//
//   bazel run -c opt //bench:listeners_bench

#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "delayq/delayq.h"
#include "tools/common/runtime_policy.h"
#include "tools/serve/api/job_history.h"
#include "tools/serve/server.h"

namespace delayq {
namespace {

constexpr char kTopic[] = "bench";
constexpr int kBatch = 100;

enum Listeners { kNone, kMetrics, kMetricsAndHistory };

void BM_BatchLifecycle(benchmark::State& state) {
  SetRuntimePolicy();
  const auto listeners = static_cast<Listeners>(state.range(0));
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler =
      Scheduler::Create(metrics.Instrument(NewMemoryBackend())).value();
  if (listeners != kNone) metrics.Attach(*scheduler);
  // The server's default bounds.
  serve::JobHistory history(serve::ServeOptions().history_events);
  if (listeners == kMetricsAndHistory) {
    scheduler->AddBatchListener(
        [&](absl::Span<const Event> events) { history.RecordAll(events); });
  }
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
    ->Arg(kMetricsAndHistory);

}  // namespace
}  // namespace delayq
