// Copyright delayq authors.
//
// Jobs that wait for others, in the PostgreSQL store (schema.cc, versions
// 2 and 6): a row of `dependencies` per dependency still pending, settled in
// the transaction of the dependency's ack, death or departure; and rows of
// `job_after`, what the job named, kept for its life. The locks that
// make concurrent transactions settle each dependant exactly once are
// explained at the statements (statements.h).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/contract_errors.h"
#include "src/common/settled_list.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace postgres_internal {

absl::Status PostgresBackend::CheckDependencies(Tx& tx,
                                                absl::Span<const NewJob> jobs) {
  absl::flat_hash_set<absl::string_view> earlier;
  for (const NewJob& job : jobs) {
    for (const std::string& dependency : job.after) {
      if (earlier.contains(dependency)) continue;
      DQ_ASSIGN_OR_RETURN(Result r, tx.conn->Exec(S(Sql::kDependencyOf),
                                                  Params().Text(dependency)));
      if (r.rows() == 0) return internal::NoSuchDependency(job.id, dependency);
    }
    earlier.insert(job.id);
  }
  return absl::OkStatus();
}

absl::Status ReadAfter(Connection& conn, absl::string_view schema,
                       absl::Span<const AfterOf> jobs) {
  if (jobs.empty()) return absl::OkStatus();
  absl::flat_hash_map<std::string, const AfterOf*> by_id;
  std::vector<std::string> ids;
  for (const AfterOf& of : jobs) {
    by_id[of.job->id] = &of;
    ids.push_back(of.job->id);
  }
  DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(WithSchema(Sql::kAfterOf, schema),
                                          Params().TextArray(ids)));
  for (int i = 0; i < r.rows(); ++i) {
    const AfterOf& of = *by_id[r.Text(i, 0)];
    of.job->after.push_back(r.Text(i, 1));
    if (of.results != nullptr && !r.IsNull(i, 2) && r.Bool(i, 2)) {
      (*of.results)[of.job->after.back()] = r.IsNull(i, 3) ? "" : r.Bytes(i, 3);
    }
  }
  return absl::OkStatus();
}

absl::Status PostgresBackend::AwaitDependencies(Tx& tx, const NewJob& job) {
  // The list first: a job its policy deletes at once takes it along.
  DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kAfterAdd),
                                  Params().Text(job.id).TextArray(job.after)));
  bool waits = false;
  for (const std::string& dependency : job.after) {
    DQ_ASSIGN_OR_RETURN(Result r, tx.conn->Exec(S(Sql::kDependencyOf),
                                                Params().Text(dependency)));
    // None: an earlier job of the batch that went by its own policy.
    const int64_t state = r.rows() == 0 ? -1 : r.Int(0, 0);
    if (state == kStateDone) continue;
    if (state != -1 && state != kStateDead) {
      DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kDependOn),
                                      Params().Text(dependency).Text(job.id)));
      waits = true;
      continue;
    }
    if (job.on_dependency_failure == DependencyFailure::kRun) continue;
    if (job.on_dependency_failure == DependencyFailure::kCancel) {
      return DropWaiter(tx, job.id);
    }
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kForgetWaiter), Params().Text(job.id)));
    DQ_ASSIGN_OR_RETURN(Row row, LockJob(tx, job.id));
    return KillWaiter(tx, row.seq, job.topic,
                      state == kStateDead
                          ? internal::DependencyFailed(dependency)
                          : internal::DependencyCancelled(dependency));
  }
  if (!waits) return absl::OkStatus();
  return tx.conn->Run(S(Sql::kWait),
                      Params().Text(job.id).Int(
                          static_cast<int64_t>(job.on_dependency_failure)));
}

