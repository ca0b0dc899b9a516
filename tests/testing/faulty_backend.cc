// Copyright delayq authors.

#include "tests/testing/faulty_backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace delayq {
namespace testing {
namespace {

// SplitMix64's finaliser: a decision must depend on nothing but its inputs
// (absl::Hash is seeded per process, so it would not replay).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A draw in [0, 1).
double Unit(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

bool EndsLease(StoreCall call) {
  return call == StoreCall::kAck || call == StoreCall::kAckBatch ||
         call == StoreCall::kFail || call == StoreCall::kRelease;
}

}  // namespace

const char* StoreCallName(StoreCall call) {
  switch (call) {
    case StoreCall::kAdd:
      return "Add";
    case StoreCall::kReserve:
      return "Reserve";
    case StoreCall::kAck:
      return "Ack";
    case StoreCall::kAckBatch:
      return "AckBatch";
    case StoreCall::kFail:
      return "Fail";
    case StoreCall::kRelease:
      return "Release";
    case StoreCall::kTouch:
      return "Touch";
    case StoreCall::kCancel:
      return "Cancel";
    case StoreCall::kGet:
      return "Get";
    case StoreCall::kList:
      return "List";
    case StoreCall::kStats:
      return "Stats";
    case StoreCall::kTopics:
      return "Topics";
    case StoreCall::kKick:
      return "Kick";
    case StoreCall::kKickJob:
      return "KickJob";
    case StoreCall::kPromoteDue:
      return "PromoteDue";
    case StoreCall::kNextDue:
      return "NextDue";
    case StoreCall::kReplace:
      return "Replace";
    case StoreCall::kSetPaused:
      return "SetPaused";
    case StoreCall::kPausedTopics:
      return "PausedTopics";
    case StoreCall::kSetLimit:
      return "SetLimit";
    case StoreCall::kClearLimit:
      return "ClearLimit";
    case StoreCall::kLimits:
      return "Limits";
    case StoreCall::kPutSchedule:
      return "PutSchedule";
    case StoreCall::kRemoveSchedule:
      return "RemoveSchedule";
    case StoreCall::kListSchedules:
      return "ListSchedules";
    case StoreCall::kFireSchedule:
      return "FireSchedule";
    case StoreCall::kSubscribe:
      return "Subscribe";
  }
  return "?";
}

bool ChangesStore(StoreCall call) {
  switch (call) {
    case StoreCall::kGet:
    case StoreCall::kList:
    case StoreCall::kStats:
    case StoreCall::kTopics:
    case StoreCall::kNextDue:
    case StoreCall::kPausedTopics:
    case StoreCall::kLimits:
    case StoreCall::kListSchedules:
    case StoreCall::kSubscribe:
      return false;
    default:
      return true;
  }
}

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kFailBefore:
      return "fail-before";
    case FaultKind::kFailAfter:
      return "fail-after";
    case FaultKind::kDelay:
      return "delay";
  }
  return "?";
}

std::string Injection::ToString() const {
  std::string out = absl::StrFormat("#%d %s[%d] %s", seq, StoreCallName(call),
                                    nth, FaultKindName(kind));
  if (kind == FaultKind::kDelay) {
    absl::StrAppend(&out, " ", absl::FormatDuration(delay));
  } else {
    absl::StrAppend(&out, " ", absl::StatusCodeToString(code));
  }
  if (!id.empty()) absl::StrAppend(&out, " ", id);
  if (token != 0) absl::StrAppend(&out, " token=", token);
  return out;
}

FaultyBackend::FaultyBackend(Backend* target, FaultPlan plan,
                             SimulatedClock* clock)
    : BackendWrapper(target), plan_(std::move(plan)), clock_(clock) {}

std::unique_ptr<Backend> FaultyBackend::Borrow() {
  return std::make_unique<BackendWrapper>(this);
}

void FaultyBackend::set_enabled(bool enabled) {
  absl::MutexLock lock(&mu_);
  enabled_ = enabled;
}

bool FaultyBackend::enabled() const {
  absl::MutexLock lock(&mu_);
  return enabled_;
}

void FaultyBackend::ForceNext(StoreCall call, FaultKind kind,
                              absl::StatusCode code, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  Decision d;
  d.kind = kind;
  d.code = code;
  d.delay = delay;
  forced_[call] = d;
}

