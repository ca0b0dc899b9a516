// Copyright delayq authors.

#include "src/scheduler/lease_keeper.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace delayq {
namespace internal {
namespace {

// How long after a lease starts (or is renewed) it is renewed again. The
// fraction is kept in [0.05, 0.95] so renewal neither spins nor comes after
// the deadline, and never sooner than a millisecond.
absl::Duration RenewAfter(absl::Duration ttr, double renew_fraction) {
  const double f = std::clamp(renew_fraction, 0.05, 0.95);
  return std::max(ttr * (1 - f), absl::Milliseconds(1));
}

}  // namespace

LeaseKeeper::LeaseKeeper(Backend& backend, Clock& clock, Promotion& promotion,
                         absl::Duration retry_interval)
    : backend_(backend),
      clock_(clock),
      promotion_(promotion),
      retry_interval_(retry_interval) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

LeaseKeeper::Handle LeaseKeeper::Hold(const Lease& lease,
                                      double renew_fraction) {
  const absl::Time now = clock_.Now();
  Held held;
  held.lease = lease;
  held.renew_after = RenewAfter(lease.job.ttr, renew_fraction);
  // The deadline is on the store's clock, which may differ from ours: taking
  // the earlier of the two costs at most one early renewal.
  held.lapses_at = std::min(now + lease.job.ttr, lease.deadline);
  held.renew_at = held.lapses_at - (lease.job.ttr - held.renew_after);
  absl::MutexLock lock(&mu_);
  const Handle handle = next_handle_++;
  WakeFor(held.renew_at);
  held_.emplace(handle, std::move(held));
  return handle;
}

bool LeaseKeeper::Alive(Handle handle) {
  absl::MutexLock lock(&mu_);
  // A renewal under way on the keeper's thread decides; wait for it.
  struct Args {
    LeaseKeeper* keeper;
    Handle handle;
  } args{this, handle};
  mu_.Await(absl::Condition(
      +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        auto it = a->keeper->held_.find(a->handle);
        return it == a->keeper->held_.end() || !it->second.renewing;
      },
      &args));
  auto it = held_.find(handle);
  if (it == held_.end() || it->second.gone) return false;
  // A lease due for renewal is asked about now rather than when the
  // keeper's thread gets to it: the job may have been cancelled or handed
  // to someone else, and must not start then. A lease whose deadline passed
  // while the store was out of reach is asked about the same way.
  if (clock_.Now() >= it->second.renew_at ||
      clock_.Now() >= it->second.lapses_at) {
    Renew(handle);
    it = held_.find(handle);
  }
  return it != held_.end() && !it->second.gone &&
         clock_.Now() < it->second.lapses_at;
}

void LeaseKeeper::Drop(Handle handle) {
  absl::MutexLock lock(&mu_);
  held_.erase(handle);
}

void LeaseKeeper::WakeFor(absl::Time renew_at) {
  if (renew_at < asleep_until_) ++changed_;
}

void LeaseKeeper::Renew(Handle handle) {
  auto it = held_.find(handle);
  if (it == held_.end() || it->second.gone) return;
  it->second.renewing = true;
  const Lease lease = it->second.lease;
  // Renewal times count from when the lease was touched, not from when the
  // reply came back.
  const absl::Time now = clock_.Now();
  mu_.Unlock();
  absl::StatusOr<absl::Time> deadline =
      backend_.Touch(lease.job.id, lease.token, now);
  // A refusal means the lease is gone (not the store's failure).
  if (!deadline.ok() && !absl::IsFailedPrecondition(deadline.status())) {
    promotion_.ReportError("touch", deadline.status());
  }
  mu_.Lock();
  it = held_.find(handle);
  if (it == held_.end()) return;  // dropped meanwhile: the job is finished
  Held& held = it->second;
  held.renewing = false;
  if (deadline.ok()) {
    held.lease.deadline = *deadline;
    held.lapses_at = now + lease.job.ttr;
    held.renew_at = now + held.renew_after;
    promotion_.Arm(*deadline);
  } else if (absl::IsFailedPrecondition(deadline.status())) {
    held.gone = true;
    held.renew_at = absl::InfiniteFuture();
  } else {
    // The store is out of reach for now; try again soon.
    held.renew_at = now + std::min(retry_interval_, held.renew_after);
  }
  // The keeper's thread passed over this lease while it was being renewed
  // (from Alive()); it must look again if the new renewal time comes first.
  WakeFor(held.renew_at);
}

void LeaseKeeper::Start(std::function<void()> on_start) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this, on_start = std::move(on_start)] {
    on_start();
    Loop();
  });
}

void LeaseKeeper::Stop() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void LeaseKeeper::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time now = clock_.Now();
    absl::Time earliest = absl::InfiniteFuture();
    std::vector<Handle> due;
    for (const auto& [handle, held] : held_) {
      if (held.gone || held.renewing) continue;
      if (held.renew_at <= now) due.push_back(handle);
      earliest = std::min(earliest, held.renew_at);
    }
    if (!due.empty()) {
      for (Handle handle : due) Renew(handle);
      continue;
    }
    struct Args {
      LeaseKeeper* keeper;
      uint64_t seen;
    } args{this, changed_};
    asleep_until_ = earliest;
    clock_.AwaitWithDeadline(&mu_,
                             absl::Condition(
                                 +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                   return a->keeper->stopping_ ||
                                          a->keeper->changed_ != a->seen;
                                 },
                                 &args),
                             earliest);
    asleep_until_ = absl::InfinitePast();
  }
}

}  // namespace internal
}  // namespace delayq
