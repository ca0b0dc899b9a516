// Copyright delayq authors.
//
// fan_in — a fan-out of many children and one fan-in, in the deployment
// shape: this process enqueues, a consumer process of its own works.
//
//   bazel run -c opt //bench:fan_in -- --store=sqlite:/tmp/f.db
//   bazel run -c opt //bench:fan_in -- --store=postgres://... --children=10000
//       --rounds=10 --concurrency=8 --json
//
// Rounds alternate between two kinds, on fresh topics each:
//   flow   --children jobs and a parent that waits for all of them, in one
//          Scheduler::EnqueueFlow() call;
//   plain  the same number of jobs, none waiting, in one EnqueueBatch().
// Each round then starts this binary again as the consumer (--role): C
// threads Reserve() and Ack() the children one at a time; in a flow round
// one more thread waits in Reserve() for the parent from the start, so only
// the store's news of the last child's ack can bring it early.
//
// Reported: the enqueue and consume rates of both kinds (what the
// dependency bookkeeping costs per job is their ratio), and over the flow
// rounds the fan-in latency: from the start of the last child's Ack() call
// (the call that releases the parent; the parent may reach its waiting
// thread before that call returns) to the parent's delivery. Both
// processes read the same machine's clock.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/workloads/report.h"
#include "delayq/delayq.h"
#include "tests/testing/child_process.h"

ABSL_FLAG(std::string, store, "", "store URL: sqlite:PATH, postgres://...");
ABSL_FLAG(int, children, 10000, "children per round");
ABSL_FLAG(int, rounds, 10, "rounds, alternating flow and plain");
ABSL_FLAG(int, concurrency, 8, "consumer threads for the children");
ABSL_FLAG(bool, json, false, "print one JSON object per line");
ABSL_FLAG(std::string, role, "", "internal: run as the consumer process");
ABSL_FLAG(std::string, role_tag, "", "internal: the round's topic tag");
ABSL_FLAG(bool, role_parent, false, "internal: a parent waits");

