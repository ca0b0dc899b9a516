// Copyright delayq authors.
//
// Scheduler::Impl — the state behind the public Scheduler. scheduler.cc holds
// the job operations; promotion.h how this process learns that something is
// due; workers.cc the handler threads and lease renewal.
//
// Locking: `mu_` guards the handler table and thread state; Promotion has
// its own (leaf) mutex, which may be taken under `mu_`. It is never held across
// a store call or a handler, so a slow store or handler blocks nobody else.
// Listeners run with no lock of ours held (EventHub has its own).

#ifndef DELAYQ_SRC_SCHEDULER_IMPL_H_
#define DELAYQ_SRC_SCHEDULER_IMPL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "delayq/scheduler.h"
#include "src/event_hub.h"
#include "src/promotion.h"

namespace delayq {

class Scheduler::Impl {
 public:
  Impl(std::unique_ptr<Backend> backend, const SchedulerOptions& options,
       Clock* clock);
  ~Impl();

  absl::Status Init();

  // Job operations (scheduler.cc). `batch`: ids get an index suffix.
  absl::StatusOr<std::vector<std::string>> Enqueue(
      absl::string_view topic, absl::Span<const absl::string_view> payloads,
      const JobOptions& options, bool batch);
  // `for_worker`: return empty as soon as Stop() begins.
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Duration wait,
                                             bool for_worker = false);
  absl::Status Ack(const Lease& lease);
  absl::Status Fail(const Lease& lease, absl::string_view error);
  absl::Status Release(const Lease& lease, absl::Duration delay);
  absl::Status Touch(Lease& lease);
  absl::Status Cancel(absl::string_view id);
  absl::StatusOr<int> Kick(absl::string_view topic, int max);
  absl::Status KickJob(absl::string_view id);
  absl::StatusOr<int> Tick();

  // Workers (workers.cc).
  void Handle(absl::string_view topic, Handler handler,
              const HandlerOptions& options);
  absl::Status Start();
  void Stop(absl::Duration grace);

  Backend& backend() const { return *backend_; }
  Clock& clock() const { return *clock_; }
  internal::EventHub& events() { return events_; }

 private:
  struct Registration {
    Handler handler;
    HandlerOptions options;
    int workers_started = 0;
  };
  // A lease a handler is working on; the keeper touches it while it runs.
  struct ActiveLease {
    uint64_t key;
    Lease lease;
    // How long after a (re)newal the keeper renews again, on this process's
    // clock (so a store on another clock cannot make it late).
    absl::Duration renew_after;
    absl::Time renew_at;
  };

  // scheduler.cc
  absl::StatusOr<std::vector<Lease>> ReserveOnce(absl::string_view topic,
                                                 int max, absl::Time now);
  bool stopping() ABSL_LOCKS_EXCLUDED(mu_);
  // Events for jobs that a store call moved.
  void EmitMoved(const std::vector<Transition>& moved);
  void Emit(EventType type, absl::string_view id, absl::string_view topic,
            int attempts = 0, absl::string_view error = "");

  // workers.cc
  void StartWorkers(const std::string& topic, Registration& registration)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop(std::string topic);
  void RunJob(const Lease& lease, const Handler& handler,
              double renew_fraction);
  absl::Status Finish(const Lease& lease, const absl::Status& result);
  void KeeperLoop();
  void Renew(ActiveLease& active);
  // Marks the calling thread as one of this scheduler's own.
  void MarkOwnThread();
  bool OnOwnThread() const;

  const std::unique_ptr<Backend> backend_;
  const SchedulerOptions options_;
  Clock* const clock_;
  const std::string id_prefix_;
  std::atomic<uint64_t> id_counter_{0};
  internal::EventHub events_;

  // How this process learns that something is due: the timers, the store's
  // news, the blocked Reserve() calls and the timer thread.
  internal::Promotion promotion_;

  absl::Mutex mu_;
  // Serializes Stop() calls, so a second one returns only when the threads
  // are gone.
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // A topic Handle() refused; Start() reports it.
  absl::Status handle_error_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Registration> handlers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  int running_handlers_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread keeper_thread_;
  bool keeper_stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_active_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<ActiveLease>> active_ ABSL_GUARDED_BY(mu_);
  uint64_t active_changed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_IMPL_H_
