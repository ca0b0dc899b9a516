// Copyright delayq authors.
//
// The PostgreSQL Backend's writes: each call one transaction on a
// connection of the pool (internal/transactions.cc). Reads in
// internal/reads.cc, schema in internal/schema.cc, SQL in
// internal/statements.h.

#include "delayq/postgres_backend.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connect_plan.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/insert_chunks.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/lease_token.h"
#include "src/common/limit_gate.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace postgres_internal {
namespace {

// "{1,2,3}": a bigint[] parameter.
std::string ArrayOf(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

// Elements [from, to) of `v`.
template <typename T>
std::vector<T> Slice(const std::vector<T>& v, size_t from, size_t to) {
  return std::vector<T>(v.begin() + from, v.begin() + to);
}

}  // namespace

absl::Status PostgresBackend::HoldId(Tx& tx, absl::string_view id,
                                     int64_t unique_for_us) {
  if (unique_for_us <= 0) return absl::OkStatus();
  return tx.conn->Run(S(Sql::kHold),
                      Params().Text(id).Int(tx.now_us + unique_for_us));
}

absl::StatusOr<PostgresBackend::Row> PostgresBackend::LockJob(
    Tx& tx, absl::string_view id) {
  DQ_ASSIGN_OR_RETURN(Result r,
                      tx.conn->Exec(S(Sql::kStateOf), Params().Text(id)));
  if (r.rows() == 0) return internal::NoSuchJob(id);
  return Row{r.Int(0, 0), r.Int(0, 1), r.Text(0, 2)};
}

absl::StatusOr<bool> PostgresBackend::MoveDue(Tx& tx, const Result& rows,
                                              int col, int limit,
                                              std::vector<Transition>* out) {
  // The statement moved them; here they are noted and reported.
  static constexpr Transition::Kind kKinds[] = {
      Transition::Kind::kPromoted, Transition::Kind::kDead,
      Transition::Kind::kExpired, Transition::Kind::kLapsed,
      Transition::Kind::kDiscarded};
  int64_t found = 0;
  std::vector<std::pair<std::string, DependencyOutcome>> settle;
  for (int i = 0; i < rows.rows(); ++i) {
    if (rows.IsNull(i, col)) continue;  // kMoveDueOfTopic's row of no job
    Transition t;
    t.id = rows.Text(i, col);
    t.topic = rows.Text(i, col + 1);
    t.attempts = static_cast<int>(rows.Int(i, col + 2));
    t.kind = kKinds[std::min<int64_t>(
        std::max<int64_t>(rows.Int(i, col + 3), 0), 4)];
    found = rows.Int(i, col + 4);
    if (t.kind == Transition::Kind::kPromoted ||
        t.kind == Transition::Kind::kExpired) {
      NoteMadeReady(tx, t.topic);
    }
    NoteCount(tx, t.topic, internal::CountOfMove(t.kind));
    if (t.kind == Transition::Kind::kDiscarded) {
      settle.emplace_back(t.id, DependencyOutcome::kGone);
    } else if (t.kind == Transition::Kind::kDead ||
               t.kind == Transition::Kind::kLapsed) {
      settle.emplace_back(t.id, DependencyOutcome::kFailed);
    }
    if (out != nullptr) out->push_back(std::move(t));
  }
  for (const auto& [id, outcome] : settle) {
    DQ_RETURN_IF_ERROR(SettleDependants(tx, id, outcome));
  }
  return found > limit;
}

absl::Status PostgresBackend::Add(absl::Span<const NewJob> jobs,
                                  absl::Time now) {
  return Transaction(now, [&](Tx& tx) {
    tx.conn->PlanGenericallyWithNext();
    tx.commit_with_last = true;
    return InsertJobs(tx, jobs);
  });
}

absl::Status PostgresBackend::InsertJobs(Tx& tx,
                                         absl::Span<const NewJob> jobs) {
  if (jobs.empty()) return absl::OkStatus();
  const bool any_waits =
      std::any_of(jobs.begin(), jobs.end(),
                  [](const NewJob& job) { return !job.after.empty(); });
  if (any_waits) DQ_RETURN_IF_ERROR(CheckDependencies(tx, jobs));
  std::vector<std::string> ids, topics, payloads;
  std::vector<std::optional<int64_t>> state, priority, max_attempts, ttr,
      backoff_kind, backoff_base, backoff_max, run_at, due, expire_at, discard,
      unique_for, keep_for, keep_at_most, after_count;
  for (const NewJob& job : jobs) {
    const int64_t run_us = ToMicros(job.run_at);
    const bool delayed = run_us > tx.now_us;
    const bool expires = job.expire_at != absl::InfiniteFuture();
    const int64_t expire_us = ToMicros(job.expire_at);
    // due_us as DQ_PG_WAITING_DUE() has it.
    std::optional<int64_t> due_us;
    if (delayed || expires) {
      due_us = delayed ? (expires ? std::min(run_us, expire_us) : run_us)
                       : expire_us;
      NoteDue(tx, *due_us);
    }
    if (!delayed) NoteMadeReady(tx, job.topic);
    JobCounts enqueued;
    enqueued.enqueued = 1;
    NoteCount(tx, job.topic, enqueued);
    const bool keeps = job.keep_for > absl::ZeroDuration();
    ids.push_back(job.id);
    topics.push_back(job.topic);
    payloads.push_back(job.payload);
    state.push_back(delayed ? kStateDelayed : kStateReady);
    priority.push_back(job.priority);
    max_attempts.push_back(job.max_attempts);
    ttr.push_back(absl::ToInt64Microseconds(job.ttr));
    backoff_kind.push_back(internal::BackoffCode(job.backoff));
    backoff_base.push_back(absl::ToInt64Microseconds(job.backoff.base));
    backoff_max.push_back(absl::ToInt64Microseconds(job.backoff.max));
    run_at.push_back(run_us);
    due.push_back(due_us);
    expire_at.push_back(expires ? std::optional<int64_t>(expire_us)
                                : std::nullopt);
    discard.push_back(job.discard_expired ? 1 : 0);
    unique_for.push_back(absl::ToInt64Microseconds(job.unique_for));
    keep_for.push_back(keeps ? absl::ToInt64Microseconds(job.keep_for) : 0);
    keep_at_most.push_back(keeps ? job.keep_at_most : 0);
    after_count.push_back(static_cast<int64_t>(job.after.size()));
  }
  // Which id is taken, live or held, or comes twice: the first in the
  // batch's order is named.
  DQ_ASSIGN_OR_RETURN(
      Result taken,
      tx.conn->Exec(S(Sql::kTakenIds), Params().TextArray(ids).Int(tx.now_us)));
  absl::flat_hash_set<std::string> unavailable;
  for (int i = 0; i < taken.rows(); ++i) unavailable.insert(taken.Text(i, 0));
  for (const std::string& id : ids) {
    if (!unavailable.insert(id).second) return internal::IdInUse(id);
  }
  std::vector<size_t> sizes;
  for (const NewJob& job : jobs) sizes.push_back(job.payload.size());
  // Nothing to do after the insert: COMMIT, and the counts and news before
  // it, go with the last part, in its round trip.
  const bool commit_with_insert =
      tx.commit_with_last && !any_waits &&
      std::none_of(jobs.begin(), jobs.end(),
                   [](const NewJob& job) { return !job.batch.empty(); });
  size_t from = 0;
  for (size_t to : InsertChunkEnds(sizes, kInsertHexBytes)) {
    auto part = [&](const auto& v) { return Slice(v, from, to); };
    if (commit_with_insert && to == jobs.size()) {
      DQ_ASSIGN_OR_RETURN(std::vector<std::string> tail, Tail(tx));
      tx.conn->CommitWithNext(std::move(tail));
      tx.committed = true;
    }
    absl::Status inserted =
        tx.conn->Run(S(Sql::kInsert), Params()
                                          .Int(tx.now_us)
                                          .TextArray(part(ids))
                                          .TextArray(part(topics))
                                          .BytesArray(part(payloads))
                                          .IntArray(part(state))
                                          .IntArray(part(priority))
                                          .IntArray(part(max_attempts))
                                          .IntArray(part(ttr))
                                          .IntArray(part(backoff_kind))
                                          .IntArray(part(backoff_base))
                                          .IntArray(part(backoff_max))
                                          .IntArray(part(run_at))
                                          .IntArray(part(due))
                                          .IntArray(part(expire_at))
                                          .IntArray(part(discard))
                                          .IntArray(part(unique_for))
                                          .IntArray(part(keep_for))
                                          .IntArray(part(keep_at_most))
                                          .IntArray(part(after_count)));
    if (absl::IsAlreadyExists(inserted)) {
      // Another transaction added one of the ids since the check: the
      // server's message names it.
      for (const std::string& id : ids) {
        if (absl::StrContains(inserted.message(),
                              absl::StrCat("(id)=(", id, ")"))) {
          return internal::IdInUse(id);
        }
      }
      return internal::IdInUse(ids[from]);
    }
    DQ_RETURN_IF_ERROR(inserted);
    from = to;
  }
  for (const NewJob& job : jobs) {
    if (!job.after.empty()) DQ_RETURN_IF_ERROR(AwaitDependencies(tx, job));
    if (!job.batch.empty()) DQ_RETURN_IF_ERROR(JoinBatch(tx, job));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Lease>> PostgresBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  reserving_.store(true, std::memory_order_relaxed);
  if (PlainPathsOpen(now)) {
    std::vector<Lease> leases;
    DQ_ASSIGN_OR_RETURN(bool plain,
                        ReservePlain(topic, max, now, report, &leases));
    if (plain) return leases;
  }
  return ReserveGeneral(topic, max, now, report);
}

absl::StatusOr<std::vector<Lease>> PostgresBackend::ReserveGeneral(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  std::vector<Lease> leases;
  std::vector<Transition> moved;
  absl::Time limited_until = absl::InfinitePast();
  std::vector<Settled>* settled =
      report == nullptr ? nullptr : &report->settled;
  DQ_RETURN_IF_ERROR(Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    leases.clear();
    moved.clear();
    limited_until = absl::InfinitePast();
    DQ_ASSIGN_OR_RETURN(
        Result due, tx.conn->Exec(S(Sql::kMoveDueOfTopic),
                                  MoveDueParams(Params().Text(topic), tx.now_us,
                                                kReservePromoteLimit)));
    DQ_RETURN_IF_ERROR(
        MoveDue(tx, due, /*col=*/6, kReservePromoteLimit, &moved).status());
    if (due.rows() == 0 || due.Bool(0, 0)) return absl::OkStatus();  // paused
    std::optional<Gate> gate;
    if (!due.IsNull(0, 1)) {
      gate.emplace();
      gate->limit.rate = due.Int(0, 1);
      gate->limit.period = absl::Microseconds(due.Int(0, 2));
      gate->limit.burst = due.Int(0, 3);
      gate->limit.concurrency = due.Int(0, 4);
      gate->tat_us = due.IsNull(0, 5) ? internal::kFreshBucket : due.Int(0, 5);
    }
    return ReserveReady(tx, topic, max, gate,
                        report == nullptr ? "" : report->holder, &leases,
                        &limited_until);
  }));
  if (report != nullptr) {
    for (Transition& t : moved) report->moved.push_back(std::move(t));
    report->limited_until = limited_until;
  }
  return leases;
}

