// Copyright delayq authors.
//
// An ack list of N leases, as serve_bench's clients send it, read straight
// from its text (the quick way) against the general way, a parsed JSON tree
// read field by field. One process, no server: the reading alone.
//
//   bazel run -c opt //bench:ack_list_bench

#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "tools/serve/ack_list.h"

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

BENCHMARK(BM_AckListQuick)->Arg(100)->Arg(1000);
BENCHMARK(BM_AckListTree)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace serve
}  // namespace delayq
