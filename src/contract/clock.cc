// Copyright delayq authors.

#include "delayq/clock.h"

#include <atomic>

namespace delayq {
namespace {

class SystemClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override {
    return mu->AwaitWithDeadline(cond, deadline);
  }
};

}  // namespace

void Clock::SleepUntil(absl::Time deadline) {
  static const bool kNever = false;
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  AwaitWithDeadline(&mu, absl::Condition(&kNever), deadline);
}

Clock& RealClock() {
  static Clock* clock = new SystemClock();
  return *clock;
}

// A thread blocked in SimulatedClock::AwaitWithDeadline(). `woken` is read by
// the waiter's condition without `mu` held, hence atomic.
struct SimulatedClock::Waiter {
  absl::Mutex* mu;
  const absl::Condition* cond;
  std::atomic<bool> woken{false};
};

SimulatedClock::SimulatedClock(absl::Time start) : now_(start) {}

SimulatedClock::~SimulatedClock() = default;

absl::Time SimulatedClock::Now() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::lock_guard<std::mutex> lock(now_mu_);
  return now_;
}

int SimulatedClock::Waiters() const {
  absl::MutexLock lock(&mu_);
  int blocked = 0;
  for (const auto& [deadline, waiter] : waiters_) {
    if (StillBlocked(*waiter)) ++blocked;
  }
  return blocked;
}

// A waiter whose condition came true stays in waiters_ until its thread
// runs again, which on a loaded machine may be long after: counted as
// blocked, it would let a test move the clock past what the thread is
// about to do. Its mutex held elsewhere (the thread itself, resuming or
// not yet waiting) counts as not blocked too; TryLock() never waits, so
// taking it under mu_ cannot deadlock.
bool SimulatedClock::StillBlocked(const Waiter& waiter) {
  if (waiter.woken.load() || !waiter.mu->TryLock()) return false;
  const bool blocked = !waiter.cond->Eval();
  waiter.mu->Unlock();
  return blocked;
}

bool SimulatedClock::AwaitWithDeadline(absl::Mutex* mu,
                                       const absl::Condition& cond,
                                       absl::Time deadline) {
  if (cond.Eval()) return true;
  Waiter waiter;
  waiter.mu = mu;
  waiter.cond = &cond;
  {
    absl::MutexLock lock(&mu_);
    if (now_ >= deadline) return false;
    waiters_.emplace(deadline, &waiter);
  }
  struct Args {
    const absl::Condition* cond;
    Waiter* waiter;
  } args{&cond, &waiter};
  mu->Await(absl::Condition(
      +[](Args* a) { return a->waiter->woken.load() || a->cond->Eval(); },
      &args));

  bool being_woken = false;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = waiters_.lower_bound(deadline);
         it != waiters_.end() && it->first == deadline; ++it) {
      if (it->second == &waiter) {
        waiters_.erase(it);
        break;
      }
    }
    being_woken = waking_.count(&waiter) > 0;
  }
  if (being_woken) {
    // WakeDue() is about to lock `mu` to poke us. Let it finish before
    // `waiter` goes out of scope; it needs `mu`, so release it meanwhile.
    mu->Unlock();
    {
      absl::MutexLock lock(&mu_);
      struct Poke {
        const std::multiset<Waiter*>* waking;
        Waiter* waiter;
      } poke{&waking_, &waiter};
      mu_.Await(absl::Condition(
          +[](Poke* p) { return p->waking->count(p->waiter) == 0; }, &poke));
    }
    mu->Lock();
  }
  return cond.Eval();
}

void SimulatedClock::Advance(absl::Duration d) {
  if (d <= absl::ZeroDuration()) return;
  {
    absl::MutexLock lock(&mu_);
    std::lock_guard<std::mutex> now_lock(now_mu_);
    now_ += d;
  }
  WakeDue();
}

void SimulatedClock::Set(absl::Time t) {
  {
    absl::MutexLock lock(&mu_);
    if (t <= now_) return;
    std::lock_guard<std::mutex> now_lock(now_mu_);
    now_ = t;
  }
  WakeDue();
}

void SimulatedClock::WakeDue() {
  for (;;) {
    Waiter* w;
    {
      absl::MutexLock lock(&mu_);
      auto it = waiters_.begin();
      if (it == waiters_.end() || it->first > now_) return;
      w = it->second;
      waiters_.erase(it);
      w->woken.store(true);
      waking_.insert(w);
    }
    // Releasing the waiter's mutex makes absl re-evaluate its condition.
    w->mu->Lock();
    w->mu->Unlock();
    absl::MutexLock lock(&mu_);
    waking_.erase(waking_.find(w));
  }
}

}  // namespace delayq
