// Copyright delayq authors.
//
// The PostgreSQL Backend's writes: each call one transaction on a
// connection of the pool. Reads in internal/reads.cc, schema in
// internal/schema.cc, SQL in internal/statements.h.

#include "delayq/postgres_backend.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connect_plan.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/news.h"
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

// How often a transaction that lost a deadlock or serialisation check runs
// again before its error goes to the caller.
constexpr int kTransactionAttempts = 5;

// "{1,2,3}": a bigint[] parameter.
std::string ArrayOf(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

// Gives a connection back to the pool when it goes out of scope.
class Borrowed {
 public:
  Borrowed(Pool* pool, std::unique_ptr<Connection> conn)
      : pool_(pool), conn_(std::move(conn)) {}
  ~Borrowed() { pool_->Give(std::move(conn_)); }
  Connection* get() const { return conn_.get(); }
  // Drops the connection instead of giving it back.
  void Discard() { conn_.reset(); }

 private:
  Pool* pool_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace

std::string PostgresBackend::S(const char* sql) const {
  return WithSchema(sql, schema_);
}

absl::Status PostgresBackend::Transaction(
    absl::Time now, absl::FunctionRef<absl::Status(Tx&)> body) {
  bool replaced = false;
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> taken,
                        pool_->Take(&reused));
    Borrowed conn(pool_.get(), std::move(taken));
    absl::Status status = conn.get()->Run("BEGIN");
    if (!status.ok()) {
      // An idle connection the server closed (it restarted): nothing was
      // done on it, so a new one may try.
      if (reused && conn.get()->Broken() && !replaced) {
        replaced = true;
        conn.Discard();
        --attempt;
        continue;
      }
      return status;
    }
    Tx tx;
    tx.conn = conn.get();
    tx.now_us = ToMicros(now);
    status = body(tx);
    if (status.ok()) status = Finish(tx);
    if (status.ok()) return status;
    if (conn.get()->InTransaction() && !conn.get()->Broken()) {
      conn.get()->Run("ROLLBACK").IgnoreError();
    }
    if (!absl::IsAborted(status) || attempt + 1 >= kTransactionAttempts) {
      return status;
    }
  }
}

absl::Status PostgresBackend::Read(
    absl::FunctionRef<absl::Status(Connection&)> body) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> taken,
                        pool_->Take(&reused));
    Borrowed conn(pool_.get(), std::move(taken));
    absl::Status status = body(*conn.get());
    if (status.ok() || !reused || !conn.get()->Broken() || attempt > 0) {
      return status;
    }
    conn.Discard();
  }
}

absl::Status PostgresBackend::Finish(Tx& tx) {
  DQ_RETURN_IF_ERROR(Announce(tx));
  return tx.conn->Run("COMMIT");
}

absl::Status PostgresBackend::Announce(Tx& tx) {
  DQ_RETURN_IF_ERROR(WriteCounts(tx));
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> news, CollectNews(tx));
  // NOTIFY is delivered when the transaction commits, and only then: a
  // subscriber that hears the news and reads the store sees the change.
  for (const std::string& payload : JoinNews(news)) {
    DQ_RETURN_IF_ERROR(tx.conn->Run(
        Sql::kNotify, Params().Text(NewsChannel(schema_)).Text(payload)));
  }
  return absl::OkStatus();
}

void PostgresBackend::NoteMadeReady(Tx& tx, absl::string_view topic,
                                    int64_t n) {
  tx.news.ready_delta[std::string(topic)] += n;
}

void PostgresBackend::NoteReserved(Tx& tx, const Lease& lease) {
  // Only topics the transaction made ready are of interest.
  auto it = tx.news.ready_delta.find(lease.job.topic);
  if (it != tx.news.ready_delta.end()) --it->second;
  NoteDue(tx, ToMicros(lease.deadline));
}

void PostgresBackend::NoteDue(Tx& tx, int64_t at_us) {
  if (!tx.news.earliest_due_us || at_us < *tx.news.earliest_due_us) {
    tx.news.earliest_due_us = at_us;
  }
}

