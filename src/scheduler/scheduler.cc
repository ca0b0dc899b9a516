// Copyright delayq authors.

#include "delayq/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "src/common/contract_errors.h"
#include "src/common/generated_id.h"
#include "src/common/new_job.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"
#include "src/common/validation.h"
#include "src/scheduler/flow_ids.h"
#include "src/scheduler/flow_members.h"
#include "src/scheduler/flow_order.h"
#include "src/scheduler/lease_pages.h"
#include "src/scheduler/scheduler_impl.h"

namespace delayq {
namespace {

// A uniform draw from [0, 1) for a retry's jitter.
double JitterDraw() {
  thread_local absl::BitGen gen;
  return absl::Uniform<double>(gen, 0.0, 1.0);
}

absl::Status ValidateSchedulerOptions(const SchedulerOptions& options) {
  if (options.tick <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "SchedulerOptions::tick must be positive");
  }
  if (options.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "SchedulerOptions::poll_interval must be positive");
  }
  if (options.news_poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "SchedulerOptions::news_poll_interval must be positive");
  }
  if (options.promote_batch < 1) {
    return absl::InvalidArgumentError(
        "SchedulerOptions::promote_batch must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace

Scheduler::Impl::Impl(std::unique_ptr<Backend> backend,
                      const SchedulerOptions& options, Clock* clock)
    : backend_(std::move(backend)),
      options_(options),
      clock_(clock),
      id_prefix_(internal::NewGeneratedIdPrefix()),
      schedules_(
          *backend_,
          [this](const std::vector<NewJob>& jobs, absl::Time now) {
            OnOccurrences(jobs, now);
          },
          [this](absl::string_view what, const absl::Status& error) {
            promotion_.ReportError(what, error);
          }),
      promotion_(*backend_, *clock, options,
                 [this](const std::vector<Transition>& moved,
                        const std::vector<Settled>& settled) {
                   EmitMoved(moved, settled);
                 }),
      workers_(*this, *backend_, *clock, promotion_, options.poll_interval,
               [this] { MarkOwnThread(); }),
      results_(*clock,
               [this](absl::string_view id) { return backend_->Get(id); }) {
  promotion_.SetTickHook([this](absl::Time now, bool reload) {
    return schedules_.RunDue(now, reload);
  });
  holder_ =
      options.name.empty() ? internal::DefaultProcessName() : options.name;
  if (options.event_log) {
    event_log_ = std::make_unique<internal::EventLogWriter>(
        backend_.get(), holder_, internal::EventLogWriter::kDefaultMaxBuffered,
        [this](const absl::Status& error) {
          promotion_.ReportError("events", error);
        });
    events_.AddBatch(
        [this](absl::Span<const Event> events) { event_log_->Add(events); });
  }
}

Scheduler::Impl::~Impl() { Stop(absl::ZeroDuration()); }

absl::Status Scheduler::Impl::Init() {
  if (absl::Status s = promotion_.Init(); !s.ok()) return s;
  // Subscribed first (above), so no schedule change falls between.
  if (absl::Status s = schedules_.Reload(); !s.ok()) return s;
  promotion_.Arm(schedules_.NextWake());
  return absl::OkStatus();
}

// --- Producing -------------------------------------------------------------

absl::StatusOr<Scheduler::Impl::EnqueueTimes> Scheduler::Impl::CheckEnqueue(
    absl::string_view topic, absl::Span<const absl::string_view> payloads,
    const JobOptions& options, bool batch) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (absl::Status s = internal::ValidateOptions(options); !s.ok()) return s;
  if (batch && options.replace) {
    return absl::InvalidArgumentError(
        "replace works on one job: use Enqueue(), not EnqueueBatch()");
  }
  for (absl::string_view payload : payloads) {
    absl::Status s =
        internal::ValidatePayload(payload, options_.max_payload_bytes);
    if (!s.ok()) return s;
  }
  EnqueueTimes times;
  times.now = clock_->Now();
  times.run_at = options.run_at != absl::InfinitePast()
                     ? options.run_at
                     : times.now + options.delay;
  if (absl::Status s = internal::ValidateRunAt(times.run_at, "run_at");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<absl::Time> expire_at =
      internal::ResolveExpiry(options, times.now, times.run_at);
  if (!expire_at.ok()) return expire_at.status();
  times.expire_at = *expire_at;
  return times;
}

void Scheduler::Impl::FillJob(absl::string_view topic,
                              absl::string_view payload,
                              const JobOptions& options,
                              const EnqueueTimes& times, NewJob& job) {
  job = internal::NewJobOf(topic, payload, options, times.run_at,
                           times.expire_at);
}

std::string Scheduler::Impl::NextGeneratedId() {
  return internal::GeneratedId(id_prefix_, id_counter_.fetch_add(1) + 1);
}

absl::StatusOr<std::string> Scheduler::Impl::EnqueueOne(
    absl::string_view topic, absl::string_view payload,
    const JobOptions& options) {
  DQ_ASSIGN_OR_RETURN(const EnqueueTimes times,
                      CheckEnqueue(topic, {payload}, options, false));
  NewJob job;
  FillJob(topic, payload, options, times, job);
  job.id = options.id.empty() ? NextGeneratedId() : options.id;
  NoteDependencies(options);
  DQ_RETURN_IF_ERROR(AddOrReplace({&job, 1}, options.replace, times.now));
  Announce(topic, times, {&job.id, 1});
  return std::move(job.id);
}

absl::StatusOr<std::vector<std::string>> Scheduler::Impl::EnqueueBatch(
    absl::string_view topic, absl::Span<const absl::string_view> payloads,
    const JobOptions& options) {
  DQ_ASSIGN_OR_RETURN(const EnqueueTimes times,
                      CheckEnqueue(topic, payloads, options, true));
  std::vector<NewJob> jobs(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    NewJob& job = jobs[i];
    FillJob(topic, payloads[i], options, times, job);
    if (options.id.empty()) {
      job.id = NextGeneratedId();
    } else {
      job.id = absl::StrCat(options.id, "-", i);
      // A batch's ids are the given one and a suffix: they too must fit.
      DQ_RETURN_IF_ERROR(internal::ValidateId(job.id));
    }
  }
  NoteDependencies(options);
  DQ_RETURN_IF_ERROR(AddOrReplace(jobs, /*replace=*/false, times.now));
  std::vector<std::string> ids;
  ids.reserve(jobs.size());
  for (NewJob& job : jobs) ids.push_back(std::move(job.id));
  Announce(topic, times, ids);
  return ids;
}

absl::StatusOr<std::vector<std::string>> Scheduler::Impl::EnqueueFlow(
    absl::Span<const Scheduler::FlowJob> flow) {
  if (flow.empty()) {
    return absl::InvalidArgumentError("a flow needs at least one job");
  }
  std::vector<NewJob> jobs(flow.size());
  std::vector<EnqueueTimes> times(flow.size());
  for (size_t i = 0; i < flow.size(); ++i) {
    const Scheduler::FlowJob& f = flow[i];
    absl::StatusOr<EnqueueTimes> checked =
        f.options.replace
            ? absl::InvalidArgumentError(
                  "replace works on one job: use Enqueue(), not EnqueueFlow()")
            : CheckEnqueue(f.topic, {f.payload}, f.options, /*batch=*/false);
    if (!checked.ok()) {
      return absl::Status(
          checked.status().code(),
          absl::StrCat("flow job ", i, ": ", checked.status().message()));
    }
    times[i] = *checked;
    FillJob(f.topic, f.payload, f.options, times[i], jobs[i]);
    jobs[i].id = f.options.id;
    NoteDependencies(f.options);
  }
  DQ_RETURN_IF_ERROR(internal::NameFlowJobs(
      absl::MakeSpan(jobs), backend_->PlacesIdsByHashTag(),
      [this] { return NextGeneratedId(); }));
  DQ_ASSIGN_OR_RETURN(const std::vector<size_t> order,
                      internal::FlowOrder(jobs));
  std::vector<NewJob> in_order;
  in_order.reserve(jobs.size());
  for (size_t i : order) in_order.push_back(jobs[i]);
  // All or nothing: a store that would write the flow in parts refuses it.
  DQ_RETURN_IF_ERROR(backend_->CheckAddInOneStep(in_order));
  // One clock reading for the store: the latest of the checks' (the last
  // job's), so that a job due when it was checked is stored ready, not
  // delayed by the microseconds the checks of the jobs after it took.
  DQ_RETURN_IF_ERROR(
      AddOrReplace(in_order, /*replace=*/false, times.back().now));
  std::vector<std::string> ids;
  ids.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    Announce(flow[i].topic, times[i], {&jobs[i].id, 1});
    ids.push_back(std::move(jobs[i].id));
  }
  return ids;
}

absl::StatusOr<std::string> Scheduler::Impl::OpenBatch(
    absl::string_view topic, absl::string_view payload,
    const JobOptions& options) {
  if (!options.after.empty() || !options.batch.empty() || options.replace) {
    return absl::InvalidArgumentError(
        "a batch's completion job cannot have after, batch or replace: it "
        "waits for its batch");
  }
  DQ_ASSIGN_OR_RETURN(const EnqueueTimes times,
                      CheckEnqueue(topic, {payload}, options, false));
  NewJob job;
  FillJob(topic, payload, options, times, job);
  job.id = options.id.empty() ? NextGeneratedId() : options.id;
  enqueued_waiting_.store(true, std::memory_order_relaxed);
  DQ_RETURN_IF_ERROR(backend_->OpenBatch(job, times.now));
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    events.push_back(MakeEvent(EventType::kEnqueued, job.id, topic, at));
  });
  return std::move(job.id);
}

