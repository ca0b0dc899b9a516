// Copyright delayq authors.
//
// Batches in the SQLite store (schema.cc, versions 15 and 18): a row of
// `batches` per batch with its counts, a row of `batch_jobs` per unfinished
// job of one, counted in the write transaction of the job's ack, death or
// departure, and deleted with the batch. One transaction writes at a time, so
// the step that completes a batch is the only one that sees it complete: the
// completion job is released once.

#include <string>

#include "absl/container/flat_hash_set.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/schema.h"
#include "src/common/contract_errors.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {

absl::Status SqliteBackend::OpenBatch(const NewJob& completion,
                                      absl::Time now) {
  return WriteTransaction(
      now, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        const int64_t now_us = ToMicros(now);
        DQ_RETURN_IF_ERROR(InsertJobs({&completion, 1}, now_us));
        // It waits, so the ready job InsertJobs() noted is none.
        if (ToMicros(completion.run_at) <= now_us) {
          NoteMadeReady(completion.topic, -1);
        }
        {
          ScopedReset reset(s_.wait.get());
          s_.wait->BindText(1, completion.id);
          s_.wait->BindInt64(2, static_cast<int64_t>(DependencyFailure::kFail));
          DQ_RETURN_IF_ERROR(s_.wait->Run().status());
        }
        ScopedReset reset(s_.batch_open.get());
        s_.batch_open->BindText(1, completion.id);
        return s_.batch_open->Run().status();
      });
}

absl::Status SqliteBackend::CloseBatch(absl::string_view id, absl::Time now,
                                       std::vector<Settled>* settled) {
  return WriteTransaction(
      now, settled, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        bool closed_now = false, complete = false;
        {
          ScopedReset reset(s_.batch_close.get());
          s_.batch_close->BindText(1, id);
          DQ_ASSIGN_OR_RETURN(closed_now, s_.batch_close->Step());
          if (closed_now) complete = s_.batch_close->Int64(0) != 0;
          DQ_RETURN_IF_ERROR(s_.batch_close->Run().status());
        }
        if (complete) return ReleaseCompletion(id, ToMicros(now));
        if (closed_now) return absl::OkStatus();
        ScopedReset reset(s_.batch_get.get());
        s_.batch_get->BindText(1, id);
        DQ_ASSIGN_OR_RETURN(bool known, s_.batch_get->Step());
        return known ? absl::OkStatus() : internal::NoSuchBatch(id);
      });
}

absl::StatusOr<Batch> SqliteBackend::GetBatch(absl::string_view id) {
  internal::MutexLock lock(&mu_);
  ScopedReset reset(s_.batch_get.get());
  s_.batch_get->BindText(1, id);
  DQ_ASSIGN_OR_RETURN(bool row, s_.batch_get->Step());
  if (!row) return internal::NoSuchBatch(id);
  Batch batch;
  batch.id = std::string(id);
  batch.completion_id = batch.id;
  batch.closed = s_.batch_get->Int64(0) != 0;
  batch.total = s_.batch_get->Int64(1);
  batch.done = s_.batch_get->Int64(2);
  batch.dead = s_.batch_get->Int64(3);
  batch.cancelled = s_.batch_get->Int64(4);
  return batch;
}

absl::Status SqliteBackend::CheckBatches(absl::Span<const NewJob> jobs) {
  absl::flat_hash_set<absl::string_view> checked;
  for (const NewJob& job : jobs) {
    if (job.batch.empty() || !checked.insert(job.batch).second) continue;
    ScopedReset reset(s_.batch_get.get());
    s_.batch_get->BindText(1, job.batch);
    DQ_ASSIGN_OR_RETURN(bool row, s_.batch_get->Step());
    if (!row) return internal::NoSuchBatch(job.batch);
    if (s_.batch_get->Int64(0) != 0) return internal::BatchClosed(job.batch);
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::JoinBatch(const NewJob& job) {
  // A dependency's failure may have sent it dead or away as it was added.
  int64_t state = -1;
  {
    ScopedReset reset(s_.state_of.get());
    s_.state_of->BindText(1, job.id);
    DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
    if (row) state = s_.state_of->Int64(1);
  }
  const bool dead = state == kStateDead, gone = state == -1;
  if (!dead && !gone) {
    ScopedReset reset(s_.batch_member.get());
    s_.batch_member->BindText(1, job.id);
    s_.batch_member->BindText(2, job.batch);
    DQ_RETURN_IF_ERROR(s_.batch_member->Run().status());
    // Its finish must now be settled (SettleDependants(), AnyJobWaits()).
    jobs_wait_ = true;
  }
  ScopedReset reset(s_.batch_join.get());
  s_.batch_join->BindText(1, job.batch);
  s_.batch_join->BindInt64(2, dead ? 1 : 0);
  s_.batch_join->BindInt64(3, gone ? 1 : 0);
  return s_.batch_join->Run().status();
}

absl::Status SqliteBackend::FinishInBatch(absl::string_view id,
                                          DependencyOutcome outcome,
                                          int64_t now_us) {
  std::string batch;
  {
    ScopedReset reset(s_.batch_leave.get());
    s_.batch_leave->BindText(1, id);
    DQ_ASSIGN_OR_RETURN(bool row, s_.batch_leave->Step());
    if (!row) return absl::OkStatus();
    batch = s_.batch_leave->Text(0);
    DQ_RETURN_IF_ERROR(s_.batch_leave->Run().status());
  }
  bool complete = false;
  {
    ScopedReset reset(s_.batch_count.get());
    s_.batch_count->BindText(1, batch);
    s_.batch_count->BindInt64(2, outcome == DependencyOutcome::kMet ? 1 : 0);
    s_.batch_count->BindInt64(3, outcome == DependencyOutcome::kFailed ? 1 : 0);
    s_.batch_count->BindInt64(4, outcome == DependencyOutcome::kGone ? 1 : 0);
    // No row: the batch was dropped with its completion job.
    DQ_ASSIGN_OR_RETURN(bool row, s_.batch_count->Step());
    complete = row && s_.batch_count->Int64(0) != 0;
    DQ_RETURN_IF_ERROR(s_.batch_count->Run().status());
  }
  return complete ? ReleaseCompletion(batch, now_us) : absl::OkStatus();
}

absl::Status SqliteBackend::ReleaseCompletion(absl::string_view id,
                                              int64_t now_us) {
  int64_t seq, run_at;
  std::string topic;
  {
    ScopedReset reset(s_.waiter.get());
    s_.waiter->BindText(1, id);
    DQ_ASSIGN_OR_RETURN(bool row, s_.waiter->Step());
    if (!row) return absl::OkStatus();
    seq = s_.waiter->Int64(0);
    topic = s_.waiter->Text(1);
    run_at = s_.waiter->Int64(2);
  }
  return ReleaseWaiter(id, seq, topic, run_at, now_us);
}

}  // namespace sqlite_internal
}  // namespace delayq
