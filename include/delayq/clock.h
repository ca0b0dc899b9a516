// Copyright delayq authors.
//
// clock.h — where delayq gets the time, and how it waits for time to pass.
//
// Nothing in delayq reads the system clock directly: the scheduler asks its
// `Clock`, and backends receive `now` as an argument. Production code uses
// `RealClock()`. Tests use a `SimulatedClock`, which only moves when told to;
// moving it wakes every thread waiting on it (a timer thread, a blocked
// Reserve), so even threaded tests are deterministic.
//
//   delayq::SimulatedClock clock(absl::FromUnixSeconds(1'000'000));
//   delayq::SchedulerOptions options;
//   options.clock = &clock;
//   ...
//   clock.Advance(absl::Minutes(30));   // the 30-minute job is now due
//
// Thread-safety: every method of every Clock may be called from any thread.

#ifndef DELAYQ_CLOCK_H_
#define DELAYQ_CLOCK_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace delayq {

// Clock
//
// A source of the current time that can also wait for a time to come.
class Clock {
 public:
  virtual ~Clock() = default;

  // Now()
  //
  // The current time.
  virtual absl::Time Now() const = 0;

  // AwaitWithDeadline()
  //
  // REQUIRES: `mu` is held by the caller.
  // Releases `mu` while waiting until `cond` holds or this clock reaches
  // `deadline`, whichever comes first, and returns with `mu` held again.
  // Returns the value of `cond` at return. As with absl::Mutex::Await, `cond`
  // is re-evaluated whenever `mu` is released by any thread, so the state it
  // reads must be guarded by `mu`.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                                 absl::Time deadline) = 0;

  // SleepUntil()
  //
  // Blocks until this clock reaches `deadline`.
  void SleepUntil(absl::Time deadline);
};

// RealClock()
//
// The system clock (absl::Now()). The returned object lives forever.
Clock& RealClock();

// SimulatedClock
//
// A clock that stands still until Advance() or Set() moves it. Moving it wakes
// every AwaitWithDeadline() whose deadline has been reached.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::UnixEpoch());
  ~SimulatedClock() override;

  SimulatedClock(const SimulatedClock&) = delete;
  SimulatedClock& operator=(const SimulatedClock&) = delete;

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& cond,
                         absl::Time deadline) override;

  // Advance()
  //
  // Moves the clock forward by `d` (a negative `d` is ignored) and wakes the
  // waiters whose deadline is now reached.
  void Advance(absl::Duration d);

  // Set()
  //
  // Moves the clock to `t`. Time never runs backwards: a `t` earlier than
  // Now() is ignored.
  void Set(absl::Time t);

  // Waiters()
  //
  // How many threads are blocked in AwaitWithDeadline() right now (not one
  // whose condition came true and has yet to run). Tests use it to know a
  // worker has gone to sleep before they move the clock.
  int Waiters() const;

 private:
  struct Waiter;

  static bool StillBlocked(const Waiter& waiter);

  void WakeDue();

  mutable absl::Mutex mu_;
  // Written under both mutexes, so it may be read under either. Now() takes
  // only this one: a host loop reads the clock on every call, and a plain
  // mutex costs a fraction of absl::Mutex's bookkeeping.
  mutable std::mutex now_mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  // Blocked waiters by deadline.
  std::multimap<absl::Time, Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  // Waiters being woken right now (WakeDue() is touching their mutex).
  std::multiset<Waiter*> waking_ ABSL_GUARDED_BY(mu_);
};

}  // namespace delayq

#endif  // DELAYQ_CLOCK_H_