FaultyBackend::Decision FaultyBackend::Decide(StoreCall call, uint64_t nth) {
  Decision d;
  const uint64_t h =
      Mix(Mix(Mix(plan_.seed) ^ static_cast<uint64_t>(call)) ^ nth);
  const double u = Unit(h);
  if (u < plan_.fail_before) {
    d.kind = FaultKind::kFailBefore;
  } else if (u < plan_.fail_before + plan_.fail_after) {
    d.kind = FaultKind::kFailAfter;
  } else if (u < plan_.fail_before + plan_.fail_after + plan_.delay) {
    d.kind = FaultKind::kDelay;
  } else {
    return d;
  }
  d.code = Unit(Mix(h)) < 0.5 ? absl::StatusCode::kUnavailable
                              : absl::StatusCode::kDeadlineExceeded;
  // Whole microseconds, at least one: a delay of zero would be no fault.
  const int64_t max_us =
      std::max<int64_t>(1, absl::ToInt64Microseconds(plan_.max_delay));
  d.delay = absl::Microseconds(
      1 + static_cast<int64_t>(Unit(Mix(Mix(h))) * (max_us - 1)));
  return d;
}

absl::Status FaultyBackend::Failure(StoreCall call, absl::StatusCode code,
                                    bool after) {
  return absl::Status(
      code, absl::StrCat("injected: ", StoreCallName(call),
                         after ? " acted, its reply was lost"
                               : " failed before reaching the store"));
}

absl::Status FaultyBackend::Before(StoreCall call, absl::string_view id,
                                   uint64_t token, absl::Status* after) {
  const int c = static_cast<int>(call);
  Decision d;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t nth = calls_[c]++;
    auto forced = forced_.find(call);
    if (forced != forced_.end()) {
      d = forced->second;
      forced_.erase(forced);
    } else if (enabled_ && (plan_.calls.empty() || plan_.calls.count(call))) {
      d = Decide(call, nth);
    }
    if (!d.kind.has_value()) return absl::OkStatus();
    Injection in;
    in.seq = injections_.size();
    in.call = call;
    in.nth = nth;
    in.kind = *d.kind;
    in.id = std::string(id);
    in.token = token;
    if (*d.kind == FaultKind::kDelay) {
      in.delay = d.delay;
    } else {
      in.code = d.code;
      ++failures_[c];
    }
    injections_.push_back(std::move(in));
  }
  switch (*d.kind) {
    case FaultKind::kDelay:
      // On a simulated clock the call takes time by moving the clock: every
      // thread waiting on it sees that time pass while the call is out.
      if (clock_ != nullptr) {
        clock_->Advance(d.delay);
      } else {
        absl::SleepFor(d.delay);
      }
      return absl::OkStatus();
    case FaultKind::kFailBefore:
      return Failure(call, d.code, false);
    case FaultKind::kFailAfter:
      *after = Failure(call, d.code, true);
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

template <typename F>
auto FaultyBackend::Run(StoreCall call, absl::string_view id, uint64_t token,
                        F f) -> decltype(f()) {
  absl::Status after;
  if (absl::Status s = Before(call, id, token, &after); !s.ok()) {
    if (EndsLease(call)) NoteEndFailedBefore(id, token);
    return s;
  }
  auto result = f();
  if (!after.ok()) return after;
  return result;
}

// --- The ledger --------------------------------------------------------------

void FaultyBackend::NoteAdded(absl::Span<const NewJob> jobs) {
  absl::MutexLock lock(&mu_);
  for (const NewJob& job : jobs) added_.insert(job.id);
}

void FaultyBackend::NoteGranted(const std::vector<Lease>& leases,
                                absl::Time now, bool reply_lost) {
  absl::MutexLock lock(&mu_);
  for (const Lease& lease : leases) {
    GrantedLease& g = leases_[{lease.job.id, lease.token}];
    g.id = lease.job.id;
    g.token = lease.token;
    g.granted_at = now;
    g.grant_seq = ++grants_;
    g.deadline = lease.deadline;
    g.reply_lost = reply_lost;
    current_[lease.job.id] = lease.token;
  }
}

void FaultyBackend::NoteEnded(absl::string_view id, uint64_t token,
                              StoreCall by, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find({std::string(id), token});
  if (it != leases_.end() && !it->second.ended_by.has_value()) {
    it->second.ended_by = by;
    it->second.ended_at = now;
  }
}

void FaultyBackend::NoteEndedJob(absl::string_view id, StoreCall by,
                                 absl::Time now) {
  absl::MutexLock lock(&mu_);
  const std::string key(id);
  // Notes from several threads may come in another order than the store
  // acted in: a lease granted after this end may be noted already. A lapse
  // ends the newest lease that had lapsed by `now`; only when there is none
  // does it end the current one (and the check of deadlines finds the
  // early lapse). A cancel ends every lease of the job.
  GrantedLease* lapsed = nullptr;
  for (auto it = leases_.lower_bound({key, 0});
       it != leases_.end() && it->first.first == key; ++it) {
    GrantedLease& g = it->second;
    if (g.ended_by.has_value()) continue;
    if (by == StoreCall::kCancel) {
      g.ended_by = by;
      g.ended_at = now;
    } else if (g.deadline <= now &&
               (lapsed == nullptr || g.granted_at > lapsed->granted_at)) {
      lapsed = &g;
    }
  }
  if (by == StoreCall::kCancel) return;
  if (lapsed == nullptr) {
    auto current = current_.find(key);
    if (current == current_.end()) return;
    auto it = leases_.find({key, current->second});
    if (it == leases_.end() || it->second.ended_by.has_value()) return;
    lapsed = &it->second;
  }
  lapsed->ended_by = by;
  lapsed->ended_at = now;
}

void FaultyBackend::NoteMoved(const std::vector<Transition>& moved,
                              StoreCall by, absl::Time now) {
  for (const Transition& t : moved) {
    if (t.kind != Transition::Kind::kPromoted) NoteEndedJob(t.id, by, now);
  }
}

void FaultyBackend::NoteEndFailedBefore(absl::string_view id, uint64_t token) {
  absl::MutexLock lock(&mu_);
  ends_failed_before_.emplace(std::string(id), token);
}

std::vector<Injection> FaultyBackend::Injections() const {
  absl::MutexLock lock(&mu_);
  return injections_;
}

std::string FaultyBackend::Report() const {
  absl::MutexLock lock(&mu_);
  std::string out = absl::StrFormat(
      "fault plan: seed=%d fail_before=%.3f fail_after=%.3f delay=%.3f "
      "max_delay=%s; %d injections\n",
      plan_.seed, plan_.fail_before, plan_.fail_after, plan_.delay,
      absl::FormatDuration(plan_.max_delay), injections_.size());
  for (const Injection& in : injections_) {
    absl::StrAppend(&out, "  ", in.ToString(), "\n");
  }
  return out;
}

int64_t FaultyBackend::Calls(StoreCall call) const {
  absl::MutexLock lock(&mu_);
  return calls_[static_cast<int>(call)];
}

int64_t FaultyBackend::Failures(StoreCall call) const {
  absl::MutexLock lock(&mu_);
  return failures_[static_cast<int>(call)];
}

int64_t FaultyBackend::Failures() const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (uint64_t f : failures_) n += f;
  return n;
}