absl::Status Scheduler::Impl::CloseBatch(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  std::vector<Settled> settled;
  DQ_RETURN_IF_ERROR(backend_->CloseBatch(id, clock_->Now(), &settled));
  DependantsMayHaveMoved();
  EmitSettled(settled);
  return absl::OkStatus();
}

void Scheduler::Impl::Announce(absl::string_view topic,
                               const EnqueueTimes& times,
                               absl::Span<const std::string> ids) {
  if (times.run_at > times.now) {
    promotion_.Arm(times.run_at);
  } else {
    promotion_.WakeTopic(topic);
  }
  // The expiry is a due time of its own: the job lapses then.
  if (times.expire_at != absl::InfiniteFuture()) {
    promotion_.Arm(times.expire_at);
  }
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    events.reserve(ids.size());
    for (const std::string& id : ids) {
      events.push_back(MakeEvent(EventType::kEnqueued, id, topic, at));
    }
  });
}

absl::Status Scheduler::Impl::AddOrReplace(absl::Span<const NewJob> jobs,
                                           bool replace, absl::Time now) {
  absl::Status s = backend_->Add(jobs, now);
  if (!replace || !absl::IsAlreadyExists(s)) return s;
  s = backend_->Replace(jobs[0], now);
  // Gone between the two calls (acked, cancelled): add it after all.
  if (absl::IsNotFound(s)) s = backend_->Add(jobs, now);
  return s;
}