absl::Status PostgresBackend::SettleDependants(Tx& tx, absl::string_view id,
                                               DependencyOutcome outcome) {
  // A list of work rather than recursion: a long chain cannot exhaust the
  // stack.
  std::vector<std::pair<std::string, DependencyOutcome>> work;
  work.emplace_back(std::string(id), outcome);
  while (!work.empty()) {
    const auto [dependency, what] = std::move(work.back());
    work.pop_back();
    DQ_ASSIGN_OR_RETURN(
        Result waiters,
        tx.conn->Exec(S(Sql::kDependants), Params().Text(dependency)));
    for (int i = 0; i < waiters.rows(); ++i) {
      if (waiters.IsNull(i, 0)) {
        DQ_RETURN_IF_ERROR(FinishInBatch(tx, waiters.Text(i, 1), what));
        continue;
      }
      const std::string w = waiters.Text(i, 0);
      DQ_ASSIGN_OR_RETURN(Result waiter,
                          tx.conn->Exec(S(Sql::kLockWaiter), Params().Text(w)));
      if (waiter.rows() == 0) continue;
      const int64_t seq = waiter.Int(0, 0);
      const std::string topic = waiter.Text(0, 1);
      const int64_t run_at = waiter.Int(0, 2);
      const auto on_failure = static_cast<DependencyFailure>(waiter.Int(0, 3));
      if (what == DependencyOutcome::kMet ||
          on_failure == DependencyFailure::kRun) {
        DQ_ASSIGN_OR_RETURN(
            Result more, tx.conn->Exec(S(Sql::kStillWaits), Params().Text(w)));
        if (more.rows() > 0 && more.Bool(0, 0)) continue;
        DQ_RETURN_IF_ERROR(ReleaseWaiter(tx, w, seq, topic, run_at));
        continue;
      }
      if (on_failure == DependencyFailure::kCancel) {
        DQ_RETURN_IF_ERROR(DropWaiter(tx, w));
        internal::NoteSettled(&tx.settled, Settled::Kind::kCancelled, w, topic);
        work.emplace_back(w, DependencyOutcome::kGone);
        continue;
      }
      DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kForgetWaiter), Params().Text(w)));
      const std::string error = what == DependencyOutcome::kFailed
                                    ? internal::DependencyFailed(dependency)
                                    : internal::DependencyCancelled(dependency);
      DQ_RETURN_IF_ERROR(KillWaiter(tx, seq, topic, error));
      internal::NoteSettled(&tx.settled, Settled::Kind::kDead, w, topic, error);
      work.emplace_back(w, DependencyOutcome::kFailed);
    }
  }
  return absl::OkStatus();
}

absl::Status PostgresBackend::KillWaiter(Tx& tx, int64_t seq,
                                         absl::string_view topic,
                                         absl::string_view error) {
  NoteCount(tx, topic, internal::CountOfDependencyDeath());
  return tx.conn->Run(S(Sql::kMakeDead),
                      Params().Int(seq).Text(error).Int(tx.now_us));
}

absl::Status PostgresBackend::ReleaseWaiter(Tx& tx, absl::string_view id,
                                            int64_t seq,
                                            absl::string_view topic,
                                            int64_t run_at_us) {
  const bool ready = run_at_us <= tx.now_us;
  internal::NoteSettled(&tx.settled, internal::ReleasedAs(run_at_us, tx.now_us),
                        id, topic);
  DQ_ASSIGN_OR_RETURN(Result released,
                      tx.conn->Exec(S(Sql::kReleaseWaiter),
                                    Params().Int(seq).Int(
                                        ready ? kStateReady : kStateDelayed)));
  if (released.rows() > 0 && !released.IsNull(0, 0)) {
    NoteDue(tx, released.Int(0, 0));
  }
  if (ready) NoteMadeReady(tx, topic);
  return absl::OkStatus();
}

absl::Status PostgresBackend::DropWaiter(Tx& tx, absl::string_view id) {
  DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kForgetWaiter), Params().Text(id)));
  DQ_ASSIGN_OR_RETURN(Result r,
                      tx.conn->Exec(S(Sql::kCancel), Params().Text(id)));
  if (r.rows() == 0) return absl::OkStatus();
  return HoldId(tx, id, r.Int(0, 0));
}

}  // namespace postgres_internal
}  // namespace delayq
