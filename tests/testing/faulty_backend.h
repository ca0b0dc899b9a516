// Copyright delayq authors.
//
// faulty_backend.h — a store that fails and stalls on a seeded schedule.
//
// FaultyBackend wraps a real store (memory, SQLite, Redis) and, for every
// call of the Backend interface, decides from a seed whether to
//   * fail it BEFORE the store acted: the call never reaches the store, the
//     caller gets Unavailable or DeadlineExceeded;
//   * fail it AFTER the store acted: the store changed (a job added, a
//     lease granted, an ack applied), the caller gets the error all the
//     same — a reply lost on the way back;
//   * delay it: on a SimulatedClock the clock is advanced by the delay
//     before the call goes on, so time passes while the call is in flight
//     (the store still acts on the `now` the caller passed: a slow store);
//     without one, the calling thread sleeps for the delay.
// The decision for the n-th call of a kind is a pure function of (seed,
// kind, n), so one seed gives one fault schedule whatever other threads do
// in between; a single-threaded test replays exactly. Every injection is
// recorded (Report()), so a failing seed can be explained.
//
// The wrapper also keeps a ledger of what the store really did, read from
// the store's own replies before any failure is injected: which jobs it
// added, acked and cancelled, and every lease it granted with the deadline
// it last gave it. Tests check their guarantees against that ledger, not
// against what the caller was told.
//
// Does not own the store. Thread-safe.
//
//   FaultPlan plan;
//   plan.seed = 7;
//   plan.fail_before = 0.1;
//   plan.fail_after = 0.1;
//   FaultyBackend faulty(store.get(), plan, &clock);
//   auto scheduler = Scheduler::Create(faulty.Borrow(), options);

#ifndef DELAYQ_TESTS_TESTING_FAULTY_BACKEND_H_
#define DELAYQ_TESTS_TESTING_FAULTY_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/clock.h"

namespace delayq {
namespace testing {

// Every call of the Backend interface.
enum class StoreCall {
  kAdd,
  kReserve,
  kAck,
  kAckBatch,
  kFail,
  kRelease,
  kTouch,
  kCancel,
  kGet,
  kList,
  kStats,
  kTopics,
  kKick,
  kKickJob,
  kPromoteDue,
  kNextDue,
  kReplace,
  kSetPaused,
  kPausedTopics,
  kSetLimit,
  kClearLimit,
  kLimits,
  kPutSchedule,
  kRemoveSchedule,
  kListSchedules,
  kFireSchedule,
  kSubscribe,
};
inline constexpr int kStoreCallCount =
    static_cast<int>(StoreCall::kSubscribe) + 1;

// "Add", "Reserve", ...
const char* StoreCallName(StoreCall call);

// Calls that change the store (a failure after them leaves a change the
// caller did not hear of).
bool ChangesStore(StoreCall call);

enum class FaultKind { kFailBefore, kFailAfter, kDelay };
const char* FaultKindName(FaultKind kind);

// FaultPlan
//
// Per call, with these probabilities (which must sum to at most 1): fail
// before, fail after, delay. A failure is Unavailable or DeadlineExceeded
// with even odds; a delay is uniform in (0, max_delay].
struct FaultPlan {
  uint64_t seed = 1;
  double fail_before = 0;
  double fail_after = 0;
  double delay = 0;
  absl::Duration max_delay = absl::Milliseconds(200);
  // The calls that may get faults; empty means every call.
  std::set<StoreCall> calls;
};

// One fault injected.
struct Injection {
  uint64_t seq = 0;  // order among all injections
  StoreCall call = StoreCall::kAdd;
  uint64_t nth = 0;  // the call's index among calls of its kind
  FaultKind kind = FaultKind::kFailBefore;
  absl::StatusCode code = absl::StatusCode::kOk;  // failures
  absl::Duration delay;                           // delays
  std::string id;      // the job, topic or schedule the call named
  uint64_t token = 0;  // the lease's token, for lease calls
  std::string ToString() const;
};

// A lease the store granted, as the store last set it.
struct GrantedLease {
  std::string id;
  uint64_t token = 0;
  absl::Time granted_at;  // the `now` of the Reserve() that granted it
  // The order in which grants were noted, across all jobs. Notes follow the
  // store's replies, so two grants of one job are noted in the order the
  // store made them unless the first caller is preempted between the
  // store's reply and the note while a whole other grant happens.
  uint64_t grant_seq = 0;
  absl::Time deadline;  // the latest the store gave it (Reserve, Touch)
  // How the lease ended in the store: by this call, when it did, and the
  // `now` of that call. A call's `now` is read before the call, so with
  // delays (and several threads) these times need not follow the order in
  // which the store acted; a lapse (PromoteDue, Reserve) is only ever
  // decided with a `now` at or past the deadline.
  std::optional<StoreCall> ended_by;
  absl::Time ended_at = absl::InfiniteFuture();
  // The Reserve() that granted it failed after acting: nobody holds it.
  bool reply_lost = false;
  // The last Touch() that extended it failed after acting: its holder does
  // not know the deadline moved.
  bool touch_reply_lost = false;
};

class FaultyBackend : public BackendWrapper {
 public:
  // `clock`: advanced for delays; null sleeps instead.
  FaultyBackend(Backend* target, FaultPlan plan,
                SimulatedClock* clock = nullptr);