// --- Consuming -------------------------------------------------------------

absl::StatusOr<std::vector<Lease>> Scheduler::Impl::ReserveOnce(
    absl::string_view topic, absl::Time now, absl::Time* limited_until,
    StoreLook look) {
  // The store promotes the topic's due jobs itself before it reserves; what
  // it moved is reported as if promotion had found it.
  ReserveReport report;
  report.holder = holder_;
  absl::StatusOr<std::vector<Lease>> leases = look(now, &report);
  promotion_.Moved(report.moved, report.settled);
  *limited_until = report.limited_until;
  if (!leases.ok() || leases->empty()) return leases;
  // The store reserved them as of `now` (their deadlines count from it).
  for (Lease& lease : *leases) lease.reserved_at = now;
  promotion_.ArmLeases(*leases);
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    events.reserve(leases->size());
    for (const Lease& lease : *leases) {
      events.push_back(MakeEvent(EventType::kReserved, lease.job.id, topic, at,
                                 lease.job.attempts, /*error=*/"",
                                 lease.job.run_at));
    }
  });
  return leases;
}

absl::Status Scheduler::Impl::CheckReserve(absl::string_view topic, int max,
                                           absl::Duration wait) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (max < 1) return absl::InvalidArgumentError("max must be at least 1");
  if (wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("wait must not be negative");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Lease>> Scheduler::Impl::Reserve(
    absl::string_view topic, int max, absl::Duration wait,
    const std::atomic<bool>* stop, absl::string_view holder) {
  if (absl::Status s = CheckReserve(topic, max, wait); !s.ok()) return s;
  return ReserveLoop(topic, wait, stop,
                     [&](absl::Time now, ReserveReport* report) {
                       if (!holder.empty())
                         report->holder = std::string(holder);
                       return backend_->Reserve(topic, max, now, report);
                     });
}

absl::StatusOr<std::vector<Lease>> Scheduler::Impl::ReserveLoop(
    absl::string_view topic, absl::Duration wait, const std::atomic<bool>* stop,
    StoreLook look) {
  absl::Time now = clock_->Now();
  const absl::Time deadline = now + wait;
  // Counted from before the first look at the store, so that an Enqueue
  // racing with that look still wakes this call.
  std::optional<internal::Promotion::WaitScope> waiting;
  if (wait > absl::ZeroDuration()) waiting.emplace(promotion_);
  for (;;) {
    const internal::Promotion::Seen seen = promotion_.Observe(topic);
    absl::Time limited_until;
    absl::StatusOr<std::vector<Lease>> leases =
        ReserveOnce(topic, now, &limited_until, look);
    if (!leases.ok() || !leases->empty() || now >= deadline) return leases;
    if (stop != nullptr && stop->load()) return leases;
    // A limited topic is looked at again when its limit says (a full
    // concurrency cap: when a reservation ends, which wakes the topic).
    absl::Time until = std::min(deadline, now + promotion_.LookInterval());
    if (limited_until > now) until = std::min(until, limited_until);
    const absl::Time next_timer = promotion_.Await(topic, seen, until);
    if (next_timer <= now) {
      // A timer is due and nobody ticked: promote here, so a host that runs
      // no threads still sees jobs become ready while it waits.
      if (absl::StatusOr<int> ticked = Tick(); !ticked.ok()) {
        return ticked.status();
      }
    }
    now = clock_->Now();
  }
}

absl::Status Scheduler::Impl::CheckResult(absl::string_view result) const {
  if (result.size() > options_.max_result_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("result of ", result.size(), " bytes is over the ",
                     options_.max_result_bytes, "-byte limit"));
  }
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::Ack(const Lease& lease,
                                  absl::string_view result) {
  if (absl::Status s = CheckResult(result); !s.ok()) return s;
  const absl::Time now = clock_->Now();
  std::vector<Settled> settled;
  if (absl::Status s =
          backend_->Ack(lease.job.id, lease.token, result, now, &settled);
      !s.ok()) {
    return s;
  }
  Acked(lease);
  EmitSettled(settled);
  return absl::OkStatus();
}

void Scheduler::Impl::NoteDependencies(const JobOptions& options) {
  if (!options.after.empty() || !options.batch.empty()) {
    enqueued_waiting_.store(true, std::memory_order_relaxed);
  }
}

void Scheduler::Impl::DependantsMayHaveMoved() {
  if (enqueued_waiting_.load(std::memory_order_relaxed)) promotion_.Resync();
}

void Scheduler::Impl::Acked(const Lease& lease) {
  // A worker held back by the topic's concurrency cap may go on.
  promotion_.WakeTopic(lease.job.topic);
  DependantsMayHaveMoved();
  results_.JobsFinished();
  EmitLeaseEnd(EventType::kSucceeded, lease);
}

AckReserved Scheduler::Impl::AckAndReserve(const Lease& lease,
                                           absl::string_view result,
                                           absl::string_view topic, int max,
                                           absl::Duration wait,
                                           const std::atomic<bool>* stop,
                                           absl::string_view holder) {
  AckReserved out;
  if (!CheckResult(result).ok() || !CheckReserve(topic, max, wait).ok()) {
    // Each part refuses its own bad input, as it would alone.
    out.acked = Ack(lease, result);
    out.leases = Reserve(topic, max, wait, stop, holder);
    return out;
  }
  // The first look at the store carries the ack; any later one, while the
  // call waits for a job, is a plain reservation.
  bool first = true;
  out.leases = ReserveLoop(
      topic, wait, stop, [&](absl::Time now, ReserveReport* report) {
        if (!holder.empty()) report->holder = std::string(holder);
        if (!first) return backend_->Reserve(topic, max, now, report);
        first = false;
        AckReserved both = backend_->AckAndReserve(
            lease.job.id, lease.token, result, topic, max, now, report);
        out.acked = both.acked;
        if (out.acked.ok()) Acked(lease);
        return std::move(both.leases);
      });
  return out;
}

absl::StatusOr<std::vector<absl::Status>> Scheduler::Impl::AckBatch(
    absl::Span<const Lease> leases) {
  std::vector<Settled> settled;
  absl::StatusOr<std::vector<absl::Status>> acked =
      backend_->AckBatch(leases, clock_->Now(), &settled);
  if (!acked.ok()) return acked.status();
  if (acked->size() != leases.size()) {
    return absl::InternalError(
        absl::StrCat(backend_->Name(), ": AckBatch answered ", acked->size(),
                     " statuses for ", leases.size(), " leases"));
  }
  absl::string_view woken;
  for (size_t i = 0; i < leases.size(); ++i) {
    const Job& job = leases[i].job;
    if ((*acked)[i].ok() && job.topic != woken) {  // as in Ack(), once per run
      promotion_.WakeTopic(job.topic);
      woken = job.topic;
    }
  }
  DependantsMayHaveMoved();
  results_.JobsFinished();
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    for (size_t i = 0; i < leases.size(); ++i) {
      if (!(*acked)[i].ok()) continue;
      events.push_back(LeaseEndEvent(EventType::kSucceeded, leases[i], at));
    }
  });
  EmitSettled(settled);
  return acked;
}

