// Copyright delayq authors.
//
// Promotion — how this process learns that something in the store is due,
// and what it does then.
//
// The store is shared by many processes; this process keeps a cache of when
// it will next have work, three timers (DueTimers), fed by three sources:
//   * the earliest deadline this process set itself: a delayed job it
//     enqueued, a lease it holds, a retry's backoff (Arm());
//   * the store's news of every process's changes (Backend::Subscribe()): a
//     topic that got a ready job wakes that topic's waiters at once, an
//     earlier due time arms the news timer;
//   * a safety-net look at the store's NextDue() every LookInterval() (rare
//     when the store sends news), so that lost news or a crashed process
//     loses nothing.
// When a timer fires, Tick() asks the store to promote everything due
// (PromoteDue() until nothing is left) and wakes the waiters of the topics
// that got ready jobs. A timer thread (StartTimerThread()) or the host's own
// loop calls Tick(); a blocked Reserve() that finds a timer due calls it too.
//
// Thread-safe. The mutex inside is a leaf: no store call, callback or other
// lock is taken under it.

#ifndef DELAYQ_SRC_SCHEDULER_PROMOTION_H_
#define DELAYQ_SRC_SCHEDULER_PROMOTION_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/clock.h"
#include "delayq/scheduler.h"
#include "src/scheduler/due_timers.h"

namespace delayq {
namespace internal {

class Promotion {
 public:
  // Tells SchedulerOptions::on_background_error, when there is one, of a
  // store error a thread of the scheduler met (see there).
  void ReportError(absl::string_view what, const absl::Status& error) const;

  // Called, with no lock held, with the jobs a store call moved (promoted,
  // expired, dead) and the dependants those moves settled, so the scheduler
  // can report events.
  using MovedCallback = std::function<void(const std::vector<Transition>&,
                                           const std::vector<Settled>&)>;
  // Runs at the start of every Tick(), with no lock held, with the clock's
  // now and whether the store's schedules are to be read again (a periodic
  // look, lost news, or news of a schedule change). Returns when it next
  // needs a Tick(), which is armed like a deadline of this process's.
  using TickHook = std::function<absl::Time(absl::Time now, bool reload)>;

  // `backend` and `clock` must outlive this object.
  Promotion(Backend& backend, Clock& clock, const SchedulerOptions& options,
            MovedCallback on_moved);
  ~Promotion();

  Promotion(const Promotion&) = delete;
  Promotion& operator=(const Promotion&) = delete;

  // Sets the TickHook. Call before Init() and before any other call.
  void SetTickHook(TickHook hook) { tick_hook_ = std::move(hook); }

  // Subscribes to the store's news and reads its next due time.
  absl::Status Init();

  // How often the store is looked at without news: rarely when it sends
  // news, every poll_interval otherwise.
  absl::Duration LookInterval() const;

  // --- Deadlines this process knows ---------------------------------------

  // Something this process wrote is due at `at`: look at the store then,
  // unless a look is due earlier. A deadline that goes away (a lease acked)
  // needs no disarming: the look finds nothing and reads the next due time.
  void Arm(absl::Time at);
  void ArmLeases(absl::Span<const Lease> leases);

  // --- Promoting -----------------------------------------------------------

  // Fires the timers due at the clock's now, promotes everything due in the
  // store, and (when a poll or news timer fired, or the safety-net interval
  // passed) reads the store's next due time. Returns the jobs moved.
  absl::StatusOr<int> Tick();

  // Takes note of jobs a store call moved (Reserve() promotes its topic on
  // its own) and of the dependants it settled: the waiters of the topics
  // they made ready wake, and the MovedCallback hears of them.
  void Moved(const std::vector<Transition>& moved,
             const std::vector<Settled>& settled);

  // --- Waiting for work ----------------------------------------------------

  // Wakes the blocked Reserve() calls of `topic`, or of every topic.
  void WakeTopic(absl::string_view topic);
  void WakeAll();
  // Reads the store's next due time again at once and wakes every blocked
  // Reserve(), as after lost news: for a change whose effects this process
  // cannot tell (a job's dependants made ready or delayed).
  void Resync();
  // Whether any Reserve() is in a WaitScope.
  bool HasWaiters() const { return waiters_.load() > 0; }

