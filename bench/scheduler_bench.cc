// Copyright delayq authors.
//
// The scheduler on the memory store, from one thread: what the API itself
// costs (validation, ids, the store's indexes, timers) with no I/O.
//
//   bazel run -c opt //bench:scheduler_bench

#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "delayq/delayq.h"

namespace delayq {
namespace {

constexpr char kTopic[] = "bench";
const std::string kPayload(64, 'x');

std::unique_ptr<Scheduler> NewScheduler() {
  return Scheduler::Create(NewMemoryBackend()).value();
}

void Fill(Scheduler& scheduler, int n) {
  std::vector<std::string> payloads(1000, kPayload);
  for (int done = 0; done < n; done += 1000) {
    if (!scheduler.EnqueueBatch(kTopic, payloads).ok()) std::abort();
  }
}

void BM_EnqueueSingle(benchmark::State& state) {
  auto scheduler = NewScheduler();
  for (auto _ : state) {
    benchmark::DoNotOptimize(scheduler->Enqueue(kTopic, kPayload));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EnqueueSingle);

void BM_EnqueueDelayedSingle(benchmark::State& state) {
  auto scheduler = NewScheduler();
  JobOptions options;
  options.delay = absl::Minutes(30);
  for (auto _ : state) {
    benchmark::DoNotOptimize(scheduler->Enqueue(kTopic, kPayload, options));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EnqueueDelayedSingle);

void BM_EnqueueBatch(benchmark::State& state) {
  auto scheduler = NewScheduler();
  std::vector<std::string> payloads(state.range(0), kPayload);
  for (auto _ : state) {
    benchmark::DoNotOptimize(scheduler->EnqueueBatch(kTopic, payloads));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_EnqueueBatch)->Arg(100)->Arg(1000);

void BM_ReserveAckSingle(benchmark::State& state) {
  auto scheduler = NewScheduler();
  int left = 0;
  for (auto _ : state) {
    if (left == 0) {
      state.PauseTiming();
      Fill(*scheduler, 100000);
      left = 100000;
      state.ResumeTiming();
    }
    absl::StatusOr<std::optional<Lease>> lease = scheduler->Reserve(kTopic);
    if (!lease.ok() || !lease->has_value()) std::abort();
    if (!scheduler->Ack(**lease).ok()) std::abort();
    --left;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReserveAckSingle);

void BM_ReserveAckBatch(benchmark::State& state) {
  auto scheduler = NewScheduler();
  const int batch = static_cast<int>(state.range(0));
  int left = 0;
  for (auto _ : state) {
    if (left < batch) {
      state.PauseTiming();
      Fill(*scheduler, 100000);
      left += 100000;
      state.ResumeTiming();
    }
    absl::StatusOr<std::vector<Lease>> leases =
        scheduler->ReserveBatch(kTopic, batch);
    if (!leases.ok() || leases->size() != static_cast<size_t>(batch)) {
      std::abort();
    }
    absl::StatusOr<std::vector<absl::Status>> acked =
        scheduler->AckBatch(*leases);
    if (!acked.ok()) std::abort();
    for (const absl::Status& s : *acked) {
      if (!s.ok()) std::abort();
    }
    left -= batch;
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ReserveAckBatch)->Arg(100);

// Enqueue, reserve and ack one job at a time: a job's whole life.
void BM_LifecycleSingle(benchmark::State& state) {
  auto scheduler = NewScheduler();
  for (auto _ : state) {
    if (!scheduler->Enqueue(kTopic, kPayload).ok()) std::abort();
    absl::StatusOr<std::optional<Lease>> lease = scheduler->Reserve(kTopic);
    if (!lease.ok() || !lease->has_value()) std::abort();
    if (!scheduler->Ack(**lease).ok()) std::abort();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LifecycleSingle);

}  // namespace
}  // namespace delayq
