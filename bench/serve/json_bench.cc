// Copyright delayq authors.
//
// The API's bulk JSON, in one process with no server: an ack list of N
// leases as serve_bench's clients send it, read straight from its text (the
// quick way) against the general way, a parsed JSON tree read field by
// field; and a reserve's reply of N leases written.
//
//   bazel run -c opt //bench:json_bench

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "tools/serve/api/ack_list.h"
#include "tools/serve/api/json_codec.h"

namespace delayq {
namespace serve {
namespace {

std::string AckListBody(int n) {
  std::string list;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&list, i ? "," : "", "{\"id\":\"5f3a9c01b2d4-", 1000 + i,
                    "\",\"token\":\"", 123456789012 + i, "\"}");
  }
  return absl::StrCat("{\"leases\":[", list, "]}");
}

void BM_AckListQuick(benchmark::State& state) {
  const std::string body = AckListBody(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ReadAckList(body));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_AckListTree(benchmark::State& state) {
  const std::string body = AckListBody(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(AckListFromJson(*ParseBody(body)));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// A lease as a reserve of the memory store hands it out: default options,
// a generated id, a small payload.
Lease TypicalLease(int i) {
  Lease lease;
  lease.job.id = absl::StrCat("5f3a9c01b2d4-", 1000 + i);
  lease.job.topic = "orders.unpaid";
  lease.job.payload = "{\"order\":12345}";
  lease.job.state = JobState::kReserved;
  lease.job.attempts = 1;
  lease.job.enqueued_at = absl::FromUnixMillis(1'790'000'000'000 + i);
  lease.job.run_at = lease.job.enqueued_at + absl::Minutes(30);
  lease.deadline = lease.job.run_at + absl::Seconds(30);
  lease.job.deadline = lease.deadline;
  lease.token = 123456789012 + i;
  return lease;
}

void BM_LeasesWritten(benchmark::State& state) {
  std::vector<Lease> leases;
  for (int i = 0; i < state.range(0); ++i) leases.push_back(TypicalLease(i));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        JsonListText<Lease>("leases", leases, &AppendLeaseJson));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_AckListQuick)->Arg(100)->Arg(1000);
BENCHMARK(BM_AckListTree)->Arg(100)->Arg(1000);
BENCHMARK(BM_LeasesWritten)->Arg(100);

}  // namespace
}  // namespace serve
}  // namespace delayq