absl::Status PostgresBackend::ReserveReady(Tx& tx, absl::string_view topic,
                                           int max,
                                           const std::optional<Gate>& limit,
                                           absl::string_view holder,
                                           std::vector<Lease>* leases,
                                           absl::Time* limited_until) {
  std::optional<internal::LimitGate> gate;
  int64_t allowed = max;
  if (limit.has_value()) {
    // The reserved jobs matter only to a concurrency cap, and only up to it.
    int64_t reserved = 0;
    if (limit->limit.concurrency > 0) {
      DQ_ASSIGN_OR_RETURN(reserved, CountUpTo(*tx.conn, topic, kStateReserved,
                                              limit->limit.concurrency));
    }
    gate.emplace(limit->limit, limit->tat_us, tx.now_us, reserved);
    allowed = gate->Allowed(max);
  }
  if (allowed > 0) {
    // Random, not a sequence: a token one could count to would let a
    // client end another's lease.
    const int64_t first_token =
        static_cast<int64_t>(internal::NewFirstLeaseToken());
    DQ_ASSIGN_OR_RETURN(Result rows,
                        tx.conn->Exec(S(Sql::kReserve), Params()
                                                            .Text(topic)
                                                            .Int(allowed)
                                                            .Int(tx.now_us)
                                                            .Int(first_token)
                                                            .Text(holder)));
    for (int i = 0; i < rows.rows(); ++i) {
      Lease lease;
      lease.job = ReadJob(rows, i, &lease.token);
      lease.deadline = lease.job.deadline;
      leases->push_back(std::move(lease));
    }
    // The tokens follow the ready order; RETURNING's order is the table's.
    std::sort(leases->begin(), leases->end(),
              [](const Lease& a, const Lease& b) { return a.token < b.token; });
    // What the jobs with dependencies wait for, and their results, in one
    // more statement; none for jobs without.
    absl::flat_hash_set<std::string> with_after;
    for (int i = 0; i < rows.rows(); ++i) {
      if (HasAfter(rows, i)) with_after.insert(rows.Text(i, 1));
    }
    std::vector<AfterOf> waits;
    for (Lease& lease : *leases) {
      if (with_after.contains(lease.job.id)) {
        waits.push_back({&lease.job, &lease.dependency_results});
      }
    }
    DQ_RETURN_IF_ERROR(ReadAfter(*tx.conn, schema_, waits));
    for (const Lease& lease : *leases) {
      NoteReserved(tx, lease);
      NoteCount(
          tx, topic,
          internal::CountOfDelivery(ToMicros(lease.job.run_at), tx.now_us));
    }
  }
  if (!gate.has_value()) return absl::OkStatus();
  const int64_t taken = static_cast<int64_t>(leases->size());
  if (taken > 0) {
    DQ_RETURN_IF_ERROR(tx.conn->Run(
        S(Sql::kLimitTat), Params().Text(topic).Int(gate->TatAfter(taken))));
  }
  if (taken < max) {
    DQ_ASSIGN_OR_RETURN(int64_t ready,
                        CountUpTo(*tx.conn, topic, kStateReady, 1));
    if (ready > 0) {
      const int64_t next = gate->NextAllowed(taken);
      *limited_until = next == internal::kUntilReleased ? absl::InfiniteFuture()
                                                        : FromMicros(next);
    }
  }
  return absl::OkStatus();
}

