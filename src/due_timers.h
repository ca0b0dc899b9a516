// Copyright delayq authors.
//
// DueTimers — the scheduler's cache of when the store will next have work.
//
// One timer per job this process knows a deadline of (a delayed job's run_at,
// a lease's deadline, a retry's backoff), plus one "poll" timer at the store's
// own next due time, which covers jobs written by other processes. Timers live
// in a hierarchical timing wheel, so arming and disarming are O(1) and the
// next wake-up is found without a scan. A fired timer only means "ask the
// store to promote": the store, not this cache, decides what is due.
//
// Not thread-safe: the scheduler guards it with its mutex.

#ifndef DELAYQ_SRC_DUE_TIMERS_H_
#define DELAYQ_SRC_DUE_TIMERS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/timing_wheel.h"

namespace delayq {
namespace internal {

class DueTimers {
 public:
  // Keeps at most `max_job_timers` job timers.
  DueTimers(absl::Time origin, absl::Duration tick, size_t max_job_timers);

  // Arms (or re-arms) the timer of job `id` for `at`. When max_job_timers
  // are armed already, a new job's time arms the news timer instead (see
  // ArmNews()): its firing makes the scheduler ask the store, which knows
  // every job's time.
  void Arm(absl::string_view id, absl::Time at);

  // Disarms the timer of job `id`, if any.
  void Disarm(absl::string_view id);

  // Arms the poll timer for `at`, replacing the previous one.
  void ArmPoll(absl::Time at);

  // Arms the news timer for `at` (the store announced something due then),
  // unless it is already armed for an earlier time. Kept apart from the poll
  // timer so that a look at the store that raced with the news cannot
  // replace it.
  void ArmNews(absl::Time at);

  struct Fired {
    size_t timers = 0;  // job and poll timers that fired
    bool poll = false;  // the poll or the news timer was among them
  };

  // Fires every timer due at `now`.
  Fired Advance(absl::Time now);

  // When the earliest pending timer may fire; absl::InfiniteFuture() if none.
  absl::Time NextWake() const;

  // Pending job timers (the poll timer not counted).
  size_t size() const { return by_id_.size(); }

 private:
  // What the wheel holds: the job id ("" for the poll and news timers) and
  // the serial of the Arm() call, so a fired timer only clears its own entry
  // in by_id_.
  static constexpr uint64_t kPollSerial = 0;
  static constexpr uint64_t kNewsSerial = 1;
  struct Entry {
    std::string id;
    uint64_t serial;
  };
  struct Armed {
    TimerId timer;
    uint64_t serial;
  };

  const size_t max_job_timers_;
  TickConverter ticks_;
  TimingWheel<Entry> wheel_;
  absl::flat_hash_map<std::string, Armed> by_id_;
  TimerId poll_;
  TimerId news_;
  absl::Time news_at_ = absl::InfiniteFuture();
  uint64_t next_serial_ = kNewsSerial + 1;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_DUE_TIMERS_H_
