// Copyright delayq authors.
//
// Scheduler::Impl — the state behind the public Scheduler: the job
// operations (scheduler.cc) over three parts with their own files and locks:
//   Promotion   how this process learns that something is due, the timer
//               thread and the blocked Reserve() calls (promotion.h);
//   WorkerPool  the Handle() threads (worker_pool.h), which run jobs;
//   LeaseKeeper inside the pool, keeping the workers' leases alive
//               (lease_keeper.h).
// No lock is held across a store call or a handler, so a slow store or
// handler blocks nobody else. Listeners run with no lock of ours held
// (EventHub has its own).

#ifndef DELAYQ_SRC_SCHEDULER_SCHEDULER_IMPL_H_
#define DELAYQ_SRC_SCHEDULER_SCHEDULER_IMPL_H_

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
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "delayq/scheduler.h"
#include "src/scheduler/event_hub.h"
#include "src/scheduler/event_log_writer.h"
#include "src/scheduler/promotion.h"
#include "src/scheduler/result_waiter.h"
#include "src/scheduler/schedule_runner.h"
#include "src/scheduler/worker_pool.h"

namespace delayq {

class Scheduler::Impl : public internal::JobOps {
 public:
  Impl(std::unique_ptr<Backend> backend, const SchedulerOptions& options,
       Clock* clock);
  ~Impl() override;

  absl::Status Init();

