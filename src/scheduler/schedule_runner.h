// Copyright delayq authors.
//
// ScheduleRunner — this process's part in running the store's schedules.
//
// The store holds the schedules (Backend::PutSchedule()); every process
// that runs a Scheduler on it keeps a copy, with each schedule's next
// occurrence, and the scheduler arms its timing wheel for the earliest. When
// that comes, RunDue() plans the due occurrences (occurrences.h) and hands
// them to Backend::FireSchedule() with the revision it last read: one
// process's call enqueues them and moves the schedule on; every other
// process's is refused (AlreadyExists), so it reads the schedules again and
// finds the occurrence done. The copy is read again when the store
// announces a schedule change, and at the scheduler's periodic look at the
// store.
//
// Thread-safe. The mutex inside is a leaf, never held across a store call
// or the callback.

#ifndef DELAYQ_SRC_SCHEDULER_SCHEDULE_RUNNER_H_
#define DELAYQ_SRC_SCHEDULER_SCHEDULE_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/schedule.h"
#include "src/common/schedule_spec.h"

namespace delayq {
namespace internal {

class ScheduleRunner {
 public:
  // Called, with no lock held, with the jobs this process enqueued for
  // occurrences, and the `now` they were enqueued at.
  using Enqueued =
      std::function<void(const std::vector<NewJob>& jobs, absl::Time now)>;

  // How long a schedule whose store call failed waits before it tries again.
  static constexpr absl::Duration kRetryAfter = absl::Seconds(1);

  // Called, with no lock held, with a store error that a firing met (the
  // schedule tries again after kRetryAfter).
  using ErrorReport =
      std::function<void(absl::string_view what, const absl::Status& error)>;

  ScheduleRunner(Backend& backend, Enqueued on_enqueued, ErrorReport on_error);

  // Validate()
  //
  // InvalidArgument, naming the problem, for a schedule the scheduler must
  // not store: a bad name (1..150 bytes of [A-Za-z0-9._:-]), spec, time zone
  // or topic; a spec with no occurrence after `now`; job options that are
  // bad or set what the schedule decides (id, delay, run_at, replace); a
  // missed policy bound outside [1, kMaxMissedRuns]; jitter outside
  // [0, 1h]; a payload over `max_payload_bytes`.
  static absl::Status Validate(const ScheduleRecord& s, absl::Time now,
                               size_t max_payload_bytes);

  // Put()
  //
  // Stores the (valid) schedule and reads the schedules again. Returns when
  // it next runs.
  absl::StatusOr<absl::Time> Put(const ScheduleRecord& s, absl::Time now);

  // Remove()
  //
  // Deletes the schedule from the store. NotFound when there is none.
  absl::Status Remove(absl::string_view name, absl::Time now);

  // List()
  //
  // The store's schedules with their next runs, sorted by name; also
  // refreshes this process's copy.
  absl::StatusOr<std::vector<ScheduleInfo>> List();

  // Reload()
  //
  // Reads the store's schedules into this process's copy. A store that
  // keeps no schedules (Unimplemented) has none.
  absl::Status Reload();

  // RunDue()
  //
  // Enqueues the occurrences due at `now` (first reading the schedules
  // again when `reload`), and returns when it next needs to run: the
  // earliest next occurrence, absl::InfiniteFuture() when there is none.
  // When another thread is already running them, returns
  // absl::InfiniteFuture() at once (that thread's call returns what comes
  // next). Takes no lock when nothing is due and `reload` is false: every
  // Tick() calls it.
  absl::Time RunDue(absl::Time now, bool reload);

  // When RunDue() next has work. Lock-free.
  absl::Time NextWake() const;

 private:
  struct Entry {
    ScheduleRecord record;
    // Unset when the stored spec or zone does not parse (written by another
    // version of the program): never runs here.
    std::optional<ScheduleSpec> spec;
    absl::TimeZone tz;
    absl::Time next = absl::InfiniteFuture();
    // After a failed store call: not before this.
    absl::Time retry_at = absl::InfinitePast();
  };

  static Entry MakeEntry(ScheduleRecord record);
  // Enqueues the due occurrences of `e` at `now` (`without_jobs`: passes
  // them over instead) and returns the schedule's new done_through.
  // AlreadyExists or NotFound when another process got there first, or the
  // schedule changed or went.
  absl::StatusOr<absl::Time> Fire(const Entry& e, absl::Time now,
                                  bool without_jobs);
  // One pass over the due schedules. Returns the names whose calls were
  // refused (AlreadyExists), with the revisions they were tried at.
  std::vector<std::pair<std::string, int64_t>> FirePass(
      absl::Time now, const absl::flat_hash_map<std::string, int64_t>& stuck);
  void Replace(std::vector<ScheduleRecord> records);
  void UpdateEarliestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Backend& backend_;
  const Enqueued on_enqueued_;
  const ErrorReport on_error_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // The earliest time any entry is due (next, or retry_at after a failure),
  // in Unix nanoseconds rounded down (so never late); kNone when nothing is
  // (or past 2262, where nanoseconds end: no schedule gets there, next is
  // capped at kLatestRunAt). Written under mu_, read without it.
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> earliest_ns_{kNone};
  // Set while a RunDue() fires: a second one leaves the work to it.
  std::atomic<bool> running_{false};
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_SCHEDULE_RUNNER_H_
