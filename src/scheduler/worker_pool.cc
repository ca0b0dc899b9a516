// Copyright delayq authors.

#include "src/scheduler/worker_pool.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/common/validation.h"

namespace delayq {
namespace internal {
namespace {

// Runs the handler; a thrown exception becomes an error like any other.
absl::StatusOr<std::string> Invoke(const WorkHandler& handler,
                                   const Lease& lease) {
  try {
    return handler(lease);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("handler threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("handler threw a non-standard exception");
  }
}

bool Transient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

}  // namespace

WorkerPool::WorkerPool(JobOps& jobs, Backend& backend, Clock& clock,
                       Promotion& promotion, absl::Duration retry_interval,
                       std::function<void()> on_thread_start)
    : jobs_(jobs),
      clock_(clock),
      promotion_(promotion),
      retry_interval_(retry_interval),
      on_thread_start_(std::move(on_thread_start)),
      keeper_(backend, clock, promotion, retry_interval) {}

WorkerPool::~WorkerPool() { Stop(absl::ZeroDuration()); }

void WorkerPool::Handle(absl::string_view topic, WorkHandler handler,
                        const HandlerOptions& options) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = ValidateTopic(topic); !s.ok()) {
    handle_error_ =
        absl::InvalidArgumentError(absl::StrCat("Handle(): ", s.message()));
    return;
  }
  Registration& registration = handlers_[std::string(topic)];
  registration.handler = std::move(handler);
  registration.options = options;
  if (started_ && !stopping_) {
    StartWorkersLocked(std::string(topic), registration);
  }
}

absl::Status WorkerPool::Start() {
  absl::MutexLock lock(&mu_);
  if (!handle_error_.ok()) return handle_error_;
  if (started_) {
    return absl::FailedPreconditionError("scheduler already started");
  }
  started_ = true;
  stopping_ = false;
  keeper_.Start(on_thread_start_);
  for (auto& [topic, registration] : handlers_) {
    registration.workers_started = 0;
    StartWorkersLocked(topic, registration);
  }
  return absl::OkStatus();
}

bool WorkerPool::started() {
  absl::MutexLock lock(&mu_);
  return started_;
}

void WorkerPool::StartWorkersLocked(const std::string& topic,
                                    Registration& registration) {
  const int wanted = std::max(1, registration.options.concurrency);
  for (; registration.workers_started < wanted;
       ++registration.workers_started) {
    workers_.emplace_back([this, topic] {
      on_thread_start_();
      WorkerLoop(topic);
    });
  }
}

void WorkerPool::RequestStop() {
  absl::MutexLock lock(&mu_);
  if (!started_) return;
  stopping_ = true;
  promotion_.WakeAll();  // workers asleep in Reserve() look again
}

void WorkerPool::Stop(absl::Duration grace) {
  absl::MutexLock serialize(&stop_mu_);
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return;
    stopping_ = true;
    promotion_.WakeAll();  // workers asleep in Reserve() look again
    clock_.AwaitWithDeadline(
        &mu_,
        absl::Condition(
            +[](WorkerPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return pool->running_handlers_ == 0;
            },
            this),
        clock_.Now() + grace);
    workers.swap(workers_);
  }
  // Past the grace period running handlers keep running, but their leases
  // are no longer extended.
  keeper_.Stop();
  for (std::thread& t : workers) t.join();
  absl::MutexLock lock(&mu_);
  started_ = false;
  stopping_ = false;
}

