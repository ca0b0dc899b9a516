// Copyright delayq authors.
//
// The SQLite Backend's schedules: one row each in the schedules table
// (schema version 6). FireSchedule() checks the revision, inserts the jobs
// and moves done_through in one write transaction.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {
namespace {

int MissedKindToInt(MissedPolicy::Kind kind) {
  switch (kind) {
    case MissedPolicy::Kind::kSkip:
      return 0;
    case MissedPolicy::Kind::kOnce:
      return 1;
    case MissedPolicy::Kind::kAll:
      break;
  }
  return 2;
}

MissedPolicy::Kind MissedKindFromInt(int64_t kind) {
  if (kind == 1) return MissedPolicy::Kind::kOnce;
  if (kind == 2) return MissedPolicy::Kind::kAll;
  return MissedPolicy::Kind::kSkip;
}

void BindSchedule(Statement* put, const ScheduleRecord& s,
                  int64_t done_through_us, int64_t revision) {
  const JobOptions& job = s.options.job;
  put->BindText(1, s.name);
  put->BindText(2, s.spec);
  put->BindText(3, s.options.time_zone);
  put->BindText(4, s.topic);
  put->BindBlob(5, s.payload);
  put->BindInt64(6, job.priority);
  put->BindInt64(7, job.max_attempts);
  put->BindInt64(8, absl::ToInt64Microseconds(job.ttr));
  put->BindInt64(9, internal::BackoffCode(job.backoff));
  put->BindInt64(10, absl::ToInt64Microseconds(job.backoff.base));
  put->BindInt64(11, absl::ToInt64Microseconds(job.backoff.max));
  put->BindInt64(12, MissedKindToInt(s.options.missed.kind));
  put->BindInt64(13, s.options.missed.max);
  put->BindInt64(14, absl::ToInt64Microseconds(s.options.jitter));
  put->BindInt64(15, done_through_us);
  put->BindInt64(16, revision);
}

}  // namespace

ScheduleRecord ReadSchedule(const Statement& s) {
  ScheduleRecord out;
  out.name = s.Text(0);
  out.spec = s.Text(1);
  out.options.time_zone = s.Text(2);
  out.topic = s.Text(3);
  out.payload = s.Text(4);
  JobOptions& job = out.options.job;
  job.priority = static_cast<int>(s.Int64(5));
  job.max_attempts = static_cast<int>(s.Int64(6));
  job.ttr = absl::Microseconds(s.Int64(7));
  job.backoff =
      internal::BackoffFromCode(s.Int64(8), absl::Microseconds(s.Int64(9)),
                                absl::Microseconds(s.Int64(10)));
  out.options.missed.kind = MissedKindFromInt(s.Int64(11));
  out.options.missed.max = static_cast<int>(s.Int64(12));
  out.options.jitter = absl::Microseconds(s.Int64(13));
  out.done_through = FromMicros(s.Int64(14));
  out.revision = s.Int64(15);
  return out;
}

absl::Status SqliteBackend::PutSchedule(const ScheduleRecord& schedule,
                                        absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    int64_t done_through_us = ToMicros(now);
    int64_t revision = 1;
    {
      ScopedReset reset(s_.schedule_get.get());
      s_.schedule_get->BindText(1, schedule.name);
      DQ_ASSIGN_OR_RETURN(bool row, s_.schedule_get->Step());
      if (row) {
        const bool respecified =
            s_.schedule_get->Text(0) != schedule.spec ||
            s_.schedule_get->Text(1) != schedule.options.time_zone;
        if (!respecified) done_through_us = s_.schedule_get->Int64(2);
        revision = s_.schedule_get->Int64(3) + 1;
      }
    }
    ScopedReset reset(s_.schedule_put.get());
    BindSchedule(s_.schedule_put.get(), schedule, done_through_us, revision);
    DQ_RETURN_IF_ERROR(s_.schedule_put->Run().status());
    pending_.schedules.push_back(schedule.name);
    return absl::OkStatus();
  });
}

absl::Status SqliteBackend::RemoveSchedule(absl::string_view name,
                                           absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    ScopedReset reset(s_.schedule_remove.get());
    s_.schedule_remove->BindText(1, name);
    DQ_ASSIGN_OR_RETURN(int removed, s_.schedule_remove->Run());
    if (removed == 0) return internal::NoSuchSchedule(name);
    pending_.schedules.push_back(std::string(name));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<ScheduleRecord>> SqliteBackend::ListSchedules() {
  internal::MutexLock lock(&mu_);
  std::vector<ScheduleRecord> out;
  ScopedReset reset(s_.schedule_list.get());
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.schedule_list->Step());
    if (!row) break;
    out.push_back(ReadSchedule(*s_.schedule_list));
  }
  return out;
}

absl::Status SqliteBackend::FireSchedule(absl::string_view name,
                                         int64_t revision, absl::Time through,
                                         absl::Span<const NewJob> jobs,
                                         absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    {
      ScopedReset reset(s_.schedule_get.get());
      s_.schedule_get->BindText(1, name);
      DQ_ASSIGN_OR_RETURN(bool row, s_.schedule_get->Step());
      if (!row) return internal::NoSuchSchedule(name);
      if (s_.schedule_get->Int64(3) != revision) {
        return internal::ScheduleMoved(name);
      }
    }
    DQ_RETURN_IF_ERROR(InsertJobs(jobs, ToMicros(now)));
    ScopedReset reset(s_.schedule_fire.get());
    s_.schedule_fire->BindText(1, name);
    s_.schedule_fire->BindInt64(2, ToMicros(through));
    return s_.schedule_fire->Run().status();
  });
}

}  // namespace sqlite_internal
}  // namespace delayq