absl::StatusOr<std::vector<std::string>> PostgresBackend::CollectNews(Tx& tx) {
  std::vector<std::string> news;
  for (const auto& [topic, delta] : tx.news.ready_delta) {
    if (delta <= 0) continue;  // cannot have been empty and now have jobs
    // Ready jobs all of them the transaction's own: the set was empty.
    DQ_ASSIGN_OR_RETURN(int64_t ready,
                        CountUpTo(*tx.conn, topic, kStateReady, delta + 1));
    if (ready == delta) news.push_back(ReadyMessage(topic));
  }
  for (const std::string& topic : tx.news.look_again) {
    DQ_ASSIGN_OR_RETURN(int64_t ready,
                        CountUpTo(*tx.conn, topic, kStateReady, 1));
    if (ready > 0) news.push_back(ReadyMessage(topic));
  }
  if (tx.news.earliest_due_us) {
    const int64_t at = *tx.news.earliest_due_us;
    DQ_ASSIGN_OR_RETURN(Result horizon, tx.conn->Exec(S(Sql::kHorizonGet)));
    const bool known = horizon.rows() == 1 && !horizon.IsNull(0, 0);
    const int64_t h = known ? horizon.Int(0, 0) : 0;
    // While the horizon lies ahead, every subscriber wakes by then anyway.
    if (!known || at < h || h <= tx.now_us) {
      DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kHorizonSet), Params().Int(at)));
      news.push_back(DueMessage(at));
    }
  }
  for (const std::string& name : tx.news.schedules) {
    news.push_back(SchedulesMessage(name));
  }
  return news;
}

absl::StatusOr<int64_t> PostgresBackend::CountUpTo(Connection& conn,
                                                   absl::string_view topic,
                                                   int state, int64_t bound) {
  DQ_ASSIGN_OR_RETURN(Result r,
                      conn.Exec(S(Sql::kCountUpTo),
                                Params().Text(topic).Int(state).Int(bound)));
  return r.Int(0, 0);
}

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
                                              int limit,
                                              std::vector<Transition>* out) {
  const int n = std::min(rows.rows(), limit);
  std::vector<int64_t> ready;
  for (int i = 0; i < n; ++i) {
    const int64_t seq = rows.Int(i, 0);
    Transition t;
    t.id = rows.Text(i, 1);
    t.topic = rows.Text(i, 2);
    const int64_t state = rows.Int(i, 3);
    t.attempts = static_cast<int>(rows.Int(i, 4));
    const int64_t max_attempts = rows.Int(i, 5);
    const bool lapses = !rows.IsNull(i, 6) && rows.Int(i, 6) <= tx.now_us;
    if (state == kStateReserved && t.attempts >= max_attempts) {
      t.kind = Transition::Kind::kDead;
    } else if (lapses) {
      t.kind = rows.Int(i, 7) != 0 ? Transition::Kind::kDiscarded
                                   : Transition::Kind::kLapsed;
    } else if (state == kStateDelayed) {
      t.kind = Transition::Kind::kPromoted;
    } else {
      t.kind = Transition::Kind::kExpired;
    }
    if (t.kind == Transition::Kind::kDiscarded) {
      DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kDiscard), Params().Int(seq)));
      DQ_RETURN_IF_ERROR(HoldId(tx, t.id, rows.Int(i, 8)));
    } else if (t.kind == Transition::Kind::kDead ||
               t.kind == Transition::Kind::kLapsed) {
      DQ_RETURN_IF_ERROR(tx.conn->Run(
          S(Sql::kMakeDead),
          Params()
              .Int(seq)
              .Text(t.kind == Transition::Kind::kDead ? internal::kLeaseExpired
                                                      : internal::kJobExpired)
              .Int(tx.now_us)));
    } else {
      ready.push_back(seq);
      NoteMadeReady(tx, t.topic);
    }
    NoteCount(tx, t.topic, internal::CountOfMove(t.kind));
    if (out != nullptr) out->push_back(std::move(t));
  }
  if (!ready.empty()) {
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kMakeReady), Params().Text(ArrayOf(ready))));
  }
  return rows.rows() > limit;
}

absl::Status PostgresBackend::Add(absl::Span<const NewJob> jobs,
                                  absl::Time now) {
  return Transaction(now, [&](Tx& tx) { return InsertJobs(tx, jobs); });
}

