// Copyright delayq authors.
//
// Handler threads: per topic, `concurrency` workers reserve jobs, run the
// handler and ack or fail. One keeper thread touches the leases of running
// handlers before they expire.

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/scheduler_impl.h"
#include "src/validation.h"

namespace delayq {
namespace {

// The scheduler whose thread (worker, timer or keeper) this is, if any. A
// handler or listener that calls Stop() runs on such a thread and must not
// wait for, or join, itself.
thread_local const void* own_scheduler = nullptr;

// Runs the handler; a thrown exception becomes an error like any other.
absl::Status Invoke(const Handler& handler, const Job& job) {
  try {
    return handler(job);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("handler threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("handler threw a non-standard exception");
  }
}

// How long after a lease starts (or is renewed) it is renewed again. The
// fraction is kept in [0.05, 0.95] so renewal neither spins nor comes after
// the deadline, and never sooner than a millisecond.
absl::Duration RenewAfter(absl::Duration ttr, double renew_fraction) {
  const double f = std::clamp(renew_fraction, 0.05, 0.95);
  return std::max(ttr * (1 - f), absl::Milliseconds(1));
}

bool Transient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

}  // namespace

void Scheduler::Impl::MarkOwnThread() { own_scheduler = this; }

bool Scheduler::Impl::OnOwnThread() const { return own_scheduler == this; }

void Scheduler::Impl::Handle(absl::string_view topic, Handler handler,
                             const HandlerOptions& options) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) {
    handle_error_ =
        absl::InvalidArgumentError(absl::StrCat("Handle(): ", s.message()));
    return;
  }
  Registration& registration = handlers_[std::string(topic)];
  registration.handler = std::move(handler);
  registration.options = options;
  if (started_ && !stopping_) StartWorkers(std::string(topic), registration);
}

absl::Status Scheduler::Impl::Start() {
  absl::MutexLock lock(&mu_);
  if (!handle_error_.ok()) return handle_error_;
  if (started_) {
    return absl::FailedPreconditionError("scheduler already started");
  }
  started_ = true;
  stopping_ = false;
  keeper_stopping_ = false;
  promotion_.StartTimerThread([this] { MarkOwnThread(); });
  keeper_thread_ = std::thread(&Impl::KeeperLoop, this);
  for (auto& [topic, registration] : handlers_) {
    registration.workers_started = 0;
    StartWorkers(topic, registration);
  }
  return absl::OkStatus();
}

void Scheduler::Impl::StartWorkers(const std::string& topic,
                                   Registration& registration) {
  const int wanted = std::max(1, registration.options.concurrency);
  for (; registration.workers_started < wanted;
       ++registration.workers_started) {
    workers_.emplace_back(&Impl::WorkerLoop, this, topic);
  }
}

void Scheduler::Impl::Stop(absl::Duration grace) {
  if (OnOwnThread()) {
    // From a handler or listener: ask the threads to stop; joining them is
    // left to the next Stop() from outside, or to the destructor.
    absl::MutexLock lock(&mu_);
    if (started_) {
      stopping_ = true;
      promotion_.WakeAll();  // workers asleep in Reserve() look again
    }
    return;
  }
  absl::MutexLock serialize(&stop_mu_);
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return;
    stopping_ = true;
    promotion_.WakeAll();  // workers asleep in Reserve() look again
    const absl::Time deadline = clock_->Now() + grace;
    clock_->AwaitWithDeadline(
        &mu_,
        absl::Condition(
            +[](Impl* impl) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return impl->running_handlers_ == 0;
            },
            this),
        deadline);
    // Past the grace period running handlers keep running, but their leases
    // are no longer extended.
    keeper_stopping_ = true;
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  keeper_thread_.join();
  promotion_.StopTimerThread();
  absl::MutexLock lock(&mu_);
  started_ = false;
  stopping_ = false;
}