namespace delayq {
namespace bench {
namespace {

std::string Kids(const std::string& tag) { return "fan.kids." + tag; }
std::string Parents(const std::string& tag) { return "fan.parent." + tag; }

absl::StatusOr<std::unique_ptr<Scheduler>> Open(const std::string& url) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
  if (!backend.ok()) return backend.status();
  return Scheduler::Create(*std::move(backend), SchedulerOptions{});
}

// --- The consumer process --------------------------------------------------

// Prints "done CONSUMED ELAPSED_NS LAST_ACK_START_NS PARENT_NS ERRORS"
// (PARENT_NS 0 without a parent) once `children` children were acked and,
// with a parent, the parent was delivered.
int RunConsumer(const std::string& url, const std::string& tag, int children,
                int concurrency, bool parent) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = Open(url);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 2;
  }
  Scheduler& scheduler = **opened;
  std::atomic<int64_t> parent_at{0};
  std::thread parent_thread;
  if (parent) {
    parent_thread = std::thread([&] {
      absl::StatusOr<std::optional<Lease>> got =
          scheduler.Reserve(Parents(tag), absl::Minutes(10));
      if (got.ok() && got->has_value()) {
        parent_at = absl::ToUnixNanos(absl::Now());
        scheduler.Ack(**got).IgnoreError();
      }
    });
  }
  std::atomic<int> consumed{0};
  std::atomic<int> errors{0};
  absl::Mutex mu;
  int64_t last_ack_start = 0;
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      while (consumed.load() < children) {
        absl::StatusOr<std::optional<Lease>> lease =
            scheduler.Reserve(Kids(tag), absl::Milliseconds(200));
        if (!lease.ok()) {
          ++errors;
          return;
        }
        if (!lease->has_value()) continue;
        const int64_t ack_start = absl::ToUnixNanos(absl::Now());
        if (!scheduler.Ack(**lease).ok()) {
          ++errors;
          continue;
        }
        if (consumed.fetch_add(1) + 1 == children) {
          absl::MutexLock lock(&mu);
          last_ack_start = ack_start;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const absl::Duration elapsed = absl::Now() - start;
  if (parent) parent_thread.join();
  std::printf("done %d %lld %lld %lld %d\n", consumed.load(),
              static_cast<long long>(absl::ToInt64Nanoseconds(elapsed)),
              static_cast<long long>(last_ack_start),
              static_cast<long long>(parent_at.load()), errors.load());
  std::fflush(stdout);
  return 0;
}

// --- The producer ----------------------------------------------------------

struct Round {
  bool flow = false;
  double enqueue_per_s = 0;
  double consume_per_s = 0;
  double fan_in_ms = 0;  // flow rounds only
  int errors = 0;
};

absl::StatusOr<Round> RunRound(Scheduler& scheduler, const std::string& url,
                               int index, bool flow, int children,
                               int concurrency) {
  const std::string tag =
      absl::StrCat(absl::ToUnixMillis(absl::Now()), "-", index);
  Round round;
  round.flow = flow;
  const absl::Time enqueue_start = absl::Now();
  if (flow) {
    std::vector<Scheduler::FlowJob> jobs(children + 1);
    Scheduler::FlowJob& parent = jobs[children];
    parent.topic = Parents(tag);
    parent.options.id = "parent-" + tag;
    for (int i = 0; i < children; ++i) {
      jobs[i].topic = Kids(tag);
      jobs[i].options.id = absl::StrCat("kid-", tag, "-", i);
      parent.options.after.push_back(jobs[i].options.id);
    }
    if (children > kMaxDependencies) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--children must be at most ", kMaxDependencies, " for one parent"));
    }
    absl::StatusOr<std::vector<std::string>> ids = scheduler.EnqueueFlow(jobs);
    if (!ids.ok()) return ids.status();
  } else {
    std::vector<std::string> payloads(children);
    absl::StatusOr<std::vector<std::string>> ids =
        scheduler.EnqueueBatch(Kids(tag), payloads);
    if (!ids.ok()) return ids.status();
  }
  round.enqueue_per_s =
      children / absl::ToDoubleSeconds(absl::Now() - enqueue_start);

  testing::ChildProcess consumer(
      {"/proc/self/exe", absl::StrCat("--store=", url), "--role=consumer",
       absl::StrCat("--role_tag=", tag), absl::StrCat("--children=", children),
       absl::StrCat("--concurrency=", concurrency),
       absl::StrCat("--role_parent=", flow ? "true" : "false")});
  if (!consumer.started()) {
    return absl::InternalError("could not start the consumer process");
  }
  std::optional<std::string> line =
      consumer.ReadLineStartingWith("done ", absl::Minutes(10));
  if (!line.has_value()) {
    return absl::DeadlineExceededError("the consumer did not finish");
  }
  std::vector<std::string> f = absl::StrSplit(*line, ' ');
  int64_t consumed = 0, elapsed_ns = 0, last_ack = 0, parent_at = 0;
  if (f.size() != 6 || !absl::SimpleAtoi(f[1], &consumed) ||
      !absl::SimpleAtoi(f[2], &elapsed_ns) ||
      !absl::SimpleAtoi(f[3], &last_ack) ||
      !absl::SimpleAtoi(f[4], &parent_at) ||
      !absl::SimpleAtoi(f[5], &round.errors)) {
    return absl::InternalError("the consumer said: " + *line);
  }
  consumer.Finish();
  round.consume_per_s = consumed / (elapsed_ns / 1e9);
  if (flow) {
    if (parent_at == 0) {
      return absl::InternalError("the parent was never delivered");
    }
    round.fan_in_ms = (parent_at - last_ack) / 1e6;
  }
  return round;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int RunProducer(const std::string& url, int children, int rounds,
                int concurrency, bool json) {
  absl::StatusOr<std::unique_ptr<Scheduler>> opened = Open(url);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 2;
  }
  std::vector<double> enqueue[2], consume[2], fan_in;
  int errors = 0;
  for (int r = 0; r < rounds; ++r) {
    const bool flow = r % 2 == 0;
    absl::StatusOr<Round> round =
        RunRound(**opened, url, r, flow, children, concurrency);
    if (!round.ok()) {
      std::fprintf(stderr, "round %d: %s\n", r,
                   round.status().ToString().c_str());
      return 1;
    }
    std::fprintf(
        stderr, "round %d (%s): enqueue %.0f/s, consume %.0f/s%s\n", r,
        flow ? "flow" : "plain", round->enqueue_per_s, round->consume_per_s,
        flow ? absl::StrCat(", fan-in ", round->fan_in_ms, " ms").c_str() : "");
    enqueue[flow].push_back(round->enqueue_per_s);
    consume[flow].push_back(round->consume_per_s);
    if (flow) fan_in.push_back(round->fan_in_ms);
    errors += round->errors;
  }
  Report report(absl::StrCat("delayq-", (*opened)->backend().Name()), "fan_in");
  report.Param("shape", "two-process");
  report.Param("children", children);
  report.Param("rounds", rounds);
  report.Param("concurrency", concurrency);
  report.MetricJson("fan_in_ms", Distribution(fan_in));
  report.Metric("flow_enqueue_jobs_per_s", Median(enqueue[1]));
  report.Metric("plain_enqueue_jobs_per_s", Median(enqueue[0]));
  report.Metric("flow_consume_jobs_per_s", Median(consume[1]));
  report.Metric("plain_consume_jobs_per_s", Median(consume[0]));
  report.Metric("errors", static_cast<int64_t>(errors));
  Emit({report}, json);
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace bench
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string url = absl::GetFlag(FLAGS_store);
  if (url.empty() || url.rfind("memory:", 0) == 0) {
    std::fprintf(stderr,
                 "--store=URL of a store processes share (sqlite:, redis://, "
                 "postgres://)\n");
    return 2;
  }
  const int children = absl::GetFlag(FLAGS_children);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  if (children < 1 || concurrency < 1 || absl::GetFlag(FLAGS_rounds) < 1) {
    std::fprintf(stderr, "--children, --concurrency, --rounds: at least 1\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_role) == "consumer") {
    return delayq::bench::RunConsumer(url, absl::GetFlag(FLAGS_role_tag),
                                      children, concurrency,
                                      absl::GetFlag(FLAGS_role_parent));
  }
  return delayq::bench::RunProducer(url, children, absl::GetFlag(FLAGS_rounds),
                                    concurrency, absl::GetFlag(FLAGS_json));
}