int64_t FaultyBackend::Delays() const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (const Injection& in : injections_) n += in.kind == FaultKind::kDelay;
  return n;
}

std::set<std::string> FaultyBackend::Added() const {
  absl::MutexLock lock(&mu_);
  return added_;
}

std::set<std::string> FaultyBackend::Acked() const {
  absl::MutexLock lock(&mu_);
  return acked_;
}

std::set<std::string> FaultyBackend::Cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

std::map<FaultyBackend::LeaseKey, GrantedLease> FaultyBackend::Leases() const {
  absl::MutexLock lock(&mu_);
  return leases_;
}

std::multimap<std::string, uint64_t> FaultyBackend::EndsFailedBefore() const {
  absl::MutexLock lock(&mu_);
  return ends_failed_before_;
}

// --- Backend -----------------------------------------------------------------

absl::Status FaultyBackend::Add(absl::Span<const NewJob> jobs, absl::Time now) {
  return Run(StoreCall::kAdd, jobs.empty() ? "" : jobs[0].id, 0, [&] {
    absl::Status s = target()->Add(jobs, now);
    if (s.ok()) NoteAdded(jobs);
    return s;
  });
}

absl::StatusOr<std::vector<Lease>> FaultyBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  absl::Status after;
  if (absl::Status s = Before(StoreCall::kReserve, topic, 0, &after); !s.ok()) {
    return s;
  }
  // The moves are read even when the caller does not ask: a lease that
  // expired ended there.
  ReserveReport own;
  absl::StatusOr<std::vector<Lease>> leases =
      target()->Reserve(topic, max, now, &own);
  NoteMoved(own.moved, StoreCall::kReserve, now);
  if (leases.ok()) NoteGranted(*leases, now, !after.ok());
  if (!after.ok()) return after;
  if (report != nullptr) {
    for (Transition& t : own.moved) report->moved.push_back(std::move(t));
    report->limited_until = own.limited_until;
  }
  return leases;
}

