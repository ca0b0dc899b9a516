// Copyright delayq authors.
//
// Handler threads: per topic, `concurrency` workers reserve jobs, run the
// handler and ack or fail. One keeper thread touches the leases of running
// handlers before they expire.

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/scheduler_impl.h"

namespace delayq {
namespace {

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

absl::Time RenewAt(const Lease& lease, double renew_fraction) {
  return lease.deadline - lease.job.ttr * renew_fraction;
}

}  // namespace

void Scheduler::Impl::Handle(absl::string_view topic, Handler handler,
                             const HandlerOptions& options) {
  absl::MutexLock lock(&mu_);
  Registration& registration = handlers_[std::string(topic)];
  registration.handler = std::move(handler);
  registration.options = options;
  if (started_ && !stopping_) StartWorkers(std::string(topic), registration);
}

absl::Status Scheduler::Impl::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) {
    return absl::FailedPreconditionError("scheduler already started");
  }
  started_ = true;
  stopping_ = false;
  timer_stopping_ = false;
  keeper_stopping_ = false;
  timer_thread_ = std::thread(&Impl::TimerLoop, this);
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
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
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
  {
    absl::MutexLock lock(&mu_);
    timer_stopping_ = true;
  }
  keeper_thread_.join();
  timer_thread_.join();
  absl::MutexLock lock(&mu_);
  started_ = false;
  stopping_ = false;
}

void Scheduler::Impl::WorkerLoop(std::string topic) {
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
        Reserve(topic, std::max(1, options.batch), options_.poll_interval,
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
  auto active = std::make_shared<ActiveLease>(
      ActiveLease{lease, renew_fraction, RenewAt(lease, renew_fraction)});
  uint64_t key;
  {
    absl::MutexLock lock(&mu_);
    key = next_active_++;
    active_.emplace(key, active);
    ++active_changed_;
    ++running_handlers_;
  }
  const absl::Status result = Invoke(handler, lease.job);
  {
    absl::MutexLock lock(&mu_);
    active_.erase(key);
    ++active_changed_;
    --running_handlers_;
  }
  // A stale lease (the job expired and went elsewhere) is refused by the
  // store; nothing more to do for it here.
  if (result.ok()) {
    Ack(lease).IgnoreError();
  } else {
    Fail(lease, result.message().empty() ? result.ToString() : result.message())
        .IgnoreError();
  }
}

void Scheduler::Impl::KeeperLoop() {
  absl::MutexLock lock(&mu_);
  while (!keeper_stopping_) {
    absl::Time earliest = absl::InfiniteFuture();
    for (const auto& [key, active] : active_) {
      earliest = std::min(earliest, active->renew_at);
    }
    if (earliest <= clock_->Now()) {
      std::vector<std::shared_ptr<ActiveLease>> due;
      for (const auto& [key, active] : active_) {
        if (active->renew_at <= clock_->Now()) due.push_back(active);
      }
      mu_.Unlock();
      for (const std::shared_ptr<ActiveLease>& active : due) {
        // Only this thread touches `active->lease` after registration.
        Lease& lease = active->lease;
        const absl::Status touched = Touch(lease);
        absl::MutexLock relock(&mu_);
        if (touched.ok()) {
          active->renew_at = RenewAt(lease, active->renew_fraction);
        } else if (absl::IsFailedPrecondition(touched)) {
          active->renew_at = absl::InfiniteFuture();  // the lease is gone
        } else {
          // The store is unreachable for now; try again soon.
          active->renew_at = clock_->Now() + options_.poll_interval;
        }
      }
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

}  // namespace delayq