absl::Status Scheduler::Impl::Fail(const Lease& lease,
                                   absl::string_view error) {
  error = internal::Utf8Prefix(error, internal::kMaxErrorBytes);
  const absl::Time now = clock_->Now();
  const absl::Time retry_at =
      now + lease.job.backoff.Jittered(lease.job.attempts, JitterDraw());
  std::vector<Settled> settled;
  absl::StatusOr<FailOutcome> outcome =
      backend_->Fail(lease.job.id, lease.token, error, retry_at, now, &settled);
  if (!outcome.ok()) return outcome.status();
  const Job& job = lease.job;
  promotion_.WakeTopic(job.topic);  // as in Ack()
  if (*outcome == FailOutcome::kDead) results_.JobsFinished();
  EmitLeaseEnd(EventType::kFailed, lease, error);
  if (*outcome == FailOutcome::kDead) {
    DependantsMayHaveMoved();
    Emit(EventType::kDead, job.id, job.topic, job.attempts, error);
    EmitSettled(settled);
    return absl::OkStatus();
  }
  if (retry_at > now) {
    promotion_.Arm(retry_at);
  } else {
    promotion_.WakeTopic(job.topic);
  }
  Emit(EventType::kRetried, job.id, job.topic, job.attempts, error);
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::Release(const Lease& lease,
                                      absl::Duration delay) {
  if (delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("release delay must not be negative");
  }
  const absl::Time now = clock_->Now();
  const absl::Time run_at = now + delay;
  if (absl::Status s = internal::ValidateRunAt(run_at, "release time");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          backend_->Release(lease.job.id, lease.token, run_at, now);
      !s.ok()) {
    return s;
  }
  if (run_at > now) promotion_.Arm(run_at);
  // Ready again, or a slot under the topic's concurrency cap freed.
  promotion_.WakeTopic(lease.job.topic);
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::Touch(Lease& lease) {
  absl::StatusOr<absl::Time> deadline =
      backend_->Touch(lease.job.id, lease.token, clock_->Now());
  if (!deadline.ok()) return deadline.status();
  lease.deadline = *deadline;
  lease.job.deadline = *deadline;
  promotion_.Arm(*deadline);
  return absl::OkStatus();
}

// --- Managing --------------------------------------------------------------

absl::StatusOr<std::vector<std::string>> Scheduler::Impl::CancelFlow(
    absl::string_view id) {
  absl::StatusOr<std::vector<std::string>> flow = internal::UnfinishedFlow(
      id, [this](absl::string_view job) { return backend_->Get(job); });
  if (!flow.ok()) return flow.status();
  std::vector<std::string> cancelled;
  for (const std::string& job : *flow) {
    absl::Status s = Cancel(job);
    // Gone meanwhile (acked, or cancelled by another caller): nothing to do.
    if (absl::IsNotFound(s)) continue;
    if (!s.ok()) return s;
    cancelled.push_back(job);
  }
  return cancelled;
}

absl::Status Scheduler::Impl::Cancel(absl::string_view id) {
  std::string topic;
  if (events_.active()) {
    // Only listeners need the topic; skip the extra read otherwise.
    absl::StatusOr<Job> job = backend_->Get(id);
    if (job.ok()) {
      topic = job->topic;
    } else if (!absl::IsNotFound(job.status())) {
      // Going on would tell the listeners of a job of no topic, and the
      // caller would not hear that the store failed: change nothing.
      return job.status();
    }
  }
  std::vector<Settled> settled;
  if (absl::Status s = backend_->Cancel(id, clock_->Now(), &settled); !s.ok()) {
    return s;
  }
  DependantsMayHaveMoved();
  Emit(EventType::kCancelled, id, topic);
  EmitSettled(settled);
  return absl::OkStatus();
}

absl::StatusOr<int> Scheduler::Impl::Kick(absl::string_view topic, int max) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (max < 0) return absl::InvalidArgumentError("max must not be negative");
  if (max == 0) return 0;
  absl::StatusOr<int> kicked = KickTelling(topic, max);
  if (kicked.ok() && *kicked > 0) promotion_.WakeTopic(topic);
  return kicked;
}

absl::StatusOr<int> Scheduler::Impl::KickTelling(absl::string_view topic,
                                                 int max) {
  // Only listeners need the ids; a store that cannot name them is kicked
  // all the same, untold.
  if (events_.active()) {
    absl::StatusOr<std::vector<std::string>> ids =
        backend_->KickIds(topic, max, clock_->Now());
    if (ids.ok()) {
      EmitCall([&](absl::Time at, std::vector<Event>& events) {
        for (const std::string& id : *ids) {
          events.push_back(MakeEvent(EventType::kKicked, id, topic, at));
        }
      });
      return static_cast<int>(ids->size());
    }
    if (!absl::IsUnimplemented(ids.status())) return ids.status();
  }
  return backend_->Kick(topic, max, clock_->Now());
}

absl::Status Scheduler::Impl::KickJob(absl::string_view id) {
  if (absl::Status s = backend_->KickJob(id, clock_->Now()); !s.ok()) return s;
  // Only listeners and blocked Reserve() calls need the topic; skip the
  // read otherwise.
  if (events_.active() || promotion_.HasWaiters()) {
    absl::StatusOr<Job> job = backend_->Get(id);
    if (job.ok()) {
      Emit(EventType::kKicked, id, job->topic);
      promotion_.WakeTopic(job->topic);
    }
  }
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::PromoteJob(absl::string_view id) {
  if (absl::Status s = backend_->PromoteJob(id, clock_->Now()); !s.ok()) {
    return s;
  }
  // The job may be taken already; its topic is still its topic.
  absl::StatusOr<Job> job = backend_->Get(id);
  if (job.ok()) {
    Emit(EventType::kPromoted, id, job->topic);
    promotion_.WakeTopic(job->topic);
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Scheduler::Impl::PurgeDead(absl::string_view topic,
                                               int max) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (max < 0) return absl::InvalidArgumentError("max must not be negative");
  if (max == 0) return 0;
  std::vector<Settled> settled;
  absl::StatusOr<int> purged =
      backend_->PurgeDead(topic, max, clock_->Now(), &settled);
  if (purged.ok() && !settled.empty()) {
    DependantsMayHaveMoved();
    EmitSettled(settled);
  }
  return purged;
}

absl::Status Scheduler::Impl::SetPaused(absl::string_view topic, bool paused) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (absl::Status s = backend_->SetPaused(topic, paused, clock_->Now());
      !s.ok()) {
    return s;
  }
  // Resumed: this process's blocked Reserve() calls and workers look again
  // (other processes hear it from the store's news).
  if (!paused) promotion_.WakeTopic(topic);
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::SetLimit(absl::string_view topic,
                                       const TopicLimit& limit) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (absl::Status s = internal::ValidateLimit(limit); !s.ok()) return s;
  if (absl::Status s = backend_->SetLimit(topic, limit, clock_->Now());
      !s.ok()) {
    return s;
  }
  promotion_.WakeTopic(topic);  // a looser limit may let waiters in
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::ClearLimit(absl::string_view topic) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (absl::Status s = backend_->ClearLimit(topic, clock_->Now()); !s.ok()) {
    return s;
  }
  promotion_.WakeTopic(topic);
  return absl::OkStatus();
}

// --- Schedules -------------------------------------------------------------

absl::Status Scheduler::Impl::Schedule(ScheduleRecord record) {
  const absl::Time now = clock_->Now();
  if (absl::Status s = internal::ScheduleRunner::Validate(
          record, now, options_.max_payload_bytes);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<absl::Time> next = schedules_.Put(record, now);
  if (!next.ok()) return next.status();
  promotion_.Arm(*next);
  return absl::OkStatus();
}

absl::Status Scheduler::Impl::Unschedule(absl::string_view name) {
  return schedules_.Remove(name, clock_->Now());
}

void Scheduler::Impl::OnOccurrences(const std::vector<NewJob>& jobs,
                                    absl::Time now) {
  for (const NewJob& job : jobs) {
    if (job.run_at > now) {
      promotion_.Arm(job.run_at);
    } else {
      promotion_.WakeTopic(job.topic);
    }
    Emit(EventType::kEnqueued, job.id, job.topic);
  }
}

// --- Threads -------------------------------------------------------------

namespace {
// The scheduler whose thread (worker, timer or keeper) this is, if any. A
// handler or listener that calls Stop() runs on such a thread and must not
// wait for, or join, itself.
thread_local const void* own_scheduler = nullptr;
}  // namespace

void Scheduler::Impl::MarkOwnThread() { own_scheduler = this; }

bool Scheduler::Impl::OnOwnThread() const { return own_scheduler == this; }

absl::Status Scheduler::Impl::Start() {
  absl::MutexLock lock(&threads_mu_);
  if (absl::Status s = workers_.Start(); !s.ok()) return s;
  promotion_.StartTimerThread([this] { MarkOwnThread(); });
  if (event_log_) event_log_->Start();
  return absl::OkStatus();
}

void Scheduler::Impl::Stop(absl::Duration grace) {
  if (OnOwnThread()) {
    // From a handler or listener: ask the threads to stop; joining them is
    // left to the next Stop() from outside, or to the destructor.
    workers_.RequestStop();
    return;
  }
  absl::MutexLock lock(&threads_mu_);
  workers_.Stop(grace);
  promotion_.StopTimerThread();
  if (event_log_) event_log_->Close();
}

// --- Promotion -------------------------------------------------------------

absl::StatusOr<int> Scheduler::Impl::Tick() {
  absl::StatusOr<int> moved = promotion_.Tick();
  // A refused write is reported, and is not the tick's error.
  if (event_log_) event_log_->Flush().IgnoreError();
  return moved;
}

void Scheduler::Impl::EmitMoved(const std::vector<Transition>& moved,
                                const std::vector<Settled>& settled) {
  EmitTransitions(moved);
  EmitSettled(settled);
}

void Scheduler::Impl::EmitSettled(absl::Span<const Settled> settled) {
  if (settled.empty()) return;
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    events.reserve(settled.size());
    for (const Settled& s : settled) {
      EventType type = EventType::kUnblocked;
      if (s.kind == Settled::Kind::kDead) type = EventType::kDead;
      if (s.kind == Settled::Kind::kCancelled) type = EventType::kCancelled;
      events.push_back(MakeEvent(type, s.id, s.topic, at, 0, s.error));
    }
  });
}

void Scheduler::Impl::EmitTransitions(const std::vector<Transition>& moved) {
  if (moved.empty()) return;
  EmitCall([&](absl::Time at, std::vector<Event>& events) {
    events.reserve(moved.size());
    auto add = [&](EventType type, const Transition& t,
                   absl::string_view error = "") {
      events.push_back(MakeEvent(type, t.id, t.topic, at, t.attempts, error));
    };
    for (const Transition& t : moved) {
      switch (t.kind) {
        case Transition::Kind::kPromoted:
          add(EventType::kPromoted, t);
          break;
        case Transition::Kind::kExpired:
          add(EventType::kExpired, t);
          break;
        case Transition::Kind::kDead:
          add(EventType::kDead, t, internal::kLeaseExpired);
          break;
        case Transition::Kind::kLapsed:
          add(EventType::kLapsed, t, internal::kJobExpired);
          add(EventType::kDead, t, internal::kJobExpired);
          break;
        case Transition::Kind::kDiscarded:
          add(EventType::kLapsed, t, internal::kJobExpired);
          break;
      }
    }
  });
}

// --- Events ------------------------------------------------------------------

void Scheduler::Impl::Emit(EventType type, absl::string_view id,
                           absl::string_view topic, int attempts,
                           absl::string_view error, absl::Time due) {
  if (!events_.active()) return;
  events_.Emit(MakeEvent(type, id, topic, clock_->Now(), attempts, error, due));
}

void Scheduler::Impl::EmitLeaseEnd(EventType type, const Lease& lease,
                                   absl::string_view error) {
  if (!events_.active()) return;
  events_.Emit(LeaseEndEvent(type, lease, clock_->Now(), error));
}

Event Scheduler::Impl::LeaseEndEvent(EventType type, const Lease& lease,
                                     absl::Time at, absl::string_view error) {
  Event event = MakeEvent(type, lease.job.id, lease.job.topic, at,
                          lease.job.attempts, error);
  event.reserved_at = lease.reserved_at;
  return event;
}

Event Scheduler::Impl::MakeEvent(EventType type, absl::string_view id,
                                 absl::string_view topic, absl::Time at,
                                 int attempts, absl::string_view error,
                                 absl::Time due) {
  Event event;
  event.type = type;
  event.id = std::string(id);
  event.topic = std::string(topic);
  event.at = at;
  event.attempts = attempts;
  event.error = std::string(error);
  event.due = due;
  return event;
}

// --- The public class --------------------------------------------------------

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    std::unique_ptr<Backend> backend, SchedulerOptions options) {
  if (backend == nullptr) {
    return absl::InvalidArgumentError("Scheduler::Create: backend is null");
  }
  if (absl::Status s = ValidateSchedulerOptions(options); !s.ok()) return s;
  Clock* clock = options.clock != nullptr ? options.clock : &RealClock();
  auto impl = std::make_unique<Impl>(std::move(backend), options, clock);
  if (absl::Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(impl)));
}

