// Copyright delayq authors.
//
// W1, ready throughput: enqueue N immediate jobs, then consume them with C
// threads that reserve and ack. Run twice on fresh topics: one job per call
// (Enqueue, Reserve, Ack), and batched (EnqueueBatch and ReserveBatch of
// `batch` jobs, then one AckBatch of them); and, when asked, chained: one
// job per call, each ack reserving the thread's next job (AckAndReserve).

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/workloads/common.h"
#include "bench/workloads/consumer_process.h"

namespace delayq {
namespace bench {
namespace {

// How long a consumer waits on an empty topic before it decides the run is
// over. Every job is ready before consuming starts, so empty means done.
constexpr absl::Duration kDrainWait = absl::Milliseconds(300);

// Acks `leases` (one AckBatch for several); returns how many were refused.
int64_t AckAll(Scheduler& scheduler, const std::vector<Lease>& leases) {
  if (leases.size() == 1) return scheduler.Ack(leases[0]).ok() ? 0 : 1;
  absl::StatusOr<std::vector<absl::Status>> acked = scheduler.AckBatch(leases);
  if (!acked.ok()) return static_cast<int64_t>(leases.size());
  return std::count_if(acked->begin(), acked->end(),
                       [](const absl::Status& s) { return !s.ok(); });
}

// Moves `last_ack_nanos` up to now.
void MarkAck(std::atomic<int64_t>& last_ack_nanos) {
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t seen = last_ack_nanos.load();
  while (seen < now && !last_ack_nanos.compare_exchange_weak(seen, now)) {
  }
}

}  // namespace

ConsumeResult Consume(Scheduler& scheduler, const std::string& topic,
                      int concurrency, int batch, bool chained, Tally& tally,
                      std::atomic<int64_t>& done) {
  const absl::Time start = absl::Now();
  std::atomic<int64_t> last_ack_nanos{0};
  std::atomic<int64_t> ack_errors{0};
  absl::Mutex mu;
  absl::Status first_error;
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      // Chained: the lease the last ack reserved, taken first.
      std::optional<Lease> next;
      for (;;) {
        std::vector<Lease> leases;
        if (chained) {
          if (!next.has_value()) {
            absl::StatusOr<std::optional<Lease>> got =
                scheduler.Reserve(topic, kDrainWait);
            if (!got.ok()) {
              absl::MutexLock lock(&mu);
              if (first_error.ok()) first_error = got.status();
              return;
            }
            next = *std::move(got);
          }
          if (!next.has_value()) return;
          const Lease lease = *std::move(next);
          next.reset();
          tally.Deliver(ParseIndex(lease.job.payload));
          Scheduler::AckedAndNext step =
              scheduler.AckAndReserve(lease, topic, kDrainWait);
          if (!step.acked.ok()) ack_errors.fetch_add(1);
          done.fetch_add(1);
          MarkAck(last_ack_nanos);
          if (!step.next.ok()) {
            absl::MutexLock lock(&mu);
            if (first_error.ok()) first_error = step.next.status();
            return;
          }
          next = *std::move(step.next);
          if (!next.has_value()) return;
          continue;
        }
        if (batch > 1) {
          absl::StatusOr<std::vector<Lease>> got =
              scheduler.ReserveBatch(topic, batch, kDrainWait);
          if (!got.ok()) {
            absl::MutexLock lock(&mu);
            if (first_error.ok()) first_error = got.status();
            return;
          }
          leases = *std::move(got);
        } else {
          absl::StatusOr<std::optional<Lease>> got =
              scheduler.Reserve(topic, kDrainWait);
          if (!got.ok()) {
            absl::MutexLock lock(&mu);
            if (first_error.ok()) first_error = got.status();
            return;
          }
          if (got->has_value()) leases.push_back(**std::move(got));
        }
        if (leases.empty()) return;
        for (const Lease& lease : leases) {
          tally.Deliver(ParseIndex(lease.job.payload));
        }
        ack_errors.fetch_add(AckAll(scheduler, leases));
        done.fetch_add(static_cast<int64_t>(leases.size()));
        MarkAck(last_ack_nanos);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ConsumeResult result;
  const int64_t last = last_ack_nanos.load();
  result.elapsed =
      last == 0 ? absl::ZeroDuration() : absl::FromUnixNanos(last) - start;
  result.ack_errors = ack_errors.load();
  result.error = first_error;
  return result;
}

namespace {

// What the consumers did, counted where they ran.
struct Consumed {
  ConsumeResult result;
  int64_t delivered = 0;
  int64_t duplicates = 0;
  int64_t missing = 0;
};

// Consumes in a consumer process (two-process shape).
absl::StatusOr<Consumed> ConsumeElsewhere(const WorkloadConfig& config,
                                          const std::string& topic, int batch,
                                          bool chained) {
  ConsumerArgs args;
  args.role = chained ? "consume_chained" : "consume";
  args.topic = topic;
  args.n = config.n;
  args.concurrency = config.concurrency;
  args.batch = batch;
  absl::StatusOr<std::unique_ptr<ConsumerProcess>> consumer =
      ConsumerProcess::Start(config, args);
  if (!consumer.ok()) return consumer.status();
  absl::StatusOr<std::string> line = (*consumer)->ReadLine(absl::Minutes(30));
  if (!line.ok()) return line.status();
  std::vector<absl::string_view> f = absl::StrSplit(*line, ' ');
  int64_t elapsed_ns;
  Consumed c;
  if (f.size() != 6 || f[0] != "consumed" ||
      !absl::SimpleAtoi(f[1], &c.delivered) ||
      !absl::SimpleAtoi(f[2], &elapsed_ns) ||
      !absl::SimpleAtoi(f[3], &c.duplicates) ||
      !absl::SimpleAtoi(f[4], &c.missing) ||
      !absl::SimpleAtoi(f[5], &c.result.ack_errors)) {
    return absl::InternalError(absl::StrCat("consumer said '", *line, "'"));
  }
  c.result.elapsed = absl::Nanoseconds(elapsed_ns);
  return c;
}

Consumed ConsumeHere(Scheduler& scheduler, const WorkloadConfig& config,
                     const std::string& topic, int batch, bool chained,
                     std::atomic<int64_t>& done) {
  Tally tally(config.n);
  Consumed c;
  c.result = Consume(scheduler, topic, config.concurrency, batch, chained,
                     tally, done);
  c.delivered = tally.delivered();
  c.duplicates = tally.Duplicates();
  c.missing = tally.Missing();
  return c;
}

absl::StatusOr<Report> RunMode(const WorkloadConfig& config, int batch,
                               bool chained) {
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = OpenScheduler(config);
  if (!scheduler.ok()) return scheduler.status();
  const std::string mode = chained ? "chained" : batch > 1 ? "batch" : "single";
  const std::string topic = Topic(config, absl::StrCat("w1.", mode));
  std::atomic<int64_t> done{0};

  // Enqueue. Payloads are "index|" plus padding to a 64-byte body.
  const std::string pad(56, 'x');
  absl::Time start = absl::Now();
  {
    Progress progress(absl::StrCat("w1 ", mode, " enqueue"), config.n, &done);
    if (batch > 1) {
      std::vector<std::string> payloads;
      for (int64_t i = 0; i < config.n; i += batch) {
        payloads.clear();
        for (int64_t j = i; j < std::min<int64_t>(config.n, i + batch); ++j) {
          payloads.push_back(absl::StrCat(j, "|", pad));
        }
        absl::StatusOr<std::vector<std::string>> ids =
            (*scheduler)->EnqueueBatch(topic, payloads);
        if (!ids.ok()) return ids.status();
        done.fetch_add(payloads.size());
      }
    } else {
      for (int64_t i = 0; i < config.n; ++i) {
        absl::StatusOr<std::string> id =
            (*scheduler)->Enqueue(topic, absl::StrCat(i, "|", pad));
        if (!id.ok()) return id.status();
        done.fetch_add(1);
      }
    }
  }
  const absl::Duration enqueue_time = absl::Now() - start;
  const int64_t enqueued = done.exchange(0);

  Consumed consumed;
  if (config.two_process) {
    absl::StatusOr<Consumed> elsewhere =
        ConsumeElsewhere(config, topic, batch, chained);
    if (!elsewhere.ok()) return elsewhere.status();
    consumed = *std::move(elsewhere);
  } else {
    Progress progress(absl::StrCat("w1 ", mode, " consume"), config.n, &done);
    consumed = ConsumeHere(**scheduler, config, topic, batch, chained, done);
  }
  DQ_RETURN_IF_ERROR(consumed.result.error);
  absl::StatusOr<TopicStats> left = (*scheduler)->Stats(topic);
  if (!left.ok()) return left.status();

  Report report(SystemName(**scheduler), "w1");
  report.Param("shape", ShapeName(config));
  report.Param("n", config.n);
  report.Param("concurrency", static_cast<int64_t>(config.concurrency));
  report.Param("mode", mode);
  report.Param("batch", static_cast<int64_t>(batch));
  const double enqueue_s = absl::ToDoubleSeconds(enqueue_time);
  const double consume_s = absl::ToDoubleSeconds(consumed.result.elapsed);
  report.Metric("enqueued", enqueued);
  report.Metric("enqueue_s", enqueue_s);
  report.Metric("enqueue_jobs_per_s", enqueue_s > 0 ? enqueued / enqueue_s : 0);
  report.Metric("consumed", consumed.delivered);
  report.Metric("consume_s", consume_s);
  report.Metric("consume_jobs_per_s",
                consume_s > 0 ? consumed.delivered / consume_s : 0);
  report.Metric("duplicates", consumed.duplicates);
  report.Metric("missing", consumed.missing);
  report.Metric("ack_errors", consumed.result.ack_errors);
  report.Metric("left_in_store",
                left->delayed + left->ready + left->reserved + left->dead);
  return report;
}

}  // namespace

absl::StatusOr<std::vector<Report>> RunW1(const WorkloadConfig& config) {
  // (batch, chained) of each mode asked for.
  std::vector<std::pair<int, bool>> modes;
  if (config.w1_single) modes.emplace_back(1, false);
  if (config.w1_batched) modes.emplace_back(std::max(2, config.batch), false);
  if (config.w1_chained) modes.emplace_back(1, true);
  std::vector<Report> reports;
  for (const auto& [batch, chained] : modes) {
    absl::StatusOr<Report> report = RunMode(config, batch, chained);
    if (!report.ok()) return report.status();
    reports.push_back(*std::move(report));
  }
  return reports;
}

}  // namespace bench
}  // namespace delayq