absl::Status FaultyBackend::Ack(absl::string_view id, uint64_t token,
                                absl::string_view result, absl::Time now,
                                std::vector<Settled>* settled) {
  return Run(StoreCall::kAck, id, token, [&] {
    absl::Status s = target()->Ack(id, token, result, now, settled);
    if (s.ok()) {
      NoteEnded(id, token, StoreCall::kAck, now);
      absl::MutexLock lock(&mu_);
      acked_.insert(std::string(id));
    }
    return s;
  });
}

absl::StatusOr<std::vector<absl::Status>> FaultyBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now,
    std::vector<Settled>* settled) {
  absl::Status after;
  if (absl::Status s =
          Before(StoreCall::kAckBatch, leases.empty() ? "" : leases[0].job.id,
                 leases.empty() ? 0 : leases[0].token, &after);
      !s.ok()) {
    for (const Lease& l : leases) NoteEndFailedBefore(l.job.id, l.token);
    return s;
  }
  absl::StatusOr<std::vector<absl::Status>> acked =
      target()->AckBatch(leases, now, settled);
  if (acked.ok()) {
    for (size_t i = 0; i < leases.size() && i < acked->size(); ++i) {
      if (!(*acked)[i].ok()) continue;
      NoteEnded(leases[i].job.id, leases[i].token, StoreCall::kAckBatch, now);
      absl::MutexLock lock(&mu_);
      acked_.insert(leases[i].job.id);
    }
  }
  if (!after.ok()) return after;
  return acked;
}

absl::StatusOr<FailOutcome> FaultyBackend::Fail(
    absl::string_view id, uint64_t token, absl::string_view error,
    absl::Time retry_at, absl::Time now, std::vector<Settled>* settled) {
  return Run(StoreCall::kFail, id, token, [&]() -> absl::StatusOr<FailOutcome> {
    absl::StatusOr<FailOutcome> out =
        target()->Fail(id, token, error, retry_at, now, settled);
    if (out.ok()) NoteEnded(id, token, StoreCall::kFail, now);
    return out;
  });
}

absl::Status FaultyBackend::Release(absl::string_view id, uint64_t token,
                                    absl::Time run_at, absl::Time now) {
  return Run(StoreCall::kRelease, id, token, [&] {
    absl::Status s = target()->Release(id, token, run_at, now);
    if (s.ok()) NoteEnded(id, token, StoreCall::kRelease, now);
    return s;
  });
}

absl::StatusOr<absl::Time> FaultyBackend::Touch(absl::string_view id,
                                                uint64_t token,
                                                absl::Time now) {
  absl::Status after;
  if (absl::Status s = Before(StoreCall::kTouch, id, token, &after); !s.ok()) {
    return s;
  }
  absl::StatusOr<absl::Time> deadline = target()->Touch(id, token, now);
  if (deadline.ok()) {
    absl::MutexLock lock(&mu_);
    auto it = leases_.find({std::string(id), token});
    // Touches may be noted out of order: keep the latest.
    if (it != leases_.end() && *deadline >= it->second.deadline) {
      it->second.deadline = *deadline;
      it->second.touch_reply_lost = !after.ok();
    }
  }
  if (!after.ok()) return after;
  return deadline;
}

absl::Status FaultyBackend::Cancel(absl::string_view id, absl::Time now,
                                   std::vector<Settled>* settled) {
  return Run(StoreCall::kCancel, id, 0, [&] {
    absl::Status s = target()->Cancel(id, now, settled);
    if (s.ok()) {
      NoteEndedJob(id, StoreCall::kCancel, now);
      absl::MutexLock lock(&mu_);
      cancelled_.insert(std::string(id));
    }
    return s;
  });
}

absl::StatusOr<Job> FaultyBackend::Get(absl::string_view id) {
  return Run(StoreCall::kGet, id, 0, [&] { return target()->Get(id); });
}