void Scheduler::Impl::WorkerLoop(std::string topic) {
  MarkOwnThread();
  for (;;) {
    Handler handler;
    HandlerOptions options;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      const Registration& registration = handlers_[topic];
      handler = registration.handler;
      options = registration.options;
    }
    absl::StatusOr<std::vector<Lease>> leases =
        Reserve(topic, std::max(1, options.batch), promotion_.LookInterval(),
                /*for_worker=*/true);
    if (!leases.ok()) {
      // The store is failing; wait a poll interval (or for Stop) and retry.
      absl::MutexLock lock(&mu_);
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                clock_->Now() + options_.poll_interval);
      continue;
    }
    for (size_t i = 0; i < leases->size(); ++i) {
      bool stopping;
      {
        absl::MutexLock lock(&mu_);
        stopping = stopping_;
      }
      if (stopping) {
        // Reserved in a batch but not started: hand back without using an
        // attempt.
        for (; i < leases->size(); ++i) {
          Release((*leases)[i], absl::ZeroDuration()).IgnoreError();
        }
        return;
      }
      RunJob((*leases)[i], handler, options.renew_fraction);
    }
  }
}

void Scheduler::Impl::RunJob(const Lease& lease, const Handler& handler,
                             double renew_fraction) {
  auto active = std::make_shared<ActiveLease>();
  active->lease = lease;
  active->renew_after = RenewAfter(lease.job.ttr, renew_fraction);
  // The lease began when it was reserved, maybe a while ago (in a batch).
  // Its deadline is on the store's clock, which may differ from ours: taking
  // the earlier of the two costs at most one early renewal.
  active->renew_at =
      std::min(clock_->Now() + active->renew_after,
               lease.deadline - (lease.job.ttr - active->renew_after));
  {
    absl::MutexLock lock(&mu_);
    active->key = next_active_++;
    active_.emplace(active->key, active);
    ++active_changed_;
    ++running_handlers_;
  }
  const absl::Status result = Invoke(handler, lease.job);
  {
    absl::MutexLock lock(&mu_);
    active_.erase(active->key);
    ++active_changed_;
    --running_handlers_;
  }
  Finish(lease, result).IgnoreError();
}

absl::Status Scheduler::Impl::Finish(const Lease& lease,
                                     const absl::Status& result) {
  const std::string error(result.message().empty() ? result.ToString()
                                                   : result.message());
  auto finish = [&] { return result.ok() ? Ack(lease) : Fail(lease, error); };
  absl::Status s = finish();
  // One retry for a store that blinked: otherwise the job runs again after
  // its ttr. A stale lease (the job expired and went elsewhere) is refused
  // by the store and needs nothing more.
  if (Transient(s)) s = finish();
  return s;
}

void Scheduler::Impl::KeeperLoop() {
  MarkOwnThread();
  absl::MutexLock lock(&mu_);
  while (!keeper_stopping_) {
    absl::Time earliest = absl::InfiniteFuture();
    for (const auto& [key, active] : active_) {
      earliest = std::min(earliest, active->renew_at);
    }
    const absl::Time now = clock_->Now();
    if (earliest <= now) {
      std::vector<std::shared_ptr<ActiveLease>> due;
      for (const auto& [key, active] : active_) {
        if (active->renew_at <= now) due.push_back(active);
      }
      mu_.Unlock();
      for (const std::shared_ptr<ActiveLease>& active : due) Renew(*active);
      mu_.Lock();
      continue;
    }
    struct Args {
      Impl* impl;
      uint64_t seen;
    } args{this, active_changed_};
    clock_->AwaitWithDeadline(&mu_,
                              absl::Condition(
                                  +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                    return a->impl->keeper_stopping_ ||
                                           a->impl->active_changed_ != a->seen;
                                  },
                                  &args),
                              earliest);
  }
}

void Scheduler::Impl::Renew(ActiveLease& active) {
  // Only the keeper touches `active.lease` once it is registered.
  const Lease& lease = active.lease;
  // Renewal times count from when the lease was touched, not from when the
  // reply came back.
  const absl::Time now = clock_->Now();
  absl::StatusOr<absl::Time> deadline =
      backend_->Touch(lease.job.id, lease.token, now);
  absl::MutexLock lock(&mu_);
  if (deadline.ok()) {
    active.renew_at = now + active.renew_after;
    // The handler may have finished meanwhile and armed a retry; only a
    // lease still running owns the job's timer.
    if (active_.count(active.key) > 0) promotion_.Arm(lease.job.id, *deadline);
  } else if (absl::IsFailedPrecondition(deadline.status())) {
    active.renew_at = absl::InfiniteFuture();  // the lease is gone
  } else {
    // The store is unreachable for now; try again soon.
    active.renew_at =
        now + std::min(options_.poll_interval, active.renew_after);
  }
}

}  // namespace delayq