void WorkerPool::WorkerLoop(const std::string& topic) {
  // Leases the last ack reserved; they go through RunBatch() even when
  // stopping, which hands them back unstarted.
  std::vector<Lease> next;
  for (;;) {
    WorkHandler handler;
    HandlerOptions options;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ && next.empty()) return;
      const Registration& registration = handlers_[topic];
      handler = registration.handler;
      options = registration.options;
    }
    const int max = std::max(1, options.batch);
    absl::StatusOr<std::vector<Lease>> leases = std::move(next);
    next.clear();
    if (leases->empty()) {
      leases = jobs_.ReserveForWorker(topic, max, promotion_.LookInterval(),
                                      &stopping_);
    }
    if (!leases.ok()) {
      promotion_.ReportError("reserve", leases.status());
      // The store is failing; wait a while (or for Stop) and retry.
      absl::MutexLock lock(&mu_);
      clock_.AwaitWithDeadline(
          &mu_,
          absl::Condition(
              +[](std::atomic<bool>* stopping) { return stopping->load(); },
              &stopping_),
          clock_.Now() + retry_interval_);
      continue;
    }
    next = RunBatch(*leases, handler, options.renew_fraction, topic, max);
  }
}

std::vector<Lease> WorkerPool::RunBatch(const std::vector<Lease>& leases,
                                        const WorkHandler& handler,
                                        double renew_fraction,
                                        const std::string& topic, int max) {
  std::vector<Lease> next;
  // Every lease of the batch is kept alive from now on, not only the one
  // whose handler runs.
  std::vector<LeaseKeeper::Handle> held;
  held.reserve(leases.size());
  for (const Lease& lease : leases) {
    held.push_back(keeper_.Hold(lease, renew_fraction));
  }
  for (size_t i = 0; i < leases.size(); ++i) {
    // A lease that lapsed while it waited its turn (the store was out of
    // reach) or was refused is someone else's job now.
    if (!keeper_.Alive(held[i])) {
      keeper_.Drop(held[i]);
      continue;
    }
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      stopping = stopping_;
      if (!stopping) ++running_handlers_;
    }
    if (stopping) {
      // Reserved but not started: hand back without using an attempt.
      for (; i < leases.size(); ++i) {
        keeper_.Drop(held[i]);
        if (absl::Status s = jobs_.Release(leases[i], absl::ZeroDuration());
            !s.ok()) {
          promotion_.ReportError("release", s);
        }
      }
      return next;
    }
    const absl::StatusOr<std::string> result = Invoke(handler, leases[i]);
    keeper_.Drop(held[i]);
    {
      absl::MutexLock lock(&mu_);
      --running_handlers_;
    }
    // The worker goes straight on to its next job: the last ack of the
    // batch reserves it in the same store call.
    if (result.ok() && i + 1 == leases.size() && !stopping_) {
      next = FinishAndReserve(leases[i], *result, topic, max);
    } else if (absl::Status s = Finish(leases[i], result); !s.ok()) {
      promotion_.ReportError(result.ok() ? "ack" : "fail", s);
    }
  }
  return next;
}

std::vector<Lease> WorkerPool::FinishAndReserve(const Lease& lease,
                                                const std::string& result,
                                                const std::string& topic,
                                                int max) {
  AckReserved both =
      jobs_.AckAndReserveForWorker(lease, result, topic, max, &stopping_);
  absl::Status acked = both.acked;
  // As in Finish(): one retry of the ack for a store that blinked (the
  // reservation, if it was made, comes back after its ttr).
  if (Transient(acked)) acked = jobs_.Ack(lease, result);
  if (!acked.ok()) promotion_.ReportError("ack", acked);
  if (!both.leases.ok()) {
    if (!both.acked.ok() && both.leases.status() == both.acked) {
      return {};  // the one failure of the call, reported above
    }
    promotion_.ReportError("reserve", both.leases.status());
    return {};
  }
  return *std::move(both.leases);
}

absl::Status WorkerPool::Finish(const Lease& lease,
                                const absl::StatusOr<std::string>& result) {
  const absl::Status& status = result.status();
  const std::string error(status.message().empty() ? status.ToString()
                                                   : status.message());
  auto finish = [&] {
    return result.ok() ? jobs_.Ack(lease, *result) : jobs_.Fail(lease, error);
  };
  absl::Status s = finish();
  // One retry for a store that blinked: otherwise the job runs again after
  // its ttr. A stale lease (the job expired and went elsewhere) is refused
  // by the store and needs nothing more.
  if (Transient(s)) s = finish();
  return s;
}

}  // namespace internal
}  // namespace delayq
