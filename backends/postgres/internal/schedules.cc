// Copyright delayq authors.
//
// The PostgreSQL Backend's schedules: one row each in the schedules table.
// FireSchedule() locks the row, checks the revision, inserts the jobs and
// moves done_through in one transaction.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {
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

Params ScheduleParams(const ScheduleRecord& s, int64_t done_through_us,
                      int64_t revision) {
  const JobOptions& job = s.options.job;
  Params p;
  p.Text(s.name)
      .Text(s.spec)
      .Text(s.options.time_zone)
      .Text(s.topic)
      .Bytes(s.payload)
      .Int(job.priority)
      .Int(job.max_attempts)
      .Int(absl::ToInt64Microseconds(job.ttr))
      .Int(internal::BackoffCode(job.backoff))
      .Int(absl::ToInt64Microseconds(job.backoff.base))
      .Int(absl::ToInt64Microseconds(job.backoff.max))
      .Int(MissedKindToInt(s.options.missed.kind))
      .Int(s.options.missed.max)
      .Int(absl::ToInt64Microseconds(s.options.jitter))
      .Int(done_through_us)
      .Int(revision);
  return p;
}

}  // namespace

ScheduleRecord ReadSchedule(const Result& r, int row) {
  ScheduleRecord out;
  out.name = r.Text(row, 0);
  out.spec = r.Text(row, 1);
  out.options.time_zone = r.Text(row, 2);
  out.topic = r.Text(row, 3);
  out.payload = r.Bytes(row, 4);
  JobOptions& job = out.options.job;
  job.priority = static_cast<int>(r.Int(row, 5));
  job.max_attempts = static_cast<int>(r.Int(row, 6));
  job.ttr = absl::Microseconds(r.Int(row, 7));
  job.backoff = internal::BackoffFromCode(r.Int(row, 8),
                                          absl::Microseconds(r.Int(row, 9)),
                                          absl::Microseconds(r.Int(row, 10)));
  out.options.missed.kind = MissedKindFromInt(r.Int(row, 11));
  out.options.missed.max = static_cast<int>(r.Int(row, 12));
  out.options.jitter = absl::Microseconds(r.Int(row, 13));
  out.done_through = FromMicros(r.Int(row, 14));
  out.revision = r.Int(row, 15);
  return out;
}

absl::Status PostgresBackend::PutSchedule(const ScheduleRecord& schedule,
                                          absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    int64_t done_through_us = tx.now_us;
    int64_t revision = 1;
    DQ_ASSIGN_OR_RETURN(
        Result old,
        tx.conn->Exec(S(Sql::kScheduleLock), Params().Text(schedule.name)));
    if (old.rows() > 0) {
      const bool respecified = old.Text(0, 0) != schedule.spec ||
                               old.Text(0, 1) != schedule.options.time_zone;
      if (!respecified) done_through_us = old.Int(0, 2);
      revision = old.Int(0, 3) + 1;
    }
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kSchedulePut),
                     ScheduleParams(schedule, done_through_us, revision)));
    tx.news.schedules.push_back(schedule.name);
    return absl::OkStatus();
  });
}

absl::Status PostgresBackend::RemoveSchedule(absl::string_view name,
                                             absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result r, tx.conn->Exec(S(Sql::kScheduleRemove), Params().Text(name)));
    if (r.Affected() == 0) return internal::NoSuchSchedule(name);
    tx.news.schedules.push_back(std::string(name));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<ScheduleRecord>> PostgresBackend::ListSchedules() {
  std::vector<ScheduleRecord> out;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kScheduleList)));
    out.clear();
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadSchedule(r, i));
    return absl::OkStatus();
  }));
  return out;
}

absl::Status PostgresBackend::FireSchedule(absl::string_view name,
                                           int64_t revision, absl::Time through,
                                           absl::Span<const NewJob> jobs,
                                           absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    // The lock makes processes firing the same schedule take turns: the
    // second finds the revision moved on.
    DQ_ASSIGN_OR_RETURN(
        Result row, tx.conn->Exec(S(Sql::kScheduleLock), Params().Text(name)));
    if (row.rows() == 0) return internal::NoSuchSchedule(name);
    if (row.Int(0, 3) != revision) return internal::ScheduleMoved(name);
    DQ_RETURN_IF_ERROR(InsertJobs(tx, jobs));
    return tx.conn->Run(S(Sql::kScheduleFire),
                        Params().Text(name).Int(ToMicros(through)));
  });
}

}  // namespace postgres_internal
}  // namespace delayq
