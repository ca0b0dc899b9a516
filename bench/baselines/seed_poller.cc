// Copyright delayq authors.
//
// The seed design, as a baseline: the simple delayed queue on Redis that the
// source articles describe, written directly against hiredis.
//
//   * Producers ZADD a job into the sorted set `delayed`, scored by its due
//     time in ms (an immediate job is RPUSHed onto the list `ready`).
//   * One mover wakes every `interval` (100 ms or 10 ms), takes a lock
//     (SET lock NX PX), reads what is due (ZRANGEBYSCORE), and moves each
//     job with ZREM then RPUSH as separate calls, then releases the lock
//     (DEL). Not atomic: a crash between ZREM and RPUSH loses the job.
//   * Consumers BLPOP `ready`. There is no acknowledgement and no TTR, so
//     w3 has no equivalent.
//
// It runs the same workloads as //bench:workloads and prints the same JSON:
//
//   bazel run -c opt //bench:seed_poller --
//       --redis=127.0.0.1:6379 --interval_ms=100 --workload=w2 --json
//   (one command line)
//
// workloads: w1 (ready throughput), w2 (delayed lateness), idle (Redis
// commands per second with N jobs pending far in the future).

#include <hiredis/hiredis.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "bench/workloads/redis_stats.h"
#include "bench/workloads/report.h"

ABSL_FLAG(std::string, redis, "127.0.0.1:6379", "HOST:PORT of the server");
ABSL_FLAG(std::string, workload, "w2", "w1, w2 or idle");
ABSL_FLAG(int, interval_ms, 100, "how often the mover polls `delayed`");
ABSL_FLAG(int64_t, n, -1, "jobs (default: w1 100000, w2 20000, idle 100000)");
ABSL_FLAG(int, concurrency, 4, "consumer connections (BLPOP)");
ABSL_FLAG(int, batch, 100, "w1: jobs per pipelined batch of RPUSH");
ABSL_FLAG(int, lead_ms, 2000, "w2: time from start to the first due time");
ABSL_FLAG(int, window_s, 10, "idle: seconds to count Redis commands");
ABSL_FLAG(bool, json, false, "print one JSON object per line");

namespace delayq {
namespace bench {
namespace {

struct Config {
  std::string host;
  int port = 0;
  std::string prefix;  // keeps runs apart: "<prefix>:delayed", ...
  absl::Duration interval;
  int64_t n = 0;
  int concurrency = 4;
  int batch = 100;
  absl::Duration lead;
  absl::Duration window;
};

std::string SystemName(const Config& config) {
  return absl::StrCat("seed-poller-",
                      absl::ToInt64Milliseconds(config.interval), "ms");
}

// One hiredis connection; not thread-safe, one per thread.
class Conn {
 public:
  static absl::StatusOr<std::unique_ptr<Conn>> Open(const Config& config) {
    redisContext* c =
        redisConnectWithTimeout(config.host.c_str(), config.port, {2, 0});
    if (c == nullptr || c->err) {
      std::string error = c ? c->errstr : "out of memory";
      if (c) redisFree(c);
      return absl::UnavailableError(error);
    }
    return std::unique_ptr<Conn>(new Conn(c));
  }
  ~Conn() { redisFree(c_); }

  // Runs one command; the caller frees the reply. Null on a broken
  // connection.
  redisReply* Command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    return static_cast<redisReply*>(
        redisCommandArgv(c_, argv.size(), argv.data(), lens.data()));
  }
  void Append(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(c_, argv.size(), argv.data(), lens.data());
  }
  // Reads the reply of one appended command; false on error.
  bool Reply() {
    void* reply = nullptr;
    if (redisGetReply(c_, &reply) != REDIS_OK) return false;
    const bool ok = static_cast<redisReply*>(reply)->type != REDIS_REPLY_ERROR;
    freeReplyObject(reply);
    return ok;
  }

