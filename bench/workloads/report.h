// Copyright delayq authors.
//
// report.h — what one workload run measured, printed as one JSON line or as a
// readable table, plus the small helpers every workload shares: latency
// distributions, delivery tallies and a progress line.
//
// A JSON line looks like
//   {"system": "delayq-redis", "workload": "w2", "params": {"n": 20000},
//    "metrics": {"lateness_ms": {"p50": 1.1, "p99": 3.0, "max": 9.2},
//                "duplicates": 0, "missing": 0}, "peak_rss_kb": 51234}
// so runs of different systems can be compared and plotted.

#ifndef DELAYQ_BENCH_WORKLOADS_REPORT_H_
#define DELAYQ_BENCH_WORKLOADS_REPORT_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace delayq {
namespace bench {

// Report
//
// Values are kept already encoded as JSON, in the order they were added.
class Report {
 public:
  Report(absl::string_view system, absl::string_view workload);

  void Param(absl::string_view name, int64_t value);
  void Param(absl::string_view name, absl::string_view value);
  void Metric(absl::string_view name, int64_t value);
  void Metric(absl::string_view name, double value);
  // A nested object, e.g. Distribution() or a map of counts.
  void MetricJson(absl::string_view name, std::string json);

  // One line, no trailing newline; peak_rss_kb is read when called.
  std::string ToJson() const;
  // A few indented lines for a person.
  void PrintTable(FILE* out) const;

 private:
  std::string system_;
  std::string workload_;
  std::vector<std::pair<std::string, std::string>> params_;
  std::vector<std::pair<std::string, std::string>> metrics_;
};

// Prints every report as JSON lines or tables on stdout.
void Emit(const std::vector<Report>& reports, bool json);

// The process's peak resident set so far, in KiB (getrusage).
int64_t PeakRssKb();

// A JSON string literal.
std::string JsonString(absl::string_view s);
// A JSON number: integers stay integers, others get 3 decimals.
std::string JsonNumber(double value);

// Distribution()
//
// {"p50": .., "p99": .., "max": .., "count": ..} of `values` (nearest-rank
// percentiles); all zero when empty. Sorts `values`.
std::string Distribution(std::vector<double>& values);

// Tally
//
// Counts deliveries per job index, from any thread. A job delivered twice is
// a duplicate; a job never delivered is missing.
class Tally {
 public:
  explicit Tally(int64_t n);

  // Records a delivery of job `index` and returns how many times it has now
  // been delivered (1 on the first). Out-of-range indexes count as strays.
  int Deliver(int64_t index);

  int64_t delivered() const { return delivered_.load(); }
  int64_t Duplicates() const;
  int64_t Missing() const;
  int64_t strays() const { return strays_.load(); }

 private:
  std::unique_ptr<std::atomic<int>[]> counts_;
  int64_t n_;
  std::atomic<int64_t> delivered_{0};
  std::atomic<int64_t> strays_{0};
};

// Progress
//
// While alive, rewrites one stderr line every 250 ms:
//   "w1 consume: 41200/100000 (20600/s)"
// and clears it when destroyed.
class Progress {
 public:
  Progress(std::string label, int64_t total, const std::atomic<int64_t>* done);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  void Run();

  std::string label_;
  int64_t total_;
  const std::atomic<int64_t>* done_;
  absl::Time start_;
  absl::Notification stop_;
  std::thread thread_;
};

// StallProbe
//
// While alive, sleeps 1 ms at a time and records how much longer each sleep
// took: how often and how long the machine kept this process off the CPU
// (other load on a shared host). Lets a reader tell a late job caused by
// the host from one caused by the queue.
class StallProbe {
 public:
  StallProbe();
  ~StallProbe();
  StallProbe(const StallProbe&) = delete;
  StallProbe& operator=(const StallProbe&) = delete;

  // Stops the probe and returns Distribution() of the oversleeps in ms.
  std::string Finish();

 private:
  void Join();

  absl::Notification stop_;
  std::vector<double> oversleep_ms_;
  std::thread thread_;
};

// Parses a job index written as the payload's decimal prefix (up to '|');
// -1 when there is none.
int64_t ParseIndex(absl::string_view payload);

// BaselineConsumed
//
// What a baseline's W1 consumer process counted, as it prints it on one
// line: "consumed DELIVERED ELAPSED_NS DUPLICATES MISSING ERRORS" (the
// line of consumer_process.h's consume role).
struct BaselineConsumed {
  int64_t delivered = 0;
  int64_t elapsed_ns = 0;
  int64_t duplicates = 0;
  int64_t missing = 0;
  int64_t errors = 0;
};
std::string ConsumedLine(const BaselineConsumed& c);
absl::StatusOr<BaselineConsumed> ParseConsumedLine(absl::string_view line);

// The W1 report of a baseline with a producer and a consumer process, one
// job per call, as `workloads --workload=w1 --w1_mode=single` reports.
Report BaselineW1Report(absl::string_view system, int64_t n, int concurrency,
                        double enqueue_s, const BaselineConsumed& consumed);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_REPORT_H_
