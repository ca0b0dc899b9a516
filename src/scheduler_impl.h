// Copyright delayq authors.
//
// Scheduler::Impl — the state behind the public Scheduler. scheduler.cc holds
// the job operations and promotion; workers.cc the handler threads and lease
// renewal.
//
// Locking: `mu_` guards the timers, the wake-up counters, the handler table
// and thread state. It is never held across a store call or a handler, so a
// slow store or handler blocks nobody else. Listeners run with no lock of ours
// held (EventHub has its own).

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
#include "src/due_timers.h"
#include "src/event_hub.h"

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
  absl::Status PromoteAll(absl::Time now, int* moved);
  void ReportMoved(const std::vector<Transition>& moved);
  void RefreshFromStore(absl::Time now);
  // The store's news of other processes' changes (see Backend::Subscribe()).
  void OnNews(const StoreNews& news) ABSL_LOCKS_EXCLUDED(mu_);
  // How often this scheduler looks at the store on its own: rarely when the
  // store sends news, every poll_interval otherwise.
  absl::Duration LookInterval() const;
  void WakeTopic(absl::string_view topic) ABSL_LOCKS_EXCLUDED(mu_);
  void WakeTopics(const std::vector<std::string>& topics)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Arm(absl::string_view id, absl::Time at) ABSL_LOCKS_EXCLUDED(mu_);
  void ArmLocked(absl::string_view id, absl::Time at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ArmPollLocked(absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Disarm(absl::string_view id) ABSL_LOCKS_EXCLUDED(mu_);
  // The wake-up counter of `topic`'s blocked Reserve() calls.
  uint64_t SignalOf(const std::string& topic) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Emit(EventType type, absl::string_view id, absl::string_view topic,
            int attempts = 0, absl::string_view error = "");
  void TimerLoop();

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

  absl::Mutex mu_;
  internal::DueTimers timers_ ABSL_GUARDED_BY(mu_);
  // When the timer thread (or Tick()) next asks the store for its next due
  // time.
  absl::Time next_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Bumped whenever a job of the topic may have become ready; blocked
  // Reserve() calls wait for a change.
  absl::flat_hash_map<std::string, uint64_t> topic_signal_ ABSL_GUARDED_BY(mu_);
  // Bumped for every topic at once: the store's news may have been lost.
  uint64_t all_topics_signal_ ABSL_GUARDED_BY(mu_) = 0;
  // Reserve() calls that may block; while there are none, nobody needs to
  // bump topic_signal_.
  std::atomic<int> reserve_waiters_{0};
  // Bumped when a timer is armed earlier than every other: whoever sleeps
  // until the next timer (the timer thread, a blocked Reserve) looks again.
  uint64_t timers_changed_ ABSL_GUARDED_BY(mu_) = 0;

  // Serializes Stop() calls, so a second one returns only when the threads
  // are gone.
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // A topic Handle() refused; Start() reports it.
  absl::Status handle_error_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_thread_;
  std::map<std::string, Registration> handlers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  int running_handlers_ ABSL_GUARDED_BY(mu_) = 0;
  bool timer_stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread keeper_thread_;
  bool keeper_stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_active_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<ActiveLease>> active_ ABSL_GUARDED_BY(mu_);
  uint64_t active_changed_ ABSL_GUARDED_BY(mu_) = 0;

  // The store's news, when it sends any. Declared last so that it is
  // destroyed first: no news arrives while the rest is torn down.
  std::unique_ptr<NewsSubscription> news_;
};

}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_IMPL_H_