absl::Status PostgresBackend::NoteSlotFreed(Tx& tx, absl::string_view topic,
                                            std::optional<int64_t> cap) {
  if (!cap.has_value()) {
    DQ_ASSIGN_OR_RETURN(Result r,
                        tx.conn->Exec(S(Sql::kLimitGet), Params().Text(topic)));
    cap = r.rows() > 0 ? r.Int(0, 0) : 0;
  }
  if (*cap <= 0) return absl::OkStatus();
  // Only a cap that was full held workers back.
  DQ_ASSIGN_OR_RETURN(int64_t reserved,
                      CountUpTo(*tx.conn, topic, kStateReserved, *cap));
  if (reserved + 1 >= *cap) tx.news.look_again.push_back(std::string(topic));
  return absl::OkStatus();
}

absl::Status PostgresBackend::SetLimit(absl::string_view topic,
                                       const TopicLimit& limit,
                                       absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    tx.news.look_again.clear();
    DQ_RETURN_IF_ERROR(tx.conn->Run(
        S(Sql::kLimitSet), Params()
                               .Text(topic)
                               .Int(limit.rate)
                               .Int(absl::ToInt64Microseconds(limit.period))
                               .Int(limit.burst)
                               .Int(limit.concurrency)));
    // A looser limit may let waiting workers in.
    tx.news.look_again.push_back(std::string(topic));
    return absl::OkStatus();
  });
}