  // A store for Scheduler::Create() that forwards here and does not own
  // this object (which must outlive it).
  std::unique_ptr<Backend> Borrow();

  // Faults stop (false) or start again (true). Decisions keep counting
  // calls either way, so turning faults back on does not replay the start.
  void set_enabled(bool enabled);
  bool enabled() const;
  const FaultPlan& plan() const { return plan_; }

  // The next call of `call` gets `kind` (with `code` for a failure, `delay`
  // for a delay), whatever the plan says and even while disabled.
  void ForceNext(StoreCall call, FaultKind kind,
                 absl::StatusCode code = absl::StatusCode::kUnavailable,
                 absl::Duration delay = absl::Milliseconds(10));

  // What was injected, in order, and a text of it: the seed, the plan and
  // one line per injection (for a failing test's message).
  std::vector<Injection> Injections() const;
  std::string Report() const;
  // Calls of `call` seen so far, and failures injected into them.
  int64_t Calls(StoreCall call) const;
  int64_t Failures(StoreCall call) const;
  int64_t Failures() const;
  int64_t Delays() const;

  // The ledger of the store's own replies.
  std::set<std::string> Added() const;
  std::set<std::string> Acked() const;
  std::set<std::string> Cancelled() const;
  // Every lease granted, by job id and token.
  using LeaseKey = std::pair<std::string, uint64_t>;
  std::map<LeaseKey, GrantedLease> Leases() const;
  // Tokens whose ending call (Ack, AckBatch, Fail, Release) was failed
  // before it reached the store, by job id.
  std::multimap<std::string, uint64_t> EndsFailedBefore() const;

  // Backend.
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override;
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override;
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override;
  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override;
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override;
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override;
  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override;
  absl::StatusOr<Job> Get(absl::string_view id) override;
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override;
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override;
  absl::StatusOr<std::vector<std::string>> Topics() override;
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override;
  absl::Status KickJob(absl::string_view id, absl::Time now) override;
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override;
  absl::StatusOr<absl::Time> NextDue() override;
  absl::Status Replace(const NewJob& job, absl::Time now) override;
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> PausedTopics() override;
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override;
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override;
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override;
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override;
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override;
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override;
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override;
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override;

 private:
  // What to do with one call.
  struct Decision {
    std::optional<FaultKind> kind;
    absl::StatusCode code = absl::StatusCode::kOk;
    absl::Duration delay;
  };

  // Counts the call, decides its fault, records it and applies a delay.
  // Returns the failure to inject before the call, if any; `*after` is set
  // to the failure to inject after it.
  absl::Status Before(StoreCall call, absl::string_view id, uint64_t token,
                      absl::Status* after);
  Decision Decide(StoreCall call, uint64_t nth)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static absl::Status Failure(StoreCall call, absl::StatusCode code,
                              bool after);
  // Before(), the call `f`, and the failure to inject after it.
  template <typename F>
  auto Run(StoreCall call, absl::string_view id, uint64_t token, F f)
      -> decltype(f());

  void NoteAdded(absl::Span<const NewJob> jobs);
  void NoteGranted(const std::vector<Lease>& leases, absl::Time now,
                   bool reply_lost);
  void NoteEnded(absl::string_view id, uint64_t token, StoreCall by,
                 absl::Time now);
  void NoteEndedJob(absl::string_view id, StoreCall by, absl::Time now);
  void NoteMoved(const std::vector<Transition>& moved, StoreCall by,
                 absl::Time now);
  void NoteEndFailedBefore(absl::string_view id, uint64_t token);

  const FaultPlan plan_;
  SimulatedClock* const clock_;

  mutable absl::Mutex mu_;
  bool enabled_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t calls_[kStoreCallCount] ABSL_GUARDED_BY(mu_) = {};
  uint64_t failures_[kStoreCallCount] ABSL_GUARDED_BY(mu_) = {};
  std::map<StoreCall, Decision> forced_ ABSL_GUARDED_BY(mu_);
  std::vector<Injection> injections_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> added_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelled_ ABSL_GUARDED_BY(mu_);
  std::map<LeaseKey, GrantedLease> leases_ ABSL_GUARDED_BY(mu_);
  // The token of each job's newest lease, so that a Cancel() ends it.
  std::map<std::string, uint64_t> current_ ABSL_GUARDED_BY(mu_);
  uint64_t grants_ ABSL_GUARDED_BY(mu_) = 0;
  std::multimap<std::string, uint64_t> ends_failed_before_ ABSL_GUARDED_BY(mu_);
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_FAULTY_BACKEND_H_