 private:
  explicit Conn(redisContext* c) : c_(c) {}
  redisContext* c_;
};

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// The mover, as the seed design has it. Returns when `stop` is notified.
void MoverLoop(const Config& config, absl::Notification& stop,
               std::atomic<int64_t>& moved) {
  auto conn = Conn::Open(config);
  if (!conn.ok()) {
    std::fprintf(stderr, "mover: %s\n", conn.status().ToString().c_str());
    return;
  }
  const std::string lock = config.prefix + ":lock";
  const std::string delayed = config.prefix + ":delayed";
  const std::string ready = config.prefix + ":ready";
  while (!stop.WaitForNotificationWithTimeout(config.interval)) {
    redisReply* got =
        (*conn)->Command({"SET", lock, "mover", "NX", "PX", "5000"});
    if (got == nullptr) return;
    const bool locked = got->type == REDIS_REPLY_STATUS;
    freeReplyObject(got);
    if (!locked) continue;
    redisReply* due = (*conn)->Command(
        {"ZRANGEBYSCORE", delayed, "-inf", absl::StrCat(NowMs())});
    if (due == nullptr) return;
    if (due->type == REDIS_REPLY_ARRAY) {
      for (size_t i = 0; i < due->elements; ++i) {
        const std::string member(due->element[i]->str, due->element[i]->len);
        redisReply* removed = (*conn)->Command({"ZREM", delayed, member});
        if (removed == nullptr) break;
        const bool mine =
            removed->type == REDIS_REPLY_INTEGER && removed->integer == 1;
        freeReplyObject(removed);
        if (!mine) continue;
        redisReply* pushed = (*conn)->Command({"RPUSH", ready, member});
        if (pushed != nullptr) freeReplyObject(pushed);
        moved.fetch_add(1);
      }
    }
    freeReplyObject(due);
    redisReply* released = (*conn)->Command({"DEL", lock});
    if (released != nullptr) freeReplyObject(released);
  }
}

// Consumers: BLPOP until `stop`, or (when `until_empty`) until the list
// stays empty for a second. Calls `on_job` with each member.
template <typename OnJob>
std::vector<std::thread> StartConsumers(const Config& config,
                                        absl::Notification& stop,
                                        bool until_empty, OnJob on_job) {
  std::vector<std::thread> threads;
  for (int t = 0; t < config.concurrency; ++t) {
    threads.emplace_back([&config, &stop, until_empty, on_job] {
      auto conn = Conn::Open(config);
      if (!conn.ok()) return;
      const std::string ready = config.prefix + ":ready";
      while (!stop.HasBeenNotified()) {
        redisReply* got = (*conn)->Command({"BLPOP", ready, "1"});
        if (got == nullptr) return;
        if (got->type == REDIS_REPLY_ARRAY && got->elements == 2) {
          on_job(absl::string_view(got->element[1]->str, got->element[1]->len));
        } else if (until_empty) {
          freeReplyObject(got);
          return;
        }
        freeReplyObject(got);
      }
    });
  }
  return threads;
}

absl::StatusOr<Report> RunW1Mode(const Config& config, int batch) {
  auto conn = Conn::Open(config);
  if (!conn.ok()) return conn.status();
  const std::string mode = batch > 1 ? "batch" : "single";
  const std::string ready = config.prefix + ":ready";
  const std::string pad(56, 'x');
  std::atomic<int64_t> done{0};
  const absl::Time start = absl::Now();
  {
    Progress progress(absl::StrCat("w1 ", mode, " enqueue"), config.n, &done);
    for (int64_t i = 0; i < config.n; i += batch) {
      const int64_t end = std::min<int64_t>(config.n, i + batch);
      for (int64_t j = i; j < end; ++j) {
        (*conn)->Append({"RPUSH", ready, absl::StrCat(j, "|", pad)});
      }
      for (int64_t j = i; j < end; ++j) {
        if (!(*conn)->Reply()) return absl::UnavailableError("RPUSH failed");
      }
      done.fetch_add(end - i);
    }
  }
  const absl::Duration enqueue_time = absl::Now() - start;
  done.store(0);

  Tally tally(config.n);
  std::atomic<int64_t> last_ns{0};
  const absl::Time consume_start = absl::Now();
  {
    Progress progress(absl::StrCat("w1 ", mode, " consume"), config.n, &done);
    absl::Notification never;
    std::vector<std::thread> consumers = StartConsumers(
        config, never, /*until_empty=*/true, [&](absl::string_view job) {
          tally.Deliver(ParseIndex(job));
          done.fetch_add(1);
          last_ns.store(absl::ToUnixNanos(absl::Now()));
        });
    for (std::thread& t : consumers) t.join();
  }
  const double consume_s =
      tally.delivered() == 0
          ? 0
          : absl::ToDoubleSeconds(absl::FromUnixNanos(last_ns.load()) -
                                  consume_start);
  const double enqueue_s = absl::ToDoubleSeconds(enqueue_time);

  Report report(SystemName(config), "w1");
  report.Param("n", config.n);
  report.Param("concurrency", static_cast<int64_t>(config.concurrency));
  report.Param("mode", mode);
  report.Param("batch", static_cast<int64_t>(batch));
  report.Param("ack", "none");
  report.Metric("enqueued", config.n);
  report.Metric("enqueue_s", enqueue_s);
  report.Metric("enqueue_jobs_per_s", enqueue_s > 0 ? config.n / enqueue_s : 0);
  report.Metric("consumed", tally.delivered());
  report.Metric("consume_s", consume_s);
  report.Metric("consume_jobs_per_s",
                consume_s > 0 ? tally.delivered() / consume_s : 0);
  report.Metric("duplicates", tally.Duplicates());
  report.Metric("missing", tally.Missing());
  return report;
}

absl::StatusOr<std::vector<Report>> RunW1(const Config& config) {
  std::vector<Report> reports;
  for (int batch : {1, std::max(2, config.batch)}) {
    absl::StatusOr<Report> report = RunW1Mode(config, batch);
    if (!report.ok()) return report.status();
    reports.push_back(*std::move(report));
  }
  return reports;
}

absl::StatusOr<std::vector<Report>> RunW2(const Config& config) {
  auto conn = Conn::Open(config);
  if (!conn.ok()) return conn.status();
  const int64_t n = config.n;
  const absl::Duration spread = absl::Seconds(5);
  std::vector<int64_t> due_us(n);
  std::vector<double> lateness_ms(n, std::nan(""));
  Tally tally(n);
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> moved{0};

  StallProbe probe;
  absl::Notification stop;
  std::thread mover([&] { MoverLoop(config, stop, moved); });
  std::vector<std::thread> consumers = StartConsumers(
      config, stop, /*until_empty=*/false, [&](absl::string_view job) {
        const absl::Time now = absl::Now();
        const int64_t i = ParseIndex(job);
        if (tally.Deliver(i) == 1) {
          lateness_ms[i] =
              absl::ToDoubleMilliseconds(now - absl::FromUnixMicros(due_us[i]));
          done.fetch_add(1);
        }
      });

  const absl::Time first_due = absl::Now() + config.lead;
  for (int64_t i = 0; i < n; ++i) {
    due_us[i] = absl::ToUnixMicros(first_due + spread * i / n);
  }
  int64_t enqueued_late = 0;
  const std::string delayed = config.prefix + ":delayed";
  {
    std::atomic<int64_t> enqueued{0};
    Progress progress("w2 enqueue", n, &enqueued);
    for (int64_t i = 0; i < n; ++i) {
      // The score is the due time in whole ms, as the seed design keeps it,
      // rounded up so that no job is moved before it is due.
      redisReply* added = (*conn)->Command(
          {"ZADD", delayed, absl::StrCat((due_us[i] + 999) / 1000),
           absl::StrCat(i, "|w2")});
      if (added == nullptr) return absl::UnavailableError("ZADD failed");
      freeReplyObject(added);
      if (absl::ToUnixMicros(absl::Now()) > due_us[i]) ++enqueued_late;
      enqueued.fetch_add(1);
    }
  }
  {
    Progress progress("w2 deliver", n, &done);
    const absl::Time give_up =
        absl::FromUnixMicros(due_us[n - 1]) + absl::Seconds(30);
    while (done.load() < n && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  stop.Notify();
  mover.join();
  for (std::thread& t : consumers) t.join();

  std::vector<double> delivered;
  for (double ms : lateness_ms) {
    if (!std::isnan(ms)) delivered.push_back(ms);
  }
  Report report(SystemName(config), "w2");
  report.Param("n", n);
  report.Param("concurrency", static_cast<int64_t>(config.concurrency));
  report.Param("spread_s", static_cast<int64_t>(5));
  report.Param("lead_ms", absl::ToInt64Milliseconds(config.lead));
  report.Param("interval_ms", absl::ToInt64Milliseconds(config.interval));
  report.MetricJson("lateness_ms", Distribution(delivered));
  report.MetricJson("host_oversleep_ms", probe.Finish());
  report.Metric("delivered", tally.delivered());
  report.Metric("duplicates", tally.Duplicates());
  report.Metric("missing", tally.Missing());
  report.Metric("enqueued_late", enqueued_late);
  return std::vector<Report>{std::move(report)};
}

absl::StatusOr<std::vector<Report>> RunIdle(const Config& config) {
  auto conn = Conn::Open(config);
  if (!conn.ok()) return conn.status();
  const std::string delayed = config.prefix + ":delayed";
  const int64_t far = absl::ToUnixMillis(absl::Now() + absl::Hours(24));
  for (int64_t i = 0; i < config.n; i += 1000) {
    const int64_t end = std::min<int64_t>(config.n, i + 1000);
    for (int64_t j = i; j < end; ++j) {
      (*conn)->Append(
          {"ZADD", delayed, absl::StrCat(far + j), absl::StrCat(j, "|idle")});
    }
    for (int64_t j = i; j < end; ++j) {
      if (!(*conn)->Reply()) return absl::UnavailableError("ZADD failed");
    }
  }
  absl::Notification stop;
  std::atomic<int64_t> moved{0};
  std::atomic<int64_t> handled{0};
  std::thread mover([&] { MoverLoop(config, stop, moved); });
  std::vector<std::thread> consumers =
      StartConsumers(config, stop, /*until_empty=*/false,
                     [&](absl::string_view) { handled.fetch_add(1); });
  absl::SleepFor(absl::Seconds(2));
  std::fprintf(stderr, "idle: counting Redis commands for %s\n",
               absl::FormatDuration(config.window).c_str());
  absl::StatusOr<IdleLoad> load =
      MeasureIdleLoad(config.host, config.port, config.window);
  stop.Notify();
  mover.join();
  for (std::thread& t : consumers) t.join();
  if (!load.ok()) return load.status();

  Report report(SystemName(config), "idle");
  report.Param("pending", config.n);
  report.Param("window_s", absl::ToInt64Seconds(config.window));
  report.Param("workers", static_cast<int64_t>(config.concurrency));
  report.Param("interval_ms", absl::ToInt64Milliseconds(config.interval));
  report.Metric("commands", load->total);
  report.Metric("commands_per_s", load->per_second);
  report.MetricJson("by_command", CommandCountsJson(load->by_command));
  report.Metric("script_calls", ScriptCalls(load->by_command));
  report.Metric("handled", handled.load());
  return std::vector<Report>{std::move(report)};
}

}  // namespace
}  // namespace bench
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using delayq::bench::Config;
  Config config;
  const std::vector<std::string> host_port =
      absl::StrSplit(absl::GetFlag(FLAGS_redis), ':');
  if (host_port.size() != 2 || !absl::SimpleAtoi(host_port[1], &config.port)) {
    std::fprintf(stderr, "--redis must be HOST:PORT\n");
    return 2;
  }
  config.host = host_port[0];
  config.interval = absl::Milliseconds(absl::GetFlag(FLAGS_interval_ms));
  config.n = absl::GetFlag(FLAGS_n);
  config.concurrency = absl::GetFlag(FLAGS_concurrency);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.lead = absl::Milliseconds(absl::GetFlag(FLAGS_lead_ms));
  config.window = absl::Seconds(absl::GetFlag(FLAGS_window_s));
  config.prefix = absl::StrCat("seed:", absl::ToUnixMillis(absl::Now()));
  if (config.interval <= absl::ZeroDuration() || config.concurrency < 1 ||
      config.batch < 1 || config.n == 0) {
    std::fprintf(
        stderr,
        "--interval_ms, --concurrency, --batch, --n must be positive\n");
    return 2;
  }
  const std::string workload = absl::GetFlag(FLAGS_workload);
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
  } else if (workload == "idle") {
    default_n(100000);
    reports = delayq::bench::RunIdle(config);
  } else {
    std::fprintf(stderr, "unknown --workload=%s (w1, w2 or idle)\n",
                 workload.c_str());
    return 2;
  }
  if (!reports.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", workload.c_str(),
                 reports.status().ToString().c_str());
    return 1;
  }
  delayq::bench::Emit(*reports, absl::GetFlag(FLAGS_json));
  return 0;
}