absl::Status PostgresBackend::ClearLimit(absl::string_view topic,
                                         absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result r, tx.conn->Exec(S(Sql::kLimitClear), Params().Text(topic)));
    if (r.Affected() > 0) tx.news.look_again.push_back(std::string(topic));
    return absl::OkStatus();
  });
}

absl::Status PostgresBackend::Ack(absl::string_view id, uint64_t token,
                                  absl::string_view result, absl::Time now,
                                  std::vector<Settled>* settled) {
  // A plain ack settles nothing: a job with dependants, a batch or a kept
  // result takes the general path.
  if (PlainPathsOpen(now)) {
    DQ_ASSIGN_OR_RETURN(bool plain, AckPlain(id, token, now));
    if (plain) return absl::OkStatus();
  }
  return Transaction(now, settled, [&](Tx& tx) {
    return AckInTransaction(tx, id, token, result);
  });
}

absl::StatusOr<std::vector<absl::Status>> PostgresBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now,
    std::vector<Settled>* settled) {
  std::vector<absl::Status> out;
  if (leases.empty()) return out;
  DQ_RETURN_IF_ERROR(Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    out.clear();
    for (const Lease& l : leases) {
      // A stale lease's statements change nothing, so the transaction
      // goes on.
      absl::Status st = AckInTransaction(tx, l.job.id, l.token, "");
      if (!st.ok() && !absl::IsFailedPrecondition(st)) return st;
      out.push_back(std::move(st));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status PostgresBackend::AckInTransaction(Tx& tx, absl::string_view id,
                                               uint64_t token,
                                               absl::string_view result) {
  DQ_ASSIGN_OR_RETURN(
      Result acked,
      tx.conn->Exec(
          S(Sql::kAck),
          Params().Text(id).Int(static_cast<int64_t>(token)).Int(tx.now_us)));
  int64_t unique_for_us = 0;
  std::string topic;
  if (acked.rows() > 0) {
    unique_for_us = acked.Int(0, 0);
    topic = acked.Text(0, 1);
    DQ_RETURN_IF_ERROR(
        NoteSlotFreed(tx, topic, acked.IsNull(0, 2) ? 0 : acked.Int(0, 2)));
  } else {
    bool kept = false;
    DQ_RETURN_IF_ERROR(
        KeepDone(tx, id, token, result, &kept, &topic, &unique_for_us));
    if (!kept) return internal::StaleLease(id);
    DQ_RETURN_IF_ERROR(NoteSlotFreed(tx, topic));
  }
  JobCounts done;
  done.done = 1;
  NoteCount(tx, topic, done);
  DQ_RETURN_IF_ERROR(SettleDependants(tx, id, DependencyOutcome::kMet));
  return HoldId(tx, id, unique_for_us);
}

absl::Status PostgresBackend::KeepDone(Tx& tx, absl::string_view id,
                                       uint64_t token, absl::string_view result,
                                       bool* kept, std::string* topic,
                                       int64_t* unique_for_us) {
  DQ_ASSIGN_OR_RETURN(
      Result r,
      tx.conn->Exec(S(Sql::kKeep), Params()
                                       .Text(id)
                                       .Int(static_cast<int64_t>(token))
                                       .Bytes(result)
                                       .Int(tx.now_us)));
  *kept = r.rows() > 0;
  if (!*kept) return absl::OkStatus();
  *unique_for_us = r.Int(0, 0);
  *topic = r.Text(0, 1);
  const int64_t keep_at_most = r.Int(0, 2);
  // The kept job leaves after now: it stays.
  DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kDropLeftOfTopic),
                                  Params().Text(*topic).Int(tx.now_us)));
  return tx.conn->Run(S(Sql::kDropBeyond),
                      Params().Text(*topic).Int(keep_at_most));
}