Scheduler::Scheduler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Scheduler::~Scheduler() = default;

absl::StatusOr<std::string> Scheduler::Enqueue(absl::string_view topic,
                                               absl::string_view payload,
                                               const JobOptions& options) {
  return impl_->EnqueueOne(topic, payload, options);
}

absl::StatusOr<std::vector<std::string>> Scheduler::EnqueueBatch(
    absl::string_view topic, absl::Span<const std::string> payloads,
    const JobOptions& options) {
  std::vector<absl::string_view> views(payloads.begin(), payloads.end());
  return impl_->EnqueueBatch(topic, views, options);
}

absl::StatusOr<std::vector<std::string>> Scheduler::EnqueueFlow(
    absl::Span<const FlowJob> jobs) {
  return impl_->EnqueueFlow(jobs);
}

absl::StatusOr<std::optional<Lease>> Scheduler::Reserve(absl::string_view topic,
                                                        absl::Duration wait) {
  absl::StatusOr<std::vector<Lease>> leases = impl_->Reserve(topic, 1, wait);
  if (!leases.ok()) return leases.status();
  if (leases->empty()) return std::optional<Lease>();
  return std::optional<Lease>(std::move(leases->front()));
}

absl::StatusOr<std::vector<Lease>> Scheduler::ReserveBatch(
    absl::string_view topic, int max, absl::Duration wait) {
  return impl_->Reserve(topic, max, wait);
}

