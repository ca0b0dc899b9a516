// Copyright delayq authors.
//
// DueTimers — the scheduler's cache of when the store will next have work.
//
// Three timers, not one per job: the store already orders every job's due
// time, so this process only needs to know when to look next.
//   * the local timer: the earliest deadline this process set itself since
//     it last fired (a delayed job it enqueued, a lease it holds, a retry's
//     backoff). A deadline that went away (the lease was acked) only costs
//     one look at the store that finds nothing;
//   * the poll timer: the store's own next due time as last read, which
//     covers every process's jobs;
//   * the news timer: an earlier due time the store announced.
// Whenever one fires, the scheduler promotes what is due and reads the
// store's next due time again, so each job is found at its time however many
// are pending, in constant memory. Three times need no timing wheel: the
// next wake-up is the least of three. A fired timer only means "ask the
// store": the store, not this cache, decides what is due.
//
// Times are rounded up to the scheduler's tick (SchedulerOptions::tick),
// counted from `origin`, and "now" down, so a timer never fires early and
// at most one tick late; like a clock, the timers' time never goes back.
//
// Not thread-safe: the scheduler guards it with its mutex.

#ifndef DELAYQ_SRC_SCHEDULER_DUE_TIMERS_H_
#define DELAYQ_SRC_SCHEDULER_DUE_TIMERS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "delayq/tick_converter.h"

namespace delayq {
namespace internal {

class DueTimers {
 public:
  DueTimers(absl::Time origin, absl::Duration tick);

  // Arms the local timer for `at`, unless it is armed for an earlier time.
  void Arm(absl::Time at);
  // When the local timer is armed for; absl::InfiniteFuture() if it is not.
  // Arm() of a later time changes nothing (the common case).
  absl::Time LocalAt() const { return at_[kLocal]; }

  // Arms the poll timer for `at`, replacing the previous one.
  void ArmPoll(absl::Time at);

  // Arms the news timer for `at` (the store announced something due then),
  // unless it is already armed for an earlier time. Kept apart from the poll
  // timer so that a look at the store that raced with the news cannot
  // replace it.
  void ArmNews(absl::Time at);

  // Fires every timer due at `now` (nothing when `now` is before the latest
  // time passed here). Returns how many fired; after any, the caller reads
  // the store's next due time and re-arms the poll timer.
  size_t Advance(absl::Time now);

  // When the earliest armed timer fires, not before the latest time passed
  // to Advance(); absl::InfiniteFuture() if none is armed.
  absl::Time NextWake() const;

 private:
  enum Kind { kLocal, kPoll, kNews, kKinds };

  // Arms timer `kind` for `at`; when `earliest`, only if that is earlier
  // than where it is armed.
  void ArmAt(Kind kind, absl::Time at, bool earliest);
  // The earliest tick a timer is armed to fire at; false if none is armed.
  bool EarliestTick(uint64_t* tick) const;
  // Sets fire_at_ after the timers changed.
  void NoteChange();

  TickConverter ticks_;
  // The latest time passed to Advance().
  absl::Time latest_ = absl::InfinitePast();
  // Per timer: the time it is armed for (absl::InfiniteFuture() when not
  // armed) and the tick it fires at.
  std::array<absl::Time, kKinds> at_;
  std::array<uint64_t, kKinds> tick_{};
  // The start of the earliest armed tick: before it nothing fires, which
  // Advance() sees without converting its time to ticks (the idle Tick()).
  absl::Time fire_at_ = absl::InfiniteFuture();
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_DUE_TIMERS_H_