absl::StatusOr<FailOutcome> PostgresBackend::Fail(
    absl::string_view id, uint64_t token, absl::string_view error,
    absl::Time retry_at, absl::Time now, std::vector<Settled>* settled) {
  FailOutcome outcome = FailOutcome::kRetry;
  DQ_RETURN_IF_ERROR(Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result lease,
        tx.conn->Exec(S(Sql::kLease),
                      Params().Text(id).Int(static_cast<int64_t>(token))));
    if (lease.rows() == 0) return internal::StaleLease(id);
    const int64_t seq = lease.Int(0, 0);
    const std::string topic = lease.Text(0, 3);
    outcome = lease.Int(0, 1) >= lease.Int(0, 2) ? FailOutcome::kDead
                                                 : FailOutcome::kRetry;
    NoteCount(tx, topic, internal::CountOfFail(outcome));
    if (outcome == FailOutcome::kDead) {
      DQ_RETURN_IF_ERROR(tx.conn->Run(
          S(Sql::kMakeDead),
          Params().Int(seq).Text(TextForStore(error)).Int(tx.now_us)));
      DQ_RETURN_IF_ERROR(NoteSlotFreed(tx, topic));
      return SettleDependants(tx, id, DependencyOutcome::kFailed);
    }
    const bool ready = retry_at <= now;
    const int64_t retry_us = ToMicros(retry_at);
    if (ready) {
      NoteMadeReady(tx, topic);
    } else {
      NoteDue(tx, retry_us);
    }
    DQ_RETURN_IF_ERROR(tx.conn->Run(
        S(Sql::kRetry), Params()
                            .Int(seq)
                            .Int(ready ? kStateReady : kStateDelayed)
                            .Int(retry_us)
                            .Text(TextForStore(error))));
    return NoteSlotFreed(tx, topic);
  }));
  return outcome;
}