absl::StatusOr<std::vector<Lease>> Scheduler::ReserveBatch(
    absl::string_view topic, int max, absl::Duration wait,
    const std::atomic<bool>& stop) {
  return impl_->Reserve(topic, max, wait, &stop);
}

absl::StatusOr<std::vector<Lease>> Scheduler::ReserveBatchFor(
    absl::string_view holder, absl::string_view topic, int max,
    absl::Duration wait, const std::atomic<bool>& stop) {
  return impl_->Reserve(topic, max, wait, &stop, holder);
}

void Scheduler::WakeReserves() { impl_->WakeReserves(); }

absl::Status Scheduler::Ack(const Lease& lease, absl::string_view result) {
  return impl_->Ack(lease, result);
}

Scheduler::AckedAndNext Scheduler::AckAndReserve(const Lease& lease,
                                                 absl::string_view topic,
                                                 absl::Duration wait,
                                                 absl::string_view result) {
  return AckAndReserveFor("", lease, topic, wait, result);
}

Scheduler::AckedAndNext Scheduler::AckAndReserveFor(absl::string_view holder,
                                                    const Lease& lease,
                                                    absl::string_view topic,
                                                    absl::Duration wait,
                                                    absl::string_view result) {
  AckReserved both = impl_->AckAndReserve(lease, result, topic, 1, wait,
                                          /*stop=*/nullptr, holder);
  AckedAndNext out;
  out.acked = std::move(both.acked);
  if (!both.leases.ok()) {
    out.next = both.leases.status();
  } else if (both.leases->empty()) {
    out.next = std::optional<Lease>();
  } else {
    out.next = std::optional<Lease>(std::move(both.leases->front()));
  }
  return out;
}

