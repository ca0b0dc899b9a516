// Copyright delayq authors.
//
// The consumer side of a workload in a process of its own, as services run
// it: this same binary, started again with --role, opens its own Scheduler
// on the store and tells the producer (the parent) what it did, one line at
// a time on its stdout. Both processes run on one machine, so absl::Now() in
// one is comparable with absl::Now() in the other.
//
// Roles:
//   handler  opens its Scheduler and prints "ready"; on a line "go" from
//            the producer starts Handle() workers on the topic and prints
//            "started"; then "d INDEX UNIX_MICROS" for every delivery (the
//            handler's entry), and "end" once every job was delivered and
//            `linger` passed (duplicates would show then), or at `give_up`.
//            (Between "ready" and "go" the consumer knows of the store only
//            what its news tells it.)
//   consume  C threads Reserve() (batches of `batch` when > 1) and Ack()
//            until the topic stays empty; prints "consumed DELIVERED
//            ELAPSED_NS DUPLICATES MISSING ACK_ERRORS".
//   consume_chained  as consume, one job at a time, each ack reserving
//            the thread's next job (Scheduler::AckAndReserve()).

#ifndef DELAYQ_BENCH_WORKLOADS_CONSUMER_PROCESS_H_
#define DELAYQ_BENCH_WORKLOADS_CONSUMER_PROCESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/workloads/workloads.h"
#include "delayq/scheduler.h"
#include "tests/testing/child_process.h"

namespace delayq {
namespace bench {

struct ConsumerArgs {
  std::string role;  // "handler", "consume" or "consume_chained"
  std::string topic;
  int64_t n = 0;
  int concurrency = 1;
  int batch = 1;
  absl::Duration linger = absl::Milliseconds(500);
  absl::Time give_up = absl::InfiniteFuture();
};

// Runs the role in this process (the child); returns the exit status.
int RunConsumerRole(const WorkloadConfig& config, const ConsumerArgs& args);

// The consumer process, seen from the producer.
class ConsumerProcess {
 public:
  // Starts this binary again in `args.role` on `config.store_url`, and for
  // a handler waits until it says it is ready (before "go").
  static absl::StatusOr<std::unique_ptr<ConsumerProcess>> Start(
      const WorkloadConfig& config, const ConsumerArgs& args);

  // The next line; an error when the consumer died or said nothing for
  // `patience`.
  absl::StatusOr<std::string> ReadLine(absl::Duration patience);
  // Reads the next line and fails unless it is `want`.
  absl::Status Expect(const std::string& want, absl::Duration patience);
  // Sends a line to the consumer.
  absl::Status Tell(const std::string& line);
  // Ends the consumer at once (SIGKILL).
  void Kill() { child_.Kill(); }

  // A handler's deliveries until it says "end": for every job index, the
  // times it was delivered, in order.
  absl::StatusOr<std::vector<std::vector<absl::Time>>> Deliveries(
      int64_t n, absl::Duration patience);

 private:
  explicit ConsumerProcess(const std::vector<std::string>& argv)
      : child_(argv) {}
  testing::ChildProcess child_;
};

// Lateness of the first delivery of each job after `since[i]`, in ms, for
// jobs delivered at least once; and the count of jobs delivered more than
// once and never.
struct FirstDeliveries {
  std::vector<double> ms;
  int64_t delivered = 0;
  int64_t duplicates = 0;
  int64_t missing = 0;
};
FirstDeliveries Summarize(const std::vector<std::vector<absl::Time>>& times,
                          const std::vector<absl::Time>& since);

// HandlerRun — Handle() workers that record when each job (payload "i|...")
// is delivered, in the workload's shape: in a consumer process, or on the
// producer's own scheduler.
class HandlerRun {
 public:
  // Prepares `args.concurrency` workers on `args.topic` for `args.n` jobs
  // (in the two-process shape: starts the consumer process, whose scheduler
  // then hears the store's news).
  static absl::StatusOr<std::unique_ptr<HandlerRun>> Prepare(
      const WorkloadConfig& config, Scheduler& scheduler,
      const ConsumerArgs& args);
  // Starts the workers; returns once they wait.
  absl::Status Start();
  ~HandlerRun();

  // Waits until every job was delivered (or args.give_up), then
  // args.linger, stops the workers, and measures each job's first delivery
  // from since[i].
  absl::StatusOr<FirstDeliveries> Finish(const std::vector<absl::Time>& since);

 private:
  HandlerRun(Scheduler& scheduler, const ConsumerArgs& args)
      : scheduler_(scheduler), args_(args), times_(args.n) {}

  Scheduler& scheduler_;
  const ConsumerArgs args_;
  // Two-process shape: the consumer, and a thread that reads its deliveries
  // as they come (a full pipe would stall its handlers).
  std::unique_ptr<ConsumerProcess> process_;
  std::thread reader_;
  absl::StatusOr<std::vector<std::vector<absl::Time>>> read_;
  // One-process shape: delivery times per job, and jobs delivered once.
  absl::Mutex mu_;
  std::vector<std::vector<absl::Time>> times_ ABSL_GUARDED_BY(mu_);
  int64_t first_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_CONSUMER_PROCESS_H_