absl::Status PostgresBackend::Release(absl::string_view id, uint64_t token,
                                      absl::Time run_at, absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    const bool ready = run_at <= now;
    const int64_t run_us = ToMicros(run_at);
    DQ_ASSIGN_OR_RETURN(
        Result r, tx.conn->Exec(S(Sql::kRelease),
                                Params()
                                    .Text(id)
                                    .Int(static_cast<int64_t>(token))
                                    .Int(ready ? kStateReady : kStateDelayed)
                                    .Int(run_us)));
    if (r.rows() == 0) return internal::StaleLease(id);
    const std::string topic = r.Text(0, 0);
    DQ_RETURN_IF_ERROR(NoteSlotFreed(tx, topic));
    if (ready) {
      NoteMadeReady(tx, topic);
    } else {
      NoteDue(tx, run_us);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<absl::Time> PostgresBackend::Touch(absl::string_view id,
                                                  uint64_t token,
                                                  absl::Time now) {
  absl::Time deadline;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result r,
        tx.conn->Exec(
            S(Sql::kTouch),
            Params().Text(id).Int(static_cast<int64_t>(token)).Int(tx.now_us)));
    if (r.rows() == 0) return internal::StaleLease(id);
    deadline = FromMicros(r.Int(0, 0));
    NoteDue(tx, r.Int(0, 0));
    return absl::OkStatus();
  }));
  return deadline;
}

absl::Status PostgresBackend::Cancel(absl::string_view id, absl::Time now,
                                     std::vector<Settled>* settled) {
  return Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r,
                        tx.conn->Exec(S(Sql::kCancel), Params().Text(id)));
    if (r.rows() == 0) return internal::NoSuchJob(id);
    const std::string topic = r.Text(0, 1);
    if (r.Int(0, 2) == kStateReserved) {
      DQ_RETURN_IF_ERROR(NoteSlotFreed(tx, topic));
    }
    if (r.Int(0, 2) == kStateWaiting) {
      DQ_RETURN_IF_ERROR(
          tx.conn->Run(S(Sql::kForgetWaiter), Params().Text(id)));
    }
    DQ_RETURN_IF_ERROR(SettleDependants(tx, id, DependencyOutcome::kGone));
    return HoldId(tx, id, r.Int(0, 0));
  });
}

absl::Status PostgresBackend::PromoteJob(absl::string_view id, absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Row job, LockJob(tx, id));
    if (job.state != kStateDelayed) {
      return internal::NotDelayed(id, JobStateName(StateFromInt(job.state)));
    }
    NoteMadeReady(tx, job.topic);
    return tx.conn->Run(S(Sql::kPromoteJob),
                        Params().Int(job.seq).Int(tx.now_us));
  });
}

absl::StatusOr<int> PostgresBackend::PurgeDead(absl::string_view topic, int max,
                                               absl::Time now,
                                               std::vector<Settled>* settled) {
  int purged = 0;
  DQ_RETURN_IF_ERROR(Transaction(now, settled, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result dead, tx.conn->Exec(S(Sql::kDeadOfTopic),
                                   Params().Text(topic).Int(std::max(max, 1))));
    for (int i = 0; i < dead.rows(); ++i) {
      DQ_RETURN_IF_ERROR(
          tx.conn->Run(S(Sql::kDiscard), Params().Int(dead.Int(i, 0))));
      DQ_RETURN_IF_ERROR(HoldId(tx, dead.Text(i, 1), dead.Int(i, 2)));
      DQ_RETURN_IF_ERROR(
          SettleDependants(tx, dead.Text(i, 1), DependencyOutcome::kGone));
    }
    purged = dead.rows();
    return absl::OkStatus();
  }));
  return purged;
}

absl::Status PostgresBackend::SetPaused(absl::string_view topic, bool paused,
                                        absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r,
                        tx.conn->Exec(S(paused ? Sql::kPause : Sql::kResume),
                                      Params().Text(topic)));
    if (!paused && r.Affected() > 0) {
      tx.news.look_again.push_back(std::string(topic));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<int> PostgresBackend::Kick(absl::string_view topic, int max,
                                          absl::Time now) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> ids, KickIds(topic, max, now));
  return static_cast<int>(ids.size());
}