absl::StatusOr<std::vector<absl::Status>> Scheduler::AckBatch(
    absl::Span<const Lease> leases) {
  return impl_->AckBatch(leases);
}

absl::Status Scheduler::Fail(const Lease& lease, absl::string_view error) {
  return impl_->Fail(lease, error);
}

absl::Status Scheduler::Release(const Lease& lease, absl::Duration delay) {
  return impl_->Release(lease, delay);
}

absl::Status Scheduler::Touch(Lease& lease) { return impl_->Touch(lease); }

absl::Status Scheduler::Cancel(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->Cancel(id);
}

absl::StatusOr<std::vector<std::string>> Scheduler::CancelFlow(
    absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->CancelFlow(id);
}

absl::StatusOr<std::string> Scheduler::OpenBatch(absl::string_view topic,
                                                 absl::string_view payload,
                                                 const JobOptions& options) {
  return impl_->OpenBatch(topic, payload, options);
}

absl::Status Scheduler::CloseBatch(absl::string_view id) {
  return impl_->CloseBatch(id);
}

absl::StatusOr<Batch> Scheduler::GetBatch(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->backend().GetBatch(id);
}

absl::StatusOr<Job> Scheduler::Get(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->backend().Get(id);
}

absl::StatusOr<Job> Scheduler::WaitForResult(absl::string_view id,
                                             absl::Duration timeout,
                                             absl::Duration poll) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->WaitForResult(id, timeout, poll);
}

absl::StatusOr<std::vector<Job>> Scheduler::List(absl::string_view topic,
                                                 JobState state, int limit) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (limit < 0)
    return absl::InvalidArgumentError("limit must not be negative");
  return impl_->backend().List(topic, state, limit);
}

absl::StatusOr<JobPage> Scheduler::ListLeases(int limit,
                                              absl::string_view cursor) {
  return internal::LeasePage(*this, limit, cursor);
}

absl::StatusOr<JobPage> Scheduler::ListPage(absl::string_view topic,
                                            JobState state, int limit,
                                            absl::string_view cursor) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  if (limit < 1) return absl::InvalidArgumentError("limit must be at least 1");
  return impl_->backend().ListPage(topic, state, limit, cursor);
}