absl::Status PostgresBackend::InsertJobs(Tx& tx,
                                         absl::Span<const NewJob> jobs) {
  DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kDropHolds), Params().Int(tx.now_us)));
  const std::string insert = S(Sql::kInsert);
  const std::string is_held = S(Sql::kIsHeld);
  for (const NewJob& job : jobs) {
    DQ_ASSIGN_OR_RETURN(
        Result held,
        tx.conn->Exec(is_held, Params().Text(job.id).Int(tx.now_us)));
    if (held.rows() > 0) return internal::IdInUse(job.id);
    const int64_t run_at = ToMicros(job.run_at);
    const bool delayed = run_at > tx.now_us;
    const bool expires = job.expire_at != absl::InfiniteFuture();
    const int64_t expire_at = ToMicros(job.expire_at);
    // due_us as DQ_PG_WAITING_DUE() has it.
    std::optional<int64_t> due;
    if (delayed || expires) {
      due = delayed ? (expires ? std::min(run_at, expire_at) : run_at)
                    : expire_at;
      NoteDue(tx, *due);
    }
    if (!delayed) NoteMadeReady(tx, job.topic);
    JobCounts enqueued;
    enqueued.enqueued = 1;
    NoteCount(tx, job.topic, enqueued);
    const bool keeps = job.keep_for > absl::ZeroDuration();
    Params p;
    p.Text(job.id)
        .Text(job.topic)
        .Bytes(job.payload)
        .Int(delayed ? kStateDelayed : kStateReady)
        .Int(job.priority)
        .Int(job.max_attempts)
        .Int(absl::ToInt64Microseconds(job.ttr))
        .Int(internal::BackoffCode(job.backoff))
        .Int(absl::ToInt64Microseconds(job.backoff.base))
        .Int(absl::ToInt64Microseconds(job.backoff.max))
        .Int(tx.now_us)
        .Int(run_at)
        .MaybeInt(due)
        .MaybeInt(expires ? std::optional<int64_t>(expire_at) : std::nullopt)
        .Int(job.discard_expired ? 1 : 0)
        .Int(absl::ToInt64Microseconds(job.unique_for))
        .Int(keeps ? absl::ToInt64Microseconds(job.keep_for) : 0)
        .Int(keeps ? job.keep_at_most : 0);
    absl::Status inserted = tx.conn->Run(insert, p);
    if (absl::IsAlreadyExists(inserted)) return internal::IdInUse(job.id);
    DQ_RETURN_IF_ERROR(inserted);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Lease>> PostgresBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  std::vector<Lease> leases;
  std::vector<Transition> moved;
  absl::Time limited_until = absl::InfinitePast();
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    leases.clear();
    moved.clear();
    limited_until = absl::InfinitePast();
    DQ_ASSIGN_OR_RETURN(Result due,
                        tx.conn->Exec(S(Sql::kTopicDue),
                                      Params().Text(topic).Int(tx.now_us).Int(
                                          kReservePromoteLimit + 1)));
    DQ_RETURN_IF_ERROR(MoveDue(tx, due, kReservePromoteLimit, &moved).status());
    DQ_ASSIGN_OR_RETURN(Result paused,
                        tx.conn->Exec(S(Sql::kIsPaused), Params().Text(topic)));
    if (paused.rows() > 0) return absl::OkStatus();
    return ReserveReady(tx, topic, max, &leases, &limited_until);
  }));
  if (report != nullptr) {
    for (Transition& t : moved) report->moved.push_back(std::move(t));
    report->limited_until = limited_until;
  }
  return leases;
}

absl::Status PostgresBackend::ReserveReady(Tx& tx, absl::string_view topic,
                                           int max, std::vector<Lease>* leases,
                                           absl::Time* limited_until) {
  DQ_ASSIGN_OR_RETURN(Result limit_row,
                      tx.conn->Exec(S(Sql::kLimitLock), Params().Text(topic)));
  std::optional<internal::LimitGate> gate;
  int64_t allowed = max;
  if (limit_row.rows() > 0) {
    TopicLimit limit;
    limit.rate = limit_row.Int(0, 0);
    limit.period = absl::Microseconds(limit_row.Int(0, 1));
    limit.burst = limit_row.Int(0, 2);
    limit.concurrency = limit_row.Int(0, 3);
    const int64_t tat_us =
        limit_row.IsNull(0, 4) ? internal::kFreshBucket : limit_row.Int(0, 4);
    // The reserved jobs matter only to a concurrency cap, and only up to it.
    int64_t reserved = 0;
    if (limit.concurrency > 0) {
      DQ_ASSIGN_OR_RETURN(reserved, CountUpTo(*tx.conn, topic, kStateReserved,
                                              limit.concurrency));
    }
    gate.emplace(limit, tat_us, tx.now_us, reserved);
    allowed = gate->Allowed(max);
  }
  if (allowed > 0) {
    // Random, not a sequence: a token one could count to would let a
    // client end another's lease.
    const int64_t first_token =
        static_cast<int64_t>(internal::NewFirstLeaseToken());
    DQ_ASSIGN_OR_RETURN(
        Result rows,
        tx.conn->Exec(
            S(Sql::kReserve),
            Params().Text(topic).Int(allowed).Int(tx.now_us).Int(first_token)));
    for (int i = 0; i < rows.rows(); ++i) {
      Lease lease;
      lease.job = ReadJob(rows, i, &lease.token);
      lease.deadline = lease.job.deadline;
      leases->push_back(std::move(lease));
    }
    // The tokens follow the ready order; RETURNING's order is the table's.
    std::sort(leases->begin(), leases->end(),
              [](const Lease& a, const Lease& b) { return a.token < b.token; });
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
                                  absl::string_view result, absl::Time now) {
  return Transaction(
      now, [&](Tx& tx) { return AckInTransaction(tx, id, token, result); });
}

absl::StatusOr<std::vector<absl::Status>> PostgresBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now) {
  std::vector<absl::Status> out;
  if (leases.empty()) return out;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
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

absl::StatusOr<FailOutcome> PostgresBackend::Fail(absl::string_view id,
                                                  uint64_t token,
                                                  absl::string_view error,
                                                  absl::Time retry_at,
                                                  absl::Time now) {
  FailOutcome outcome = FailOutcome::kRetry;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
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
          S(Sql::kMakeDead), Params().Int(seq).Text(error).Int(tx.now_us)));
      return NoteSlotFreed(tx, topic);
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
                            .Text(error)));
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

