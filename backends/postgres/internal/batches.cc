// Copyright delayq authors.
//
// Batches in the PostgreSQL store (schema.cc, versions 5 and 8): a row of
// `batches` per batch with its counts, a row of `batch_jobs` per unfinished
// job of one, counted in the transaction of the job's ack, death or
// departure, and deleted with the batch. Every step on a batch updates its row,
// which orders them (see the statements, statements.h): of the last finish and
// the close, or of two last finishes, running at once, exactly one sees the
// batch complete and releases the completion job.

#include <string>

#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/contract_errors.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {
namespace {

// Why no row of kBatchJoin: no batch `id`, or a closed one.
absl::Status RefusedBatch(const Result& found, absl::string_view id) {
  if (found.rows() == 0) return internal::NoSuchBatch(id);
  return internal::BatchClosed(id);
}

}  // namespace

absl::Status PostgresBackend::OpenBatch(const NewJob& completion,
                                        absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_RETURN_IF_ERROR(InsertJobs(tx, {&completion, 1}));
    // It waits, so the ready job InsertJobs() noted is none.
    if (ToMicros(completion.run_at) <= tx.now_us) {
      NoteMadeReady(tx, completion.topic, -1);
    }
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kWait),
                     Params()
                         .Text(completion.id)
                         .Int(static_cast<int64_t>(DependencyFailure::kFail))));
    return tx.conn->Run(S(Sql::kBatchOpen), Params().Text(completion.id));
  });
}

absl::Status PostgresBackend::CloseBatch(absl::string_view id, absl::Time now,
                                         std::vector<Settled>* settled) {
  return Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result closed,
                        tx.conn->Exec(S(Sql::kBatchClose), Params().Text(id)));
    if (closed.rows() > 0) {
      return closed.Bool(0, 0) ? ReleaseCompletion(tx, id) : absl::OkStatus();
    }
    DQ_ASSIGN_OR_RETURN(Result found,
                        tx.conn->Exec(S(Sql::kBatchGet), Params().Text(id)));
    return found.rows() > 0 ? absl::OkStatus() : internal::NoSuchBatch(id);
  });
}

absl::StatusOr<Batch> PostgresBackend::GetBatch(absl::string_view id) {
  Batch batch;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r,
                        conn.Exec(S(Sql::kBatchGet), Params().Text(id)));
    if (r.rows() == 0) return internal::NoSuchBatch(id);
    batch.id = std::string(id);
    batch.completion_id = batch.id;
    batch.closed = r.Bool(0, 0);
    batch.total = r.Int(0, 1);
    batch.done = r.Int(0, 2);
    batch.dead = r.Int(0, 3);
    batch.cancelled = r.Int(0, 4);
    return absl::OkStatus();
  }));
  return batch;
}

absl::Status PostgresBackend::JoinBatch(Tx& tx, const NewJob& job) {
  DQ_ASSIGN_OR_RETURN(
      Result joined,
      tx.conn->Exec(S(Sql::kBatchJoin), Params().Text(job.batch).Text(job.id)));
  if (joined.rows() > 0) return absl::OkStatus();
  DQ_ASSIGN_OR_RETURN(
      Result found, tx.conn->Exec(S(Sql::kBatchGet), Params().Text(job.batch)));
  return RefusedBatch(found, job.batch);
}

absl::Status PostgresBackend::FinishInBatch(Tx& tx, absl::string_view batch,
                                            DependencyOutcome outcome) {
  DQ_ASSIGN_OR_RETURN(
      Result counted,
      tx.conn->Exec(S(Sql::kBatchCount),
                    Params()
                        .Text(batch)
                        .Int(outcome == DependencyOutcome::kMet ? 1 : 0)
                        .Int(outcome == DependencyOutcome::kFailed ? 1 : 0)
                        .Int(outcome == DependencyOutcome::kGone ? 1 : 0)));
  // No row: the batch went with its completion job.
  if (counted.rows() == 0 || !counted.Bool(0, 0)) return absl::OkStatus();
  return ReleaseCompletion(tx, batch);
}

absl::Status PostgresBackend::ReleaseCompletion(Tx& tx, absl::string_view id) {
  DQ_ASSIGN_OR_RETURN(Result waiter,
                      tx.conn->Exec(S(Sql::kLockWaiter), Params().Text(id)));
  if (waiter.rows() == 0) return absl::OkStatus();
  return ReleaseWaiter(tx, id, waiter.Int(0, 0), waiter.Text(0, 1),
                       waiter.Int(0, 2));
}

}  // namespace postgres_internal
}  // namespace delayq
