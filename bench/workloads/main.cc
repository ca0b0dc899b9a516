// Copyright delayq authors.
//
// The workload runner: one standard workload on one store.
//
//   bazel run -c opt //bench:workloads -- --store=memory: --workload=w1
//   bazel run -c opt //bench:workloads -- --store=sqlite:/tmp/w.db \
//       --workload=w2 --n=20000 --json
//   bazel run -c opt //bench:workloads -- --store=redis://127.0.0.1:6379 \
//       --workload=w3 --concurrency=4
//
// A redis:// store needs a running server; bench/run_all.sh starts one.
// Progress goes to stderr; results to stdout, as a table or (--json) one
// JSON object per line.

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/workloads.h"

ABSL_FLAG(std::string, store,
          "memory:", "store URL: memory:, sqlite:PATH or redis://HOST:PORT");
ABSL_FLAG(std::string, workload, "w1", "w1, w2, w3 or idle (Redis only)");
ABSL_FLAG(int64_t, n, -1,
          "jobs (default: w1 100000, w2 20000, w3 1000, idle 100000)");
ABSL_FLAG(int, concurrency, 4, "consumer threads / handler workers");
ABSL_FLAG(int, batch, 100, "w1: jobs per batched enqueue and reserve");
ABSL_FLAG(int, lead_ms, 2000, "w2: time from start to the first due time");
ABSL_FLAG(int, window_s, 10, "idle: seconds to count Redis commands");
ABSL_FLAG(bool, json, false, "print one JSON object per line");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs a standard delayq workload: --store=URL --workload=w1|w2|w3|idle");
  absl::ParseCommandLine(argc, argv);
  using delayq::bench::WorkloadConfig;

  WorkloadConfig config;
  config.store_url = absl::GetFlag(FLAGS_store);
  const std::string workload = absl::GetFlag(FLAGS_workload);
  config.n = absl::GetFlag(FLAGS_n);
  config.concurrency = absl::GetFlag(FLAGS_concurrency);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.lead = absl::Milliseconds(absl::GetFlag(FLAGS_lead_ms));
  config.window = absl::Seconds(absl::GetFlag(FLAGS_window_s));
  config.run_tag = absl::StrCat(absl::ToUnixMillis(absl::Now()));
  if (config.concurrency < 1 || config.batch < 1 || config.n == 0 ||
      config.lead < absl::ZeroDuration() ||
      config.window <= absl::ZeroDuration()) {
    std::fprintf(stderr,
                 "--concurrency, --batch, --n and --window_s must be positive, "
                 "--lead_ms not negative\n");
    return 2;
  }

  absl::StatusOr<std::vector<delayq::bench::Report>> reports;
  auto default_n = [&](int64_t n) {
    if (config.n < 0) config.n = n;
  };
  if (workload == "w1") {
    default_n(100000);
    reports = delayq::bench::RunW1(config);
  } else if (workload == "w2") {
    default_n(20000);
    reports = delayq::bench::RunW2(config);
  } else if (workload == "w3") {
    default_n(1000);
    reports = delayq::bench::RunW3(config);
  } else if (workload == "idle") {
    default_n(100000);
    reports = delayq::bench::RunIdle(config);
  } else {
    std::fprintf(stderr, "unknown --workload=%s (w1, w2, w3 or idle)\n",
                 workload.c_str());
    return 2;
  }
  if (!reports.ok()) {
    std::fprintf(stderr, "%s on %s failed: %s\n", workload.c_str(),
                 config.store_url.c_str(), reports.status().ToString().c_str());
    return 1;
  }
  delayq::bench::Emit(*reports, absl::GetFlag(FLAGS_json));
  return 0;
}
