// Copyright delayq authors.
//
// W1 on beanstalkd, as a reference beside delayq's stores: a producer puts
// N immediate 64-byte jobs one at a time, then a consumer process of its
// own (this binary again, --role=consume) runs C threads, each on its own
// connection, that reserve and delete one job at a time until the tube
// stays empty. The same shape and the same report as
// `workloads --workload=w1 --w1_mode=single`
// (bench/workloads/w1_throughput.cc).
//
//   beanstalk_w1 --beanstalk=127.0.0.1:11300 --n=20000 --concurrency=8 --json
//
// beanstalkd keeps jobs in memory (bench/run_all.sh starts it without a
// binlog), gives each reservation a ttr and re-delivers it when the ttr
// passes; it has no fencing token, so a late delete of an expired job
// deletes the next attempt.

#include <atomic>
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
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/baselines/beanstalk_client.h"
#include "bench/workloads/report.h"
#include "tests/testing/child_process.h"

ABSL_FLAG(std::string, beanstalk, "127.0.0.1:11300", "HOST:PORT of the server");
ABSL_FLAG(int64_t, n, 100000, "jobs");
ABSL_FLAG(int, concurrency, 8, "consumer threads, one connection each");
ABSL_FLAG(bool, json, false, "print one JSON object per line");
ABSL_FLAG(std::string, role, "", "internal: run as the consumer process");
ABSL_FLAG(std::string, tube, "", "internal: the consumer's tube");

namespace delayq {
namespace bench {
namespace {

// A consumer decides the tube is drained when a reserve waits this long in
// vain (beanstalkd's timeouts are whole seconds); consume time runs to the
// last delete, so the wait is not counted.
constexpr int kDrainWaitS = 1;
constexpr int kTtrS = 60;

absl::StatusOr<std::unique_ptr<BeanstalkClient>> Connect() {
  const std::vector<std::string> hp =
      absl::StrSplit(absl::GetFlag(FLAGS_beanstalk), ':');
  int port;
  if (hp.size() != 2 || !absl::SimpleAtoi(hp[1], &port)) {
    return absl::InvalidArgumentError("--beanstalk is HOST:PORT");
  }
  return BeanstalkClient::Connect(hp[0], port);
}

// The consumer process: prints its ConsumedLine().
int RunConsumer(const std::string& tube, int64_t n, int concurrency) {
  std::vector<std::unique_ptr<BeanstalkClient>> links;
  for (int t = 0; t < concurrency; ++t) {
    absl::StatusOr<std::unique_ptr<BeanstalkClient>> c = Connect();
    absl::Status s = c.ok() ? (*c)->WatchOnly(tube) : c.status();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    links.push_back(*std::move(c));
  }
  Tally tally(n);
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> last_nanos{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, link = links[t].get()] {
      for (;;) {
        absl::StatusOr<std::optional<BeanstalkClient::Reserved>> job =
            link->Reserve(kDrainWaitS);
        if (!job.ok() || !job->has_value()) {
          if (!job.ok()) errors.fetch_add(1);
          return;
        }
        int64_t index = -1;
        const absl::string_view body = (*job)->body;
        (void)absl::SimpleAtoi(body.substr(0, body.find('|')), &index);
        tally.Deliver(index);
        if (!link->Delete((*job)->id).ok()) errors.fetch_add(1);
        const int64_t now = absl::ToUnixNanos(absl::Now());
        int64_t seen = last_nanos.load();
        while (seen < now && !last_nanos.compare_exchange_weak(seen, now)) {
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const int64_t last = last_nanos.load();
  BaselineConsumed c;
  c.delivered = tally.delivered();
  c.elapsed_ns = last == 0 ? 0 : last - absl::ToUnixNanos(start);
  c.duplicates = tally.Duplicates();
  c.missing = tally.Missing();
  c.errors = errors.load();
  std::printf("%s\n", ConsumedLine(c).c_str());
  std::fflush(stdout);
  return 0;
}

absl::StatusOr<Report> RunProducer(const char* self) {
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const std::string tube = absl::StrCat("w1.", absl::ToUnixMillis(absl::Now()));
  absl::StatusOr<std::unique_ptr<BeanstalkClient>> c = Connect();
  if (!c.ok()) return c.status();
  if (absl::Status s = (*c)->Use(tube); !s.ok()) return s;
  const std::string pad(56, 'x');
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<uint64_t> id = (*c)->Put(absl::StrCat(i, "|", pad), kTtrS);
    if (!id.ok()) return id.status();
  }
  const double enqueue_s = absl::ToDoubleSeconds(absl::Now() - start);

  testing::ChildProcess consumer(
      {self, "--role=consume", absl::StrCat("--tube=", tube),
       absl::StrCat("--n=", n), absl::StrCat("--concurrency=", concurrency),
       absl::StrCat("--beanstalk=", absl::GetFlag(FLAGS_beanstalk))});
  std::optional<std::string> line =
      consumer.ReadLineStartingWith("consumed ", absl::Minutes(30));
  if (!line.has_value()) return absl::InternalError("the consumer died");
  absl::StatusOr<BaselineConsumed> consumed = ParseConsumedLine(*line);
  consumer.Wait();
  if (!consumed.ok()) return consumed.status();
  return BaselineW1Report("beanstalkd", n, concurrency, enqueue_s, *consumed);
}

}  // namespace
}  // namespace bench
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using delayq::bench::Report;
  if (absl::GetFlag(FLAGS_role) == "consume") {
    return delayq::bench::RunConsumer(absl::GetFlag(FLAGS_tube),
                                      absl::GetFlag(FLAGS_n),
                                      absl::GetFlag(FLAGS_concurrency));
  }
  absl::StatusOr<Report> report = delayq::bench::RunProducer(argv[0]);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  delayq::bench::Emit({*report}, absl::GetFlag(FLAGS_json));
  return 0;
}