  // Job operations. One job, the common call, has a path that needs no
  // vector; a batch's given id gets an index suffix per job.
  absl::StatusOr<std::string> EnqueueOne(absl::string_view topic,
                                         absl::string_view payload,
                                         const JobOptions& options);
  absl::StatusOr<std::vector<std::string>> EnqueueFlow(
      absl::Span<const Scheduler::FlowJob> jobs);
  absl::StatusOr<std::vector<std::string>> EnqueueBatch(
      absl::string_view topic, absl::Span<const absl::string_view> payloads,
      const JobOptions& options);
  // Batches (delayq/batch.h).
  absl::StatusOr<std::string> OpenBatch(absl::string_view topic,
                                        absl::string_view payload,
                                        const JobOptions& options);
  absl::Status CloseBatch(absl::string_view id);
  // `stop`, when given: return empty as soon as it is set. `holder`, when
  // not empty: who the leases are held by, instead of holder_.
  absl::StatusOr<std::vector<Lease>> Reserve(
      absl::string_view topic, int max, absl::Duration wait,
      const std::atomic<bool>* stop = nullptr, absl::string_view holder = "");
  void WakeReserves() { promotion_.WakeAll(); }
  absl::Status Ack(const Lease& lease, absl::string_view result) override;
  // Ack(), then Reserve() (waiting as it does): in one store call where the
  // store can (Backend::AckAndReserve()). `holder` as in Reserve().
  AckReserved AckAndReserve(const Lease& lease, absl::string_view result,
                            absl::string_view topic, int max,
                            absl::Duration wait,
                            const std::atomic<bool>* stop = nullptr,
                            absl::string_view holder = "");
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases);
  absl::Status Fail(const Lease& lease, absl::string_view error) override;
  absl::Status Release(const Lease& lease, absl::Duration delay) override;
  absl::Status Touch(Lease& lease);
  absl::Status Cancel(absl::string_view id);
  absl::StatusOr<std::vector<std::string>> CancelFlow(absl::string_view id);
  absl::StatusOr<int> Kick(absl::string_view topic, int max);
  absl::Status KickJob(absl::string_view id);
  absl::Status PromoteJob(absl::string_view id);
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max);
  absl::Status SetPaused(absl::string_view topic, bool paused);
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit);
  absl::Status ClearLimit(absl::string_view topic);
  // Add(), or with `replace` Replace() of the one job when its id is taken.
  absl::Status AddOrReplace(absl::Span<const NewJob> jobs, bool replace,
                            absl::Time now);
  absl::StatusOr<int> Tick();
  absl::Status FlushEventLog() {
    return event_log_ ? event_log_->Flush() : absl::OkStatus();
  }
  absl::StatusOr<Job> WaitForResult(absl::string_view id,
                                    absl::Duration timeout,
                                    absl::Duration poll) {
    return results_.Wait(id, timeout, poll);
  }

  // Schedules (schedule_runner.h).
  absl::Status Schedule(ScheduleRecord record);
  absl::Status Unschedule(absl::string_view name);
  absl::StatusOr<std::vector<ScheduleInfo>> Schedules() {
    return schedules_.List();
  }

  // Threads.
  void Handle(absl::string_view topic, internal::WorkHandler handler,
              const HandlerOptions& options) {
    workers_.Handle(topic, std::move(handler), options);
  }
  absl::Status Start();
  void Stop(absl::Duration grace);

  Backend& backend() const { return *backend_; }
  Clock& clock() const { return *clock_; }
  internal::EventHub& events() { return events_; }

 private:
  absl::StatusOr<std::vector<Lease>> ReserveForWorker(
      absl::string_view topic, int max, absl::Duration wait,
      const std::atomic<bool>* stop) override {
    return Reserve(topic, max, wait, stop);
  }
  AckReserved AckAndReserveForWorker(const Lease& lease,
                                     absl::string_view result,
                                     absl::string_view topic, int max,
                                     const std::atomic<bool>* stop) override {
    return AckAndReserve(lease, result, topic, max, absl::ZeroDuration(), stop);
  }
  // The times an Enqueue call gives its jobs, read and resolved once.
  struct EnqueueTimes {
    absl::Time now;
    absl::Time run_at;
    absl::Time expire_at;  // absl::InfiniteFuture() for none
  };
  // Checks an Enqueue call's arguments and resolves its times.
  absl::StatusOr<EnqueueTimes> CheckEnqueue(
      absl::string_view topic, absl::Span<const absl::string_view> payloads,
      const JobOptions& options, bool batch);
  // Every field of `job` but its id.
  static void FillJob(absl::string_view topic, absl::string_view payload,
                      const JobOptions& options, const EnqueueTimes& times,
                      NewJob& job);
  std::string NextGeneratedId();
  // Arms or wakes for jobs just added, and tells the listeners.
  void Announce(absl::string_view topic, const EnqueueTimes& times,
                absl::Span<const std::string> ids);
  // One look at the store for a reservation: Backend::Reserve(), or
  // Backend::AckAndReserve() carrying an ack.
  using StoreLook = absl::FunctionRef<absl::StatusOr<std::vector<Lease>>(
      absl::Time now, ReserveReport* report)>;
  // Reserve()'s and AckAndReserve()'s checks of their arguments.
  static absl::Status CheckReserve(absl::string_view topic, int max,
                                   absl::Duration wait);
  absl::Status CheckResult(absl::string_view result) const;
  // Looks at the store through `look` until it reserves something or
  // `wait` passes (or `stop` is set), waking for the topic's news and
  // timers in between.
  absl::StatusOr<std::vector<Lease>> ReserveLoop(absl::string_view topic,
                                                 absl::Duration wait,
                                                 const std::atomic<bool>* stop,
                                                 StoreLook look);
  // One look; sets `limited_until` as ReserveReport has it.
  absl::StatusOr<std::vector<Lease>> ReserveOnce(absl::string_view topic,
                                                 absl::Time now,
                                                 absl::Time* limited_until,
                                                 StoreLook look);
  // What follows an ack the store took: wakes, counts, tells.
  void Acked(const Lease& lease);
  // Remembers that jobs with dependencies, or of a batch, were enqueued,
  // when `options` has some; then DependantsMayHaveMoved() looks at the
  // store again after each Ack(), death and Cancel(). OpenBatch() remembers
  // it too: its completion job waits.
  void NoteDependencies(const JobOptions& options);
  void DependantsMayHaveMoved();
  // Arms, wakes and reports for the jobs of a schedule's occurrences.
  void OnOccurrences(const std::vector<NewJob>& jobs, absl::Time now);
  // Kick() through KickIds() while anyone listens, telling each job kicked.
  absl::StatusOr<int> KickTelling(absl::string_view topic, int max);
  // Events for jobs that a store call moved, and for the dependants it
  // settled (EmitSettled()) after them.
  void EmitMoved(const std::vector<Transition>& moved,
                 const std::vector<Settled>& settled);
  // Events for the jobs a store call settled (Backend's `settled`): what it
  // released (kUnblocked), sent dead (kDead) or deleted (kCancelled) when
  // a job they waited for was acknowledged, died or left.
  void EmitSettled(absl::Span<const Settled> settled);
  // The events of EmitMoved()'s moves alone.
  void EmitTransitions(const std::vector<Transition>& moved);
  void Emit(EventType type, absl::string_view id, absl::string_view topic,
            int attempts = 0, absl::string_view error = "",
            absl::Time due = absl::InfinitePast());
  // The event of `lease` ending (kSucceeded, kFailed), with when it began.
  void EmitLeaseEnd(EventType type, const Lease& lease,
                    absl::string_view error = "");
  static Event LeaseEndEvent(EventType type, const Lease& lease, absl::Time at,
                             absl::string_view error = "");
  // An event at `at`.
  static Event MakeEvent(EventType type, absl::string_view id,
                         absl::string_view topic, absl::Time at,
                         int attempts = 0, absl::string_view error = "",
                         absl::Time due = absl::InfinitePast());
  // Tells the listeners one call's events together (EventHub::EmitAll),
  // when anyone listens: `add(at, events)` appends them, each stamped `at`,
  // the time read once after the store call (so after the moves it made).
  template <typename Add>
  void EmitCall(Add add) {
    if (!events_.active()) return;
    const absl::Time at = clock_->Now();
    std::vector<Event> events;
    add(at, events);
    events_.EmitAll(events);
  }
  // Marks the calling thread as one of this scheduler's own.
  void MarkOwnThread();
  bool OnOwnThread() const;

  const std::unique_ptr<Backend> backend_;
  const SchedulerOptions options_;
  Clock* const clock_;
  const std::string id_prefix_;
  std::atomic<uint64_t> id_counter_{0};
  // Set once this process enqueued a job that waits for others: from then
  // on an Ack(), a death or a Cancel() may have made jobs ready or delayed
  // that the store does not announce (see DependantsMayHaveMoved()).
  std::atomic<bool> enqueued_waiting_{false};
  internal::EventHub events_;
  // The store's schedules as this process runs them; outlives promotion_,
  // whose Tick() runs them.
  internal::ScheduleRunner schedules_;
  // How this process learns that something is due: the timers, the store's
  // news, the blocked Reserve() calls and the timer thread.
  internal::Promotion promotion_;
  internal::WorkerPool workers_;
  // WaitForResult(): woken by this process's Ack() and Fail().
  internal::ResultWaiter results_;
  // Takes the events to the store's log (SchedulerOptions::event_log);
  // null when off. Stop() closes it, before the store goes.
  std::unique_ptr<internal::EventLogWriter> event_log_;
  // Who this scheduler's leases are held by (SchedulerOptions::name, or
  // "<host name>:<pid>"), stored with each one (ReserveReport::holder).
  std::string holder_;
  // Serializes Start() and Stop(), so a second Stop() returns only when the
  // threads are gone.
  absl::Mutex threads_mu_;
};

}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_SCHEDULER_IMPL_H_
