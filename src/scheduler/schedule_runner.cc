// Copyright delayq authors.

#include "src/scheduler/schedule_runner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "src/common/contract_errors.h"
#include "src/common/validation.h"
#include "src/scheduler/occurrences.h"

namespace delayq {
namespace internal {
namespace {

constexpr size_t kMaxScheduleNameBytes = 150;
constexpr absl::Duration kMaxJitter = absl::Hours(1);

// Names use a topic's characters; they are shorter, so that an occurrence's
// job id (name, '@', time) stays within the id limit.
absl::Status ValidateName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("schedule name is empty");
  const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule name '", absl::CHexEscape(name),
                     "' has a character outside [A-Za-z0-9._:-]"));
  }
  if (name.size() > kMaxScheduleNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule name is ", name.size(), " bytes; the limit is ",
                     kMaxScheduleNameBytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateJobOptions(const JobOptions& job) {
  const JobOptions defaults;
  if (!job.id.empty() || job.delay != defaults.delay ||
      job.run_at != defaults.run_at || job.replace) {
    return absl::InvalidArgumentError(
        "a schedule's job options cannot set id, delay, run_at or replace: "
        "each occurrence's job gets its own id and due time");
  }
  if (!job.after.empty()) {
    return absl::InvalidArgumentError(
        "a schedule's jobs cannot wait for others (after): stores keep no "
        "dependencies with a schedule");
  }
  if (!job.batch.empty()) {
    return absl::InvalidArgumentError(
        "a schedule's jobs cannot join a batch: a batch is closed once, a "
        "schedule runs on");
  }
  return ValidateOptions(job);
}

absl::Status ValidateScheduleOptions(const ScheduleOptions& o) {
  if (o.missed.kind == MissedPolicy::Kind::kAll &&
      (o.missed.max < 1 || o.missed.max > kMaxMissedRuns)) {
    return absl::InvalidArgumentError(
        absl::StrCat("missed policy all:", o.missed.max,
                     " needs a bound from 1 to ", kMaxMissedRuns));
  }
  if (o.jitter < absl::ZeroDuration() || o.jitter > kMaxJitter) {
    return absl::InvalidArgumentError(absl::StrCat(
        "jitter must be from 0 to ", absl::FormatDuration(kMaxJitter), ", got ",
        absl::FormatDuration(o.jitter)));
  }
  return ValidateJobOptions(o.job);
}

}  // namespace

ScheduleRunner::ScheduleRunner(Backend& backend, Enqueued on_enqueued,
                               ErrorReport on_error)
    : backend_(backend),
      on_enqueued_(std::move(on_enqueued)),
      on_error_(std::move(on_error)) {}

absl::Status ScheduleRunner::Validate(const ScheduleRecord& s, absl::Time now,
                                      size_t max_payload_bytes) {
  if (absl::Status st = ValidateName(s.name); !st.ok()) return st;
  absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse(s.spec);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<absl::TimeZone> tz = ParseTimeZone(s.options.time_zone);
  if (!tz.ok()) return tz.status();
  if (spec->Next(now, *tz) > kLatestRunAt) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec '", s.spec, "' never occurs"));
  }
  if (absl::Status st = ValidateTopic(s.topic); !st.ok()) return st;
  if (absl::Status st = ValidatePayload(s.payload, max_payload_bytes);
      !st.ok()) {
    return st;
  }
  return ValidateScheduleOptions(s.options);
}

ScheduleRunner::Entry ScheduleRunner::MakeEntry(ScheduleRecord record) {
  Entry e;
  absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse(record.spec);
  absl::StatusOr<absl::TimeZone> tz = ParseTimeZone(record.options.time_zone);
  if (spec.ok() && tz.ok()) {
    e.spec = *std::move(spec);
    e.tz = *tz;
    e.next = e.spec->Next(record.done_through, e.tz);
    if (e.next > kLatestRunAt) e.next = absl::InfiniteFuture();
  }
  e.record = std::move(record);
  return e;
}

absl::StatusOr<absl::Time> ScheduleRunner::Put(const ScheduleRecord& s,
                                               absl::Time now) {
  if (absl::Status st = backend_.PutSchedule(s, now); !st.ok()) return st;
  if (absl::Status st = Reload(); !st.ok()) return st;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(s.name);
  return it == entries_.end() ? absl::InfiniteFuture() : it->second.next;
}

