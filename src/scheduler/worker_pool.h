// Copyright delayq authors.
//
// WorkerPool — the handler threads of Scheduler::Handle(): per topic,
// `concurrency` workers reserve jobs (`batch` at a time), run the handler and
// ack or fail. Every lease a worker holds is kept alive by the LeaseKeeper
// from the moment it is reserved, and a job whose lease is gone by the time
// its turn comes is not started.
//
// Stop(grace): no handler starts once stopping began (the check and the
// start are one step under the pool's mutex), leases reserved but not
// started go back without using an attempt, running handlers get `grace`
// with their leases renewed, then the threads are joined.
//
// Thread-safe.

#ifndef DELAYQ_SRC_SCHEDULER_WORKER_POOL_H_
#define DELAYQ_SRC_SCHEDULER_WORKER_POOL_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/clock.h"
#include "delayq/job.h"
#include "delayq/scheduler.h"
#include "src/scheduler/lease_keeper.h"
#include "src/scheduler/promotion.h"

namespace delayq {
namespace internal {

// What a worker runs for a job: a result acknowledges it (kept with the job
// when the job is kept done), an error fails it.
using WorkHandler = std::function<absl::StatusOr<std::string>(const Lease&)>;

// What workers do with jobs: the scheduler's own operations.
class JobOps {
 public:
  virtual ~JobOps() = default;
  // Reserve() for a worker: returns empty as soon as `*stop` is set.
  virtual absl::StatusOr<std::vector<Lease>> ReserveForWorker(
      absl::string_view topic, int max, absl::Duration wait,
      const std::atomic<bool>* stop) = 0;
  virtual absl::Status Ack(const Lease& lease, absl::string_view result) = 0;
  // Ack() of `lease`, then a reservation of up to `max` jobs of `topic`
  // without waiting, in one store call where the store can
  // (Backend::AckAndReserve()).
  virtual AckReserved AckAndReserveForWorker(const Lease& lease,
                                             absl::string_view result,
                                             absl::string_view topic, int max,
                                             const std::atomic<bool>* stop) = 0;
  virtual absl::Status Fail(const Lease& lease, absl::string_view error) = 0;
  virtual absl::Status Release(const Lease& lease, absl::Duration delay) = 0;
};

class WorkerPool {
 public:
  // `on_thread_start` runs first on every thread the pool starts.
  WorkerPool(JobOps& jobs, Backend& backend, Clock& clock, Promotion& promotion,
             absl::Duration retry_interval,
             std::function<void()> on_thread_start);
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // See Scheduler::Handle(): workers start at once when already started.
  void Handle(absl::string_view topic, WorkHandler handler,
              const HandlerOptions& options);

  // Starts the keeper and the workers of every handler. FailedPrecondition
  // when already started; the error of a bad Handle() topic.
  absl::Status Start();

  // Asks the threads to stop and returns (for a caller on one of them).
  void RequestStop();

  // Stops, waits up to `grace` for running handlers, joins every thread.
  void Stop(absl::Duration grace);

  // Whether Start() ran and Stop() has not finished.
  bool started();

 private:
  struct Registration {
    WorkHandler handler;
    HandlerOptions options;
    int workers_started = 0;
  };

  void StartWorkersLocked(const std::string& topic, Registration& registration)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop(const std::string& topic);
  // Runs the batch's jobs in order; hands back the ones not started. The
  // last one's ack also reserves the worker's next batch of `max` jobs of
  // `topic` (unless stopping), which it returns.
  std::vector<Lease> RunBatch(const std::vector<Lease>& leases,
                              const WorkHandler& handler, double renew_fraction,
                              const std::string& topic, int max);
  absl::Status Finish(const Lease& lease,
                      const absl::StatusOr<std::string>& result);
  // Finish() of a job that succeeded, reserving the next batch with its ack;
  // returns the leases it got (none when the reservation failed: the loop
  // then reserves as usual).
  std::vector<Lease> FinishAndReserve(const Lease& lease,
                                      const std::string& result,
                                      const std::string& topic, int max);

  JobOps& jobs_;
  Clock& clock_;
  Promotion& promotion_;
  const absl::Duration retry_interval_;
  const std::function<void()> on_thread_start_;
  LeaseKeeper keeper_;

  // Serializes Stop() calls, so a second one returns only when the threads
  // are gone.
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  // A topic Handle() refused; Start() reports it.
  absl::Status handle_error_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // Written under mu_; read without it by workers asleep in Reserve().
  std::atomic<bool> stopping_{false};
  std::map<std::string, Registration> handlers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  int running_handlers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_WORKER_POOL_H_
