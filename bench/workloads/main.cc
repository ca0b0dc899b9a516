// Copyright delayq authors.
//
// The workload runner: one standard workload on one store.
//
//   bazel run -c opt //bench:workloads -- --store=memory: --workload=w1
//   bazel run -c opt //bench:workloads -- --store=sqlite:/tmp/w.db
//       --workload=w2 --n=20000 --json
//   bazel run -c opt //bench:workloads -- --store=redis://127.0.0.1:6379
//       --workload=w3 --concurrency=4
//
// (each command on one line)
//
// A redis:// or postgres:// store needs a running server; bench/run_all.sh
// starts both.
// Progress goes to stderr; results to stdout, as a table or (--json) one
// JSON object per line.

#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/consumer_process.h"
#include "bench/workloads/workloads.h"

ABSL_FLAG(std::string, store, "memory:",
          "store URL: memory:, sqlite:PATH, redis://HOST:PORT or "
          "postgres://...");
ABSL_FLAG(std::string, workload, "w1",
          "w1, w2, w3, w4 or idle (Redis or PostgreSQL)");
ABSL_FLAG(std::string, shape, "",
          "two-process (consumers in a process of their own; the default for "
          "every store but memory:) or one-process (one scheduler "
          "produces and consumes; the only shape of memory:)");
// The consumer process's own flags (see consumer_process.h).
ABSL_FLAG(std::string, role, "", "internal: run as a consumer process");
ABSL_FLAG(std::string, role_topic, "", "internal: the consumer's topic");
ABSL_FLAG(int64_t, role_linger_ms, 500, "internal: the handler's linger");
ABSL_FLAG(int64_t, role_give_up_unix_ms, 0, "internal: the handler's end");
ABSL_FLAG(int64_t, n, -1,
          "jobs (default: w1 100000, w2 20000, w3 1000, w4 1000, idle 100000)");
ABSL_FLAG(int, concurrency, 4, "consumer threads / handler workers");
ABSL_FLAG(int, batch, 100, "w1: jobs per batched enqueue and reserve");
ABSL_FLAG(std::string, w1_mode, "both",
          "w1: single (one job per call), batch, both (single and batch), "
          "chained (one job per call, each ack reserving the next) or all");
ABSL_FLAG(int, lead_ms, 2000, "w2: time from start to the first due time");
ABSL_FLAG(int, window_s, 10, "idle: seconds to count the server's work");
ABSL_FLAG(bool, json, false, "print one JSON object per line");
ABSL_FLAG(bool, event_log, true,
          "the schedulers write the store's event log (false: to measure "
          "what it costs)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs a standard delayq workload: --store=URL --workload=w1|w2|w3|idle");
  absl::ParseCommandLine(argc, argv);
  using delayq::bench::WorkloadConfig;

  WorkloadConfig config;
  config.store_url = absl::GetFlag(FLAGS_store);
  config.event_log = absl::GetFlag(FLAGS_event_log);
  const std::string workload = absl::GetFlag(FLAGS_workload);
  config.n = absl::GetFlag(FLAGS_n);
  config.concurrency = absl::GetFlag(FLAGS_concurrency);
  config.batch = absl::GetFlag(FLAGS_batch);
  const std::string w1_mode = absl::GetFlag(FLAGS_w1_mode);
  const bool all = w1_mode == "all";
  config.w1_single = w1_mode == "single" || w1_mode == "both" || all;
  config.w1_batched = w1_mode == "batch" || w1_mode == "both" || all;
  config.w1_chained = w1_mode == "chained" || all;
  config.lead = absl::Milliseconds(absl::GetFlag(FLAGS_lead_ms));
  config.window = absl::Seconds(absl::GetFlag(FLAGS_window_s));
  config.run_tag = absl::StrCat(absl::ToUnixMillis(absl::Now()));
  const std::string shape = absl::GetFlag(FLAGS_shape);
  const bool shared_store = !absl::StartsWith(config.store_url, "memory:");
  if (shape.empty()) {
    config.two_process = shared_store;
  } else if (shape == "two-process" || shape == "one-process") {
    config.two_process = shape == "two-process";
  } else {
    std::fprintf(stderr, "--shape is two-process or one-process\n");
    return 2;
  }
  if (config.two_process && !shared_store) {
    std::fprintf(stderr,
                 "a memory: store lives in one process: --shape=one-process\n");
    return 2;
  }
  if (!absl::GetFlag(FLAGS_role).empty()) {
    delayq::bench::ConsumerArgs args;
    args.role = absl::GetFlag(FLAGS_role);
    args.topic = absl::GetFlag(FLAGS_role_topic);
    args.n = config.n;
    args.concurrency = config.concurrency;
    args.batch = config.batch;
    args.linger = absl::Milliseconds(absl::GetFlag(FLAGS_role_linger_ms));
    const int64_t give_up_ms = absl::GetFlag(FLAGS_role_give_up_unix_ms);
    if (give_up_ms > 0) args.give_up = absl::FromUnixMillis(give_up_ms);
    return delayq::bench::RunConsumerRole(config, args);
  }
  if (!config.w1_single && !config.w1_batched && !config.w1_chained) {
    std::fprintf(stderr, "--w1_mode is single, batch, both, chained or all\n");
    return 2;
  }
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
  } else if (workload == "w4") {
    default_n(1000);
    reports = delayq::bench::RunW4(config);
  } else if (workload == "idle") {
    default_n(100000);
    reports = delayq::bench::RunIdle(config);
  } else {
    std::fprintf(stderr, "unknown --workload=%s (w1, w2, w3, w4 or idle)\n",
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