absl::Status PostgresBackend::Cancel(absl::string_view id, absl::Time now) {
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r,
                        tx.conn->Exec(S(Sql::kCancel), Params().Text(id)));
    if (r.rows() == 0) return internal::NoSuchJob(id);
    const std::string topic = r.Text(0, 1);
    if (r.Int(0, 2) == kStateReserved) {
      DQ_RETURN_IF_ERROR(NoteSlotFreed(tx, topic));
    }
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
                                               absl::Time now) {
  int purged = 0;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result dead, tx.conn->Exec(S(Sql::kDeadOfTopic),
                                   Params().Text(topic).Int(std::max(max, 1))));
    for (int i = 0; i < dead.rows(); ++i) {
      DQ_RETURN_IF_ERROR(
          tx.conn->Run(S(Sql::kDiscard), Params().Int(dead.Int(i, 0))));
      DQ_RETURN_IF_ERROR(HoldId(tx, dead.Text(i, 1), dead.Int(i, 2)));
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
  int moved = 0;
  if (max <= 0) return moved;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result dead,
        tx.conn->Exec(S(Sql::kDeadOfTopic), Params().Text(topic).Int(max)));
    std::vector<int64_t> seqs;
    for (int i = 0; i < dead.rows(); ++i) seqs.push_back(dead.Int(i, 0));
    moved = static_cast<int>(seqs.size());
    if (moved == 0) return absl::OkStatus();
    NoteMadeReady(tx, topic, moved);
    return tx.conn->Run(S(Sql::kKick),
                        Params().Text(ArrayOf(seqs)).Int(tx.now_us));
  }));
  return moved;
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

absl::StatusOr<PromoteResult> PostgresBackend::PromoteDue(absl::Time now,
                                                          int limit) {
  PromoteResult result;
  if (limit < 1) limit = 1;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    result = PromoteResult();
    // Done jobs whose time is up leave first.
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kDropLeft), Params().Int(tx.now_us)));
    // One row more than `limit` tells whether more remain.
    DQ_ASSIGN_OR_RETURN(
        Result due, tx.conn->Exec(S(Sql::kAllDue), Params().Int(tx.now_us).Int(
                                                       int64_t{limit} + 1)));
    DQ_ASSIGN_OR_RETURN(result.more,
                        MoveDue(tx, due, limit, &result.transitions));
    return absl::OkStatus();
  }));
  return result;
}

absl::Status PostgresBackend::AddWithin(Connection* conn,
                                        absl::string_view schema,
                                        absl::Span<const NewJob> jobs,
                                        absl::Time now) {
  // The statements of a store, without its pool.
  PostgresBackend store(nullptr, std::string(schema), CountsOptions());
  DQ_RETURN_IF_ERROR(conn->Run("SAVEPOINT delayq_enqueue"));
  Tx tx;
  tx.conn = conn;
  tx.now_us = ToMicros(now);
  absl::Status status = store.InsertJobs(tx, jobs);
  if (status.ok()) status = store.Announce(tx);
  if (!status.ok()) {
    conn->Run("ROLLBACK TO SAVEPOINT delayq_enqueue").IgnoreError();
  }
  conn->Run("RELEASE SAVEPOINT delayq_enqueue").IgnoreError();
  return status;
}

absl::StatusOr<std::unique_ptr<Backend>> PostgresBackend::Open(
    const PostgresOptions& options) {
  DQ_ASSIGN_OR_RETURN(ConnectPlan plan, PlanConnections(options));
  auto pool = std::make_unique<Pool>(std::move(plan.params), plan.where,
                                     options.max_idle_connections);
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, pool->Connect());
  DQ_RETURN_IF_ERROR(PrepareSchema(conn.get(), options.schema));
  pool->Give(std::move(conn));
  return std::unique_ptr<Backend>(
      new PostgresBackend(std::move(pool), options.schema, options.counts));
}

}  // namespace postgres_internal

absl::StatusOr<std::unique_ptr<Backend>> OpenPostgresBackend(
    const PostgresOptions& options) {
  return postgres_internal::PostgresBackend::Open(options);
}

}  // namespace delayq