absl::Status ScheduleRunner::Remove(absl::string_view name, absl::Time now) {
  if (absl::Status st = backend_.RemoveSchedule(name, now); !st.ok()) {
    return st;
  }
  absl::MutexLock lock(&mu_);
  entries_.erase(name);
  UpdateEarliestLocked();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ScheduleInfo>> ScheduleRunner::List() {
  absl::StatusOr<std::vector<ScheduleRecord>> records =
      backend_.ListSchedules();
  if (!records.ok()) return records.status();
  std::vector<ScheduleInfo> out;
  out.reserve(records->size());
  for (const ScheduleRecord& r : *records) {
    Entry e = MakeEntry(r);
    out.push_back(ScheduleInfo{std::move(e.record), e.next});
  }
  Replace(*std::move(records));
  return out;
}

absl::Status ScheduleRunner::Reload() {
  absl::StatusOr<std::vector<ScheduleRecord>> records =
      backend_.ListSchedules();
  if (absl::IsUnimplemented(records.status())) return absl::OkStatus();
  if (!records.ok()) return records.status();
  Replace(*std::move(records));
  return absl::OkStatus();
}

void ScheduleRunner::Replace(std::vector<ScheduleRecord> records) {
  absl::flat_hash_map<std::string, Entry> entries;
  for (ScheduleRecord& r : records) {
    std::string name = r.name;
    entries.emplace(std::move(name), MakeEntry(std::move(r)));
  }
  absl::MutexLock lock(&mu_);
  entries_ = std::move(entries);
  UpdateEarliestLocked();
}

void ScheduleRunner::UpdateEarliestLocked() {
  absl::Time earliest = absl::InfiniteFuture();
  for (const auto& [name, e] : entries_) {
    earliest = std::min(earliest, std::max(e.next, e.retry_at));
  }
  earliest_ns_.store(
      earliest == absl::InfiniteFuture() ? kNone : absl::ToUnixNanos(earliest),
      std::memory_order_release);
}

absl::Time ScheduleRunner::NextWake() const {
  const int64_t ns = earliest_ns_.load(std::memory_order_acquire);
  return ns == kNone ? absl::InfiniteFuture() : absl::FromUnixNanos(ns);
}

absl::Time ScheduleRunner::RunDue(absl::Time now, bool reload) {
  // The common call, from every Tick(): nothing due, nothing to read.
  if (!reload) {
    const absl::Time next = NextWake();
    if (next > now) return next;
  }
  // Another thread is at it, and arms what comes next itself.
  if (running_.exchange(true)) return absl::InfiniteFuture();
  if (reload) (void)Reload();
  // Schedules refused twice at one revision: a live job holds an
  // occurrence's id (enqueued by hand), and stands for it.
  absl::flat_hash_map<std::string, int64_t> stuck;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<std::pair<std::string, int64_t>> refused = FirePass(now, stuck);
    if (refused.empty() || !Reload().ok()) break;
    absl::MutexLock lock(&mu_);
    for (const auto& [name, revision] : refused) {
      auto it = entries_.find(name);
      if (it != entries_.end() && it->second.record.revision == revision) {
        stuck[name] = revision;
      }
    }
  }
  running_.store(false);
  return NextWake();
}

std::vector<std::pair<std::string, int64_t>> ScheduleRunner::FirePass(
    absl::Time now, const absl::flat_hash_map<std::string, int64_t>& stuck) {
  std::vector<Entry> due;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, e] : entries_) {
      if (e.next <= now && e.retry_at <= now) due.push_back(e);
    }
  }
  std::vector<std::pair<std::string, int64_t>> refused;
  for (const Entry& e : due) {
    auto s = stuck.find(e.record.name);
    const bool without_jobs =
        s != stuck.end() && s->second == e.record.revision;
    const absl::StatusOr<absl::Time> through = Fire(e, now, without_jobs);
    if (absl::IsAlreadyExists(through.status()) ||
        absl::IsNotFound(through.status())) {
      refused.emplace_back(e.record.name, e.record.revision);
      continue;
    }
    if (!through.ok()) on_error_("schedule", through.status());
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(e.record.name);
    if (it == entries_.end() ||
        it->second.record.revision != e.record.revision) {
      continue;  // read again meanwhile
    }
    if (!through.ok()) {
      it->second.retry_at = now + kRetryAfter;
      continue;
    }
    // As the store now holds it.
    ScheduleRecord record = std::move(it->second.record);
    record.done_through = *through;
    ++record.revision;
    it->second = MakeEntry(std::move(record));
  }
  absl::MutexLock lock(&mu_);
  UpdateEarliestLocked();
  return refused;
}

absl::StatusOr<absl::Time> ScheduleRunner::Fire(const Entry& e, absl::Time now,
                                                bool without_jobs) {
  const ScheduleRecord& s = e.record;
  const OccurrencePlan plan =
      PlanOccurrences(*e.spec, e.tz, s.done_through, now, s.options.missed);
  // Due by the copy but not by the plan (cannot happen: `next` is the first
  // occurrence after done_through): a refusal makes the caller read again.
  if (plan.through == absl::InfinitePast()) {
    return internal::ScheduleMoved(s.name);
  }
  std::vector<NewJob> jobs;
  if (!without_jobs) {
    for (absl::Time at : plan.run) jobs.push_back(OccurrenceJob(s, at));
  }
  if (absl::Status st =
          backend_.FireSchedule(s.name, s.revision, plan.through, jobs, now);
      !st.ok()) {
    return st;
  }
  if (!jobs.empty()) on_enqueued_(jobs, now);
  return plan.through;
}

}  // namespace internal
}  // namespace delayq