  // While a WaitScope lives, wake-ups of topics are counted for it. Take one
  // before the first look at the store, so that a job that becomes ready
  // during that look still wakes the caller.
  class WaitScope {
   public:
    explicit WaitScope(Promotion& p) : p_(p) { ++p_.waiters_; }
    ~WaitScope() { --p_.waiters_; }
    WaitScope(const WaitScope&) = delete;
    WaitScope& operator=(const WaitScope&) = delete;

   private:
    Promotion& p_;
  };

  // What a waiter has seen; taken before it looks at the store.
  struct Seen {
    uint64_t topic_signal = 0;
    uint64_t timers = 0;
  };
  Seen Observe(absl::string_view topic);

  // Sleeps until `topic` is woken or `until`, whichever is first. Without
  // the timer thread, also until the timers changed since `seen` or the
  // earliest timer is due, returning at once when one is due already.
  // Returns when the earliest timer is due, so the caller can Tick() when
  // that is now or past; with the timer thread running, InfiniteFuture():
  // that thread ticks, and the jobs it makes ready wake their topic's
  // waiters. (Waking every waiter at every timer would have each of them
  // tick and look at the store at once, for a job only one can take.)
  absl::Time Await(absl::string_view topic, const Seen& seen, absl::Time until);

  // --- The timer thread ----------------------------------------------------

  // Runs Tick() whenever the earliest timer is due, on a thread of its own
  // that first runs `on_start`.
  void StartTimerThread(std::function<void()> on_start);
  // Ends the timer thread and waits for it.
  void StopTimerThread();

 private:
  absl::Status PromoteAll(absl::Time now, int* moved);
  void RefreshFromStore(absl::Time now);
  void OnNews(const StoreNews& news);
  void TimerLoop();
  // Arming helpers: note when the earliest timer moved earlier, so sleepers
  // look again.
  void ArmLocked(absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ArmPollLocked(absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteEarliestLocked(absl::Time before) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies the local timer's time to local_ns_.
  void PublishLocalLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t SignalOf(absl::string_view topic) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The topic's slot in topic_signal_.
  static size_t SlotOf(absl::string_view topic);

  Backend& backend_;
  Clock& clock_;
  const SchedulerOptions options_;
  const MovedCallback on_moved_;
  TickHook tick_hook_;

  absl::Mutex mu_;
  DueTimers timers_ ABSL_GUARDED_BY(mu_);
  // When Tick() next reads the store's next due time.
  absl::Time next_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // How soon to look again when the store reports a due time that already
  // passed (RefreshFromStore()): kFirstStaleLook, doubling while it keeps
  // reporting the same one, back to kFirstStaleLook once it reports a
  // future one or another that passed.
  static constexpr absl::Duration kFirstStaleLook = absl::Milliseconds(10);
  absl::Duration stale_look_ ABSL_GUARDED_BY(mu_) = kFirstStaleLook;
  // The last due time the store reported that had already passed.
  absl::Time last_stale_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Bumped whenever a job of a topic in the slot may have become ready. A
  // fixed number of slots rather than one per topic, so that topics that
  // come and go leave nothing behind: topics that share a slot only wake
  // each other's waiters for one more look at the store.
  static constexpr size_t kTopicSlots = 1024;
  std::array<uint64_t, kTopicSlots> topic_signal_ ABSL_GUARDED_BY(mu_){};
  // Set by news of a schedule change: the next Tick() has the TickHook read
  // the schedules again.
  bool schedules_stale_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped for every topic at once (lost news, Stop()).
  uint64_t all_topics_signal_ ABSL_GUARDED_BY(mu_) = 0;
  // Bumped when the earliest timer moved earlier: whoever sleeps until the
  // next timer (the timer thread, a blocked Reserve) looks again.
  uint64_t timers_changed_ ABSL_GUARDED_BY(mu_) = 0;
  // The local timer's time in Unix nanoseconds, rounded down (the largest
  // value while it is not armed), written under mu_ whenever it changes and
  // read without it, so that Arm() of a later deadline takes no lock.
  std::atomic<int64_t> local_ns_{std::numeric_limits<int64_t>::max()};
  // Live WaitScopes; while there are none, nobody needs topic signals.
  std::atomic<int> waiters_{0};

  std::thread timer_thread_;
  bool timer_stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Whether the timer thread runs (and ticks when a timer is due).
  bool timer_running_ ABSL_GUARDED_BY(mu_) = false;

  // Set by Init(); null when the store sends no news. Destroyed first (see
  // ~Promotion()), so no news arrives while the rest is torn down.
  std::unique_ptr<NewsSubscription> news_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_PROMOTION_H_