absl::StatusOr<TopicStats> Scheduler::Stats(absl::string_view topic) {
  if (absl::Status s = internal::ValidateTopic(topic); !s.ok()) return s;
  return impl_->backend().Stats(topic);
}

absl::StatusOr<std::vector<std::string>> Scheduler::Topics() {
  return impl_->backend().Topics();
}

absl::StatusOr<std::vector<TopicMinute>> Scheduler::Counts(absl::Time from,
                                                           absl::Time to) {
  if (from > to) {
    return absl::InvalidArgumentError(
        absl::StrCat("counts: from ", absl::FormatTime(from), " is after to ",
                     absl::FormatTime(to)));
  }
  return impl_->backend().Counts(from, to);
}

absl::StatusOr<std::vector<TopicTotals>> Scheduler::CountTotals() {
  return impl_->backend().CountTotals();
}

absl::StatusOr<std::vector<TopicTotals>> Scheduler::RecentCounts(
    absl::Duration span) {
  const absl::Time now = impl_->clock().Now();
  absl::StatusOr<std::vector<TopicMinute>> minutes = Counts(now - span, now);
  if (!minutes.ok()) return minutes.status();
  return internal::SumByTopic(*minutes);
}

absl::StatusOr<int> Scheduler::Kick(absl::string_view topic, int max) {
  return impl_->Kick(topic, max);
}

absl::Status Scheduler::KickJob(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->KickJob(id);
}

absl::Status Scheduler::Promote(absl::string_view id) {
  DQ_RETURN_IF_ERROR(internal::ValidateId(id));
  return impl_->PromoteJob(id);
}

absl::Status Scheduler::CheckTopic(absl::string_view topic) {
  return internal::ValidateTopic(topic);
}

absl::Status Scheduler::CheckJobId(absl::string_view id) {
  return internal::ValidateId(id);
}

absl::StatusOr<int> Scheduler::PurgeDead(absl::string_view topic, int max) {
  return impl_->PurgeDead(topic, max);
}

absl::Status Scheduler::Pause(absl::string_view topic) {
  return impl_->SetPaused(topic, true);
}

absl::Status Scheduler::Resume(absl::string_view topic) {
  return impl_->SetPaused(topic, false);
}

absl::StatusOr<std::vector<std::string>> Scheduler::PausedTopics() {
  return impl_->backend().PausedTopics();
}

absl::Status Scheduler::SetLimit(absl::string_view topic,
                                 const TopicLimit& limit) {
  return impl_->SetLimit(topic, limit);
}

absl::Status Scheduler::ClearLimit(absl::string_view topic) {
  return impl_->ClearLimit(topic);
}

absl::StatusOr<std::vector<LimitedTopic>> Scheduler::Limits() {
  return impl_->backend().Limits();
}

absl::StatusOr<int> Scheduler::Tick() { return impl_->Tick(); }

absl::Status Scheduler::FlushEventLog() { return impl_->FlushEventLog(); }

absl::Status Scheduler::Schedule(absl::string_view name, absl::string_view spec,
                                 absl::string_view topic,
                                 absl::string_view payload,
                                 const ScheduleOptions& options) {
  ScheduleRecord record;
  record.name = std::string(name);
  record.spec = std::string(spec);
  record.topic = std::string(topic);
  record.payload = std::string(payload);
  record.options = options;
  return impl_->Schedule(std::move(record));
}

absl::Status Scheduler::Unschedule(absl::string_view name) {
  return impl_->Unschedule(name);
}

absl::StatusOr<std::vector<ScheduleInfo>> Scheduler::Schedules() {
  return impl_->Schedules();
}

void Scheduler::Handle(absl::string_view topic, Handler handler,
                       HandlerOptions options) {
  impl_->Handle(
      topic,
      [handler = std::move(handler)](
          const Lease& lease) -> absl::StatusOr<std::string> {
        DQ_RETURN_IF_ERROR(handler(lease.job));
        return std::string();
      },
      options);
}

void Scheduler::HandleLeases(absl::string_view topic, LeaseHandler handler,
                             HandlerOptions options) {
  impl_->Handle(
      topic,
      [handler = std::move(handler)](
          const Lease& lease) -> absl::StatusOr<std::string> {
        DQ_RETURN_IF_ERROR(handler(lease));
        return std::string();
      },
      options);
}

void Scheduler::HandleResults(absl::string_view topic, ResultHandler handler,
                              HandlerOptions options) {
  impl_->Handle(
      topic,
      [handler = std::move(handler)](const Lease& lease) {
        return handler(lease.job);
      },
      options);
}

absl::Status Scheduler::Start() { return impl_->Start(); }

void Scheduler::Stop(absl::Duration grace) { impl_->Stop(grace); }

int Scheduler::AddListener(EventListener listener) {
  return impl_->events().Add(std::move(listener));
}

int Scheduler::AddBatchListener(EventBatchListener listener) {
  return impl_->events().AddBatch(std::move(listener));
}

void Scheduler::RemoveListener(int handle) { impl_->events().Remove(handle); }

Clock& Scheduler::clock() const { return impl_->clock(); }

Backend& Scheduler::backend() const { return impl_->backend(); }

}  // namespace delayq
