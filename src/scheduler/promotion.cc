// Copyright delayq authors.

#include "src/scheduler/promotion.h"

#include <algorithm>
#include <utility>

namespace delayq {
namespace internal {

Promotion::Promotion(Backend& backend, Clock& clock,
                     const SchedulerOptions& options, MovedCallback on_moved)
    : backend_(backend),
      clock_(clock),
      options_(options),
      on_moved_(std::move(on_moved)),
      timers_(clock.Now(), options.tick) {}

Promotion::~Promotion() {
  news_.reset();
  StopTimerThread();
}

absl::Status Promotion::Init() {
  // Subscribed before the first look at the store, so that no change falls
  // between the look and the news.
  // A store that cannot deliver news (a SQLite file in a folder this
  // process may not write to) still works: the scheduler then looks at it
  // every poll_interval, as at a store without news.
  absl::StatusOr<std::unique_ptr<NewsSubscription>> news =
      backend_.Subscribe([this](const StoreNews& n) { OnNews(n); });
  if (news.ok()) news_ = *std::move(news);
  absl::StatusOr<absl::Time> next = backend_.NextDue();
  if (!next.ok()) return next.status();
  absl::MutexLock lock(&mu_);
  ArmPollLocked(*next);
  next_refresh_ = clock_.Now() + LookInterval();
  return absl::OkStatus();
}

absl::Duration Promotion::LookInterval() const {
  return news_ != nullptr ? options_.news_poll_interval
                          : options_.poll_interval;
}

// --- Deadlines -------------------------------------------------------------

void Promotion::Arm(absl::Time at) {
  // Most deadlines come after the one the local timer holds, and need no
  // lock: the caller wrote its job to the store before this look, and a
  // Tick() that fires the local timer publishes that before it reads the
  // store's next due time. So either this look sees the timer gone and
  // arms, or that read sees the job.
  if (absl::ToUnixNanos(at) > local_ns_.load(std::memory_order_acquire)) {
    return;
  }
  absl::MutexLock lock(&mu_);
  ArmLocked(at);
}

void Promotion::ArmLeases(absl::Span<const Lease> leases) {
  if (leases.empty()) return;
  absl::Time earliest = absl::InfiniteFuture();
  for (const Lease& lease : leases) {
    earliest = std::min(earliest, lease.deadline);
  }
  Arm(earliest);
}

void Promotion::ArmLocked(absl::Time at) {
  if (at >= timers_.LocalAt()) return;
  const absl::Time before = timers_.NextWake();
  timers_.Arm(at);
  PublishLocalLocked();
  NoteEarliestLocked(before);
}

void Promotion::PublishLocalLocked() {
  local_ns_.store(absl::ToUnixNanos(timers_.LocalAt()),
                  std::memory_order_release);
}

void Promotion::ArmPollLocked(absl::Time at) {
  const absl::Time before = timers_.NextWake();
  timers_.ArmPoll(at);
  NoteEarliestLocked(before);
}

void Promotion::NoteEarliestLocked(absl::Time before) {
  if (timers_.NextWake() < before) ++timers_changed_;
}

// --- Promoting -------------------------------------------------------------

absl::StatusOr<int> Promotion::Tick() {
  const absl::Time now = clock_.Now();
  bool refresh;
  bool reload_schedules;
  size_t fired;
  {
    absl::MutexLock lock(&mu_);
    refresh = now >= next_refresh_;
    if (refresh) next_refresh_ = now + LookInterval();
    reload_schedules = refresh || schedules_stale_;
    schedules_stale_ = false;
    fired = timers_.Advance(now);
    PublishLocalLocked();
  }
  if (tick_hook_) Arm(tick_hook_(now, reload_schedules));
  // Always ask the store: jobs of other processes are due without a timer
  // here. The timers decide when to wake, not what is due.
  int moved = 0;
  if (absl::Status s = PromoteAll(now, &moved); !s.ok()) {
    // The timers that fired are gone; look at the store again next time.
    absl::MutexLock lock(&mu_);
    next_refresh_ = now;
    return s;
  }
  // After any timer, the store says when to look next: the local timer
  // only knew the earliest of this process's deadlines.
  if (refresh || fired > 0) RefreshFromStore(now);
  return moved;
}

absl::Status Promotion::PromoteAll(absl::Time now, int* moved) {
  // Each batch with the time it is sent: a long backlog takes a while, and a
  // store that checks the caller's clock (Redis) refuses a stale one.
  for (absl::Time at = now;; at = clock_.Now()) {
    absl::StatusOr<PromoteResult> step =
        backend_.PromoteDue(at, options_.promote_batch);
    if (!step.ok()) return step.status();
    *moved += static_cast<int>(step->transitions.size());
    Moved(step->transitions, step->settled);
    if (!step->more) return absl::OkStatus();
  }
}

void Promotion::Moved(const std::vector<Transition>& moved,
                      const std::vector<Settled>& settled) {
  if (moved.empty() && settled.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    const bool waiting = waiters_.load() > 0;
    for (const Transition& t : moved) {
      // Only jobs that became ready make a waiter look again.
      if (waiting && (t.kind == Transition::Kind::kPromoted ||
                      t.kind == Transition::Kind::kExpired)) {
        ++topic_signal_[SlotOf(t.topic)];
      }
    }
    for (const Settled& s : settled) {
      if (waiting && s.kind == Settled::Kind::kReady) {
        ++topic_signal_[SlotOf(s.topic)];
      }
    }
  }
  on_moved_(moved, settled);
}

void Promotion::RefreshFromStore(absl::Time now) {
  absl::StatusOr<absl::Time> next = backend_.NextDue();
  if (!next.ok()) return;  // the next refresh tries again
  absl::MutexLock lock(&mu_);
  if (*next > now) {
    stale_look_ = kFirstStaleLook;
    ArmPollLocked(*next);
    return;
  }
  // Everything due at `now` was just promoted. A store that still reports a
  // time at or before it runs on another clock (Redis server time), just
  // got a job from another process (whose news arms the news timer), or
  // holds due jobs another process's call has locked and skipped (PostgreSQL
  // moves them in that call, or leaves them if it stops at its limit).
  // Looking again soon, twice as late each time up to LookInterval(), finds
  // what the other call left without spinning on a clock that stays behind.
  // A stale time other than the last one is progress, not a stuck clock:
  // other calls are moving due jobs as they come (workers that promote
  // their topic's jobs while this looked), and the next job to come due
  // must not wait for a look that the last ones pushed back.
  if (*next != last_stale_) stale_look_ = kFirstStaleLook;
  last_stale_ = *next;
  ArmPollLocked(now + std::min(stale_look_, LookInterval()));
  stale_look_ = std::min(stale_look_ * 2, LookInterval());
}

void Promotion::OnNews(const StoreNews& news) {
  switch (news.kind) {
    case StoreNews::Kind::kReady:
      WakeTopic(news.topic);
      return;
    case StoreNews::Kind::kDue: {
      absl::MutexLock lock(&mu_);
      const absl::Time before = timers_.NextWake();
      timers_.ArmNews(news.at);
      NoteEarliestLocked(before);
      return;
    }
    case StoreNews::Kind::kSchedules: {
      // Read them at the next Tick(), at once.
      absl::MutexLock lock(&mu_);
      schedules_stale_ = true;
      ArmPollLocked(clock_.Now());
      ++timers_changed_;
      return;
    }
    case StoreNews::Kind::kResync: {
      // Whatever was missed is in the store: look at it now, and let every
      // blocked Reserve() look too.
      absl::MutexLock lock(&mu_);
      next_refresh_ = absl::InfinitePast();
      ArmPollLocked(clock_.Now());
      ++timers_changed_;
      ++all_topics_signal_;
      return;
    }
  }
}

// --- Waiting ----------------------------------------------------------------

void Promotion::WakeTopic(absl::string_view topic) {
  if (waiters_.load() == 0) return;
  absl::MutexLock lock(&mu_);
  ++topic_signal_[SlotOf(topic)];
}

void Promotion::Resync() { OnNews(StoreNews()); }

void Promotion::WakeAll() {
  absl::MutexLock lock(&mu_);
  ++all_topics_signal_;
}

size_t Promotion::SlotOf(absl::string_view topic) {
  return absl::Hash<absl::string_view>{}(topic) % kTopicSlots;
}

uint64_t Promotion::SignalOf(absl::string_view topic) const {
  return all_topics_signal_ + topic_signal_[SlotOf(topic)];
}

Promotion::Seen Promotion::Observe(absl::string_view topic) {
  absl::MutexLock lock(&mu_);
  return Seen{SignalOf(topic), timers_changed_};
}

absl::Time Promotion::Await(absl::string_view topic, const Seen& seen,
                            absl::Time until) {
  absl::MutexLock lock(&mu_);
  // With the timer thread running, it ticks and its promotions wake the
  // topic: the timers are not this waiter's to watch.
  const bool watch_timers = !timer_running_;
  struct Args {
    const Promotion* p;
    absl::string_view topic;
    const Seen* seen;
    bool watch_timers;
  } args{this, topic, &seen, watch_timers};
  const absl::Time next_timer =
      watch_timers ? timers_.NextWake() : absl::InfiniteFuture();
  if (next_timer > clock_.Now()) {
    clock_.AwaitWithDeadline(
        &mu_,
        absl::Condition(
            +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return (a->watch_timers &&
                      a->p->timers_changed_ != a->seen->timers) ||
                     a->p->SignalOf(a->topic) != a->seen->topic_signal;
            },
            &args),
        std::min(until, next_timer));
  }
  return next_timer;
}

// --- The timer thread --------------------------------------------------------

void Promotion::StartTimerThread(std::function<void()> on_start) {
  {
    absl::MutexLock lock(&mu_);
    timer_stopping_ = false;
    timer_running_ = true;
  }
  timer_thread_ = std::thread([this, on_start = std::move(on_start)] {
    on_start();
    TimerLoop();
  });
}

void Promotion::StopTimerThread() {
  if (!timer_thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    timer_stopping_ = true;
  }
  timer_thread_.join();
  // Waiters that slept on the thread's ticks wake and watch the timers.
  absl::MutexLock lock(&mu_);
  timer_running_ = false;
  ++all_topics_signal_;
}

void Promotion::ReportError(absl::string_view what,
                            const absl::Status& error) const {
  if (options_.on_background_error) options_.on_background_error(what, error);
}

void Promotion::TimerLoop() {
  for (;;) {
    const absl::StatusOr<int> ticked = Tick();
    if (!ticked.ok()) ReportError("promote", ticked.status());
    const bool ok = ticked.ok();
    absl::MutexLock lock(&mu_);
    if (timer_stopping_) return;
    const absl::Time now = clock_.Now();
    absl::Time wake = std::min(timers_.NextWake(), next_refresh_);
    // A store that keeps failing is retried at the poll interval, not in a
    // busy loop.
    if (!ok) wake = std::max(wake, now + options_.poll_interval);
    struct Args {
      Promotion* p;
      uint64_t seen;
    } args{this, timers_changed_};
    clock_.AwaitWithDeadline(&mu_,
                             absl::Condition(
                                 +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                   return a->p->timer_stopping_ ||
                                          a->p->timers_changed_ != a->seen;
                                 },
                                 &args),
                             wake);
    if (timer_stopping_) return;
  }
}

}  // namespace internal
}  // namespace delayq