absl::StatusOr<std::vector<Job>> FaultyBackend::List(absl::string_view topic,
                                                     JobState state,
                                                     int limit) {
  return Run(StoreCall::kList, topic, 0,
             [&] { return target()->List(topic, state, limit); });
}

absl::StatusOr<TopicStats> FaultyBackend::Stats(absl::string_view topic) {
  return Run(StoreCall::kStats, topic, 0,
             [&] { return target()->Stats(topic); });
}

absl::StatusOr<std::vector<std::string>> FaultyBackend::Topics() {
  return Run(StoreCall::kTopics, "", 0, [&] { return target()->Topics(); });
}

absl::StatusOr<int> FaultyBackend::Kick(absl::string_view topic, int max,
                                        absl::Time now) {
  return Run(StoreCall::kKick, topic, 0,
             [&] { return target()->Kick(topic, max, now); });
}

absl::Status FaultyBackend::KickJob(absl::string_view id, absl::Time now) {
  return Run(StoreCall::kKickJob, id, 0,
             [&] { return target()->KickJob(id, now); });
}

absl::StatusOr<PromoteResult> FaultyBackend::PromoteDue(absl::Time now,
                                                        int limit) {
  return Run(
      StoreCall::kPromoteDue, "", 0, [&]() -> absl::StatusOr<PromoteResult> {
        absl::StatusOr<PromoteResult> r = target()->PromoteDue(now, limit);
        if (r.ok()) NoteMoved(r->transitions, StoreCall::kPromoteDue, now);
        return r;
      });
}

absl::StatusOr<absl::Time> FaultyBackend::NextDue() {
  return Run(StoreCall::kNextDue, "", 0, [&] { return target()->NextDue(); });
}

absl::Status FaultyBackend::Replace(const NewJob& job, absl::Time now) {
  return Run(StoreCall::kReplace, job.id, 0,
             [&] { return target()->Replace(job, now); });
}

absl::Status FaultyBackend::SetPaused(absl::string_view topic, bool paused,
                                      absl::Time now) {
  return Run(StoreCall::kSetPaused, topic, 0,
             [&] { return target()->SetPaused(topic, paused, now); });
}

absl::StatusOr<std::vector<std::string>> FaultyBackend::PausedTopics() {
  return Run(StoreCall::kPausedTopics, "", 0,
             [&] { return target()->PausedTopics(); });
}

absl::Status FaultyBackend::SetLimit(absl::string_view topic,
                                     const TopicLimit& limit, absl::Time now) {
  return Run(StoreCall::kSetLimit, topic, 0,
             [&] { return target()->SetLimit(topic, limit, now); });
}

absl::Status FaultyBackend::ClearLimit(absl::string_view topic,
                                       absl::Time now) {
  return Run(StoreCall::kClearLimit, topic, 0,
             [&] { return target()->ClearLimit(topic, now); });
}

absl::StatusOr<std::vector<LimitedTopic>> FaultyBackend::Limits() {
  return Run(StoreCall::kLimits, "", 0, [&] { return target()->Limits(); });
}

absl::Status FaultyBackend::PutSchedule(const ScheduleRecord& schedule,
                                        absl::Time now) {
  return Run(StoreCall::kPutSchedule, schedule.name, 0,
             [&] { return target()->PutSchedule(schedule, now); });
}

absl::Status FaultyBackend::RemoveSchedule(absl::string_view name,
                                           absl::Time now) {
  return Run(StoreCall::kRemoveSchedule, name, 0,
             [&] { return target()->RemoveSchedule(name, now); });
}

absl::StatusOr<std::vector<ScheduleRecord>> FaultyBackend::ListSchedules() {
  return Run(StoreCall::kListSchedules, "", 0,
             [&] { return target()->ListSchedules(); });
}

absl::Status FaultyBackend::FireSchedule(absl::string_view name,
                                         int64_t revision, absl::Time through,
                                         absl::Span<const NewJob> jobs,
                                         absl::Time now) {
  return Run(StoreCall::kFireSchedule, name, 0, [&] {
    absl::Status s = target()->FireSchedule(name, revision, through, jobs, now);
    if (s.ok()) NoteAdded(jobs);
    return s;
  });
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> FaultyBackend::Subscribe(
    NewsCallback on_news) {
  // After a lost reply the subscription is destroyed here, as a caller that
  // never got it could not.
  return Run(StoreCall::kSubscribe, "", 0,
             [&] { return target()->Subscribe(std::move(on_news)); });
}

}  // namespace testing
}  // namespace delayq