absl::StatusOr<std::vector<std::string>> PostgresBackend::KickIds(
    absl::string_view topic, int max, absl::Time now) {
  std::vector<std::string> ids;
  if (max <= 0) return ids;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result dead,
        tx.conn->Exec(S(Sql::kDeadOfTopic), Params().Text(topic).Int(max)));
    std::vector<int64_t> seqs;
    ids.clear();
    for (int i = 0; i < dead.rows(); ++i) {
      seqs.push_back(dead.Int(i, 0));
      ids.push_back(dead.Text(i, 1));
    }
    if (seqs.empty()) return absl::OkStatus();
    NoteMadeReady(tx, topic, static_cast<int>(seqs.size()));
    return tx.conn->Run(S(Sql::kKick),
                        Params().Text(ArrayOf(seqs)).Int(tx.now_us));
  }));
  return ids;
}

absl::Status PostgresBackend::KickJob(absl::string_view id, absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Row job, LockJob(tx, id));
    if (job.state != kStateDead) {
      return internal::NotDead(id, JobStateName(StateFromInt(job.state)));
    }
    NoteMadeReady(tx, job.topic);
    return tx.conn->Run(S(Sql::kKick),
                        Params().Text(ArrayOf({job.seq})).Int(tx.now_us));
  });
}

absl::Status PostgresBackend::Replace(const NewJob& job, absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Row row, LockJob(tx, job.id));
    if (row.state != kStateDelayed && row.state != kStateReady) {
      return internal::NotReplaceable(job.id,
                                      JobStateName(StateFromInt(row.state)));
    }
    if (row.topic != job.topic) return internal::OtherTopic(job.id, row.topic);
    const int64_t run_at = ToMicros(job.run_at);
    const bool ready = job.run_at <= now;
    if (ready && row.state != kStateReady) NoteMadeReady(tx, job.topic);
    if (!ready) NoteDue(tx, run_at);
    return tx.conn->Run(S(Sql::kReplace),
                        Params()
                            .Int(row.seq)
                            .Bytes(job.payload)
                            .Int(run_at)
                            .Int(ready ? kStateReady : kStateDelayed));
  });
}

Params& MoveDueParams(Params& params, int64_t now_us, int limit) {
  return params.Int(now_us)
      .Int(int64_t{limit} + 1)
      .Int(limit)
      .Text(internal::kLeaseExpired)
      .Text(internal::kJobExpired);
}

absl::StatusOr<PromoteResult> PostgresBackend::PromoteDue(absl::Time now,
                                                          int limit) {
  PromoteResult result;
  if (limit < 1) limit = 1;
  std::vector<Settled> settled;
  DQ_RETURN_IF_ERROR(Transaction(now, &settled, [&](Tx& tx) -> absl::Status {
    result = PromoteResult();
    tx.durable = false;
    // Done jobs whose time is up leave first.
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kDropLeft), Params().Int(tx.now_us)));
    // One row more than `limit` tells whether more remain.
    DQ_ASSIGN_OR_RETURN(
        Result due,
        tx.conn->Exec(S(Sql::kMoveDue),
                      MoveDueParams(Params().Null(), tx.now_us, limit)));
    DQ_ASSIGN_OR_RETURN(
        result.more, MoveDue(tx, due, /*col=*/0, limit, &result.transitions));
    return absl::OkStatus();
  }));
  result.settled = std::move(settled);
  return result;
}

absl::StatusOr<std::unique_ptr<Backend>> PostgresBackend::Open(
    const PostgresOptions& options) {
  DQ_ASSIGN_OR_RETURN(ConnectPlan plan, PlanConnections(options));
  auto pool =
      std::make_unique<Pool>(std::move(plan.params), plan.where,
                             plan.answer_timeout, options.max_idle_connections);
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, pool->Connect());
  DQ_RETURN_IF_ERROR(
      PrepareSchema(conn.get(), options.schema, options.create_schema));
  pool->Give(std::move(conn));
  return std::unique_ptr<Backend>(new PostgresBackend(
      std::move(pool), options.schema, options.counts, options.events));
}

}  // namespace postgres_internal

absl::StatusOr<std::unique_ptr<Backend>> OpenPostgresBackend(
    const PostgresOptions& options) {
  return postgres_internal::PostgresBackend::Open(options);
}

}  // namespace delayq
