// Copyright delayq authors.
//
// LeaseKeeper — keeps alive the leases this process's workers hold.
//
// A worker holds a lease from the moment it reserves the job until it acks,
// fails or releases it: while the handler runs, and while the job waits its
// turn behind others of the same batch. The keeper touches every held lease
// before it expires, on one thread of its own, so a job never starts on a
// lease that lapsed while it waited. A renewal the store refuses
// (FailedPrecondition: the lease expired and went to someone else, or the
// job was cancelled) marks the lease gone; the worker must not start or
// finish the job on it.
//
// Thread-safe. Its mutex is taken under no other lock of the scheduler's,
// and only Promotion's (a leaf) is taken under it.

#ifndef DELAYQ_SRC_SCHEDULER_LEASE_KEEPER_H_
#define DELAYQ_SRC_SCHEDULER_LEASE_KEEPER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/clock.h"
#include "delayq/job.h"
#include "src/scheduler/promotion.h"

namespace delayq {
namespace internal {

class LeaseKeeper {
 public:
  // `retry_interval`: how soon a renewal that failed for want of the store
  // is tried again (capped by the lease's own renewal interval).
  LeaseKeeper(Backend& backend, Clock& clock, Promotion& promotion,
              absl::Duration retry_interval);
  ~LeaseKeeper();

  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  using Handle = uint64_t;

  // Starts keeping `lease` alive: it is touched whenever less than
  // `renew_fraction` (kept within [0.05, 0.95]) of its ttr remains.
  Handle Hold(const Lease& lease, double renew_fraction);

  // Whether the job may still be started or finished on the lease: no
  // renewal was refused, and the lease is not known to have lapsed. A lease
  // due for renewal, or whose deadline passed while the store was out of
  // reach, is checked with one Touch() here.
  bool Alive(Handle handle);

  // Stops keeping the lease alive (the job was acked, failed or released).
  void Drop(Handle handle);

  // Runs the keeper's thread, which first runs `on_start`.
  void Start(std::function<void()> on_start);
  // Ends the thread: leases still held are no longer renewed.
  void Stop();

 private:
  struct Held {
    Lease lease;
    // How long after a (re)newal it is renewed again, on this process's
    // clock (so a store on another clock cannot make it late).
    absl::Duration renew_after;
    absl::Time renew_at;
    // The lease's deadline as far as this process can tell, on its own
    // clock: the last renewal's time plus the ttr.
    absl::Time lapses_at;
    bool gone = false;
    bool renewing = false;  // a Touch() is under way outside the lock
  };

  void Loop();
  // Wakes the thread when `renew_at` comes before it would wake by itself.
  void WakeFor(absl::Time renew_at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Touches the lease of `handle`; takes and returns with mu_ held.
  void Renew(Handle handle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Backend& backend_;
  Clock& clock_;
  Promotion& promotion_;
  const absl::Duration retry_interval_;

  absl::Mutex mu_;
  std::map<Handle, Held> held_ ABSL_GUARDED_BY(mu_);
  Handle next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  // Bumped when a lease needs renewing before the thread would wake by
  // itself: the thread looks again.
  uint64_t changed_ ABSL_GUARDED_BY(mu_) = 0;
  // While the thread waits, when it wakes by itself (the earliest renewal
  // it knew of); InfinitePast while it runs, since it looks at every lease
  // before it waits again. A lease held or renewed for later needs no wake:
  // a worker that holds one lease per job would otherwise wake the thread
  // twice a job for nothing. A dropped lease needs none either: at worst
  // the thread wakes for it and finds it gone.
  absl::Time asleep_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_LEASE_KEEPER_H_
