// Copyright delayq authors.
//
// The PostgreSQL Backend's transactions: a call's one transaction on a
// connection of the pool (BEGIN with its first statement), and its end,
// the counts, the news and COMMIT in one round trip; the same end inside
// the application's own transaction (EnqueueInTransaction()).

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/news.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/settled_list.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {
namespace {

// How often a transaction that lost a deadlock or serialisation check runs
// again before its error goes to the caller.
constexpr int kTransactionAttempts = 5;

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
    absl::Time now, std::vector<Settled>* settled,
    absl::FunctionRef<absl::Status(Tx&)> body) {
  bool replaced = false;
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> taken,
                        pool_->Take(&reused));
    Borrowed conn(pool_.get(), std::move(taken));
    if (reserving_.load(std::memory_order_relaxed) && !conn.get()->warm()) {
      WarmUp(conn.get(), now);
    }
    // BEGIN goes with the body's first statement.
    conn.get()->BeginWithNext();
    Tx tx;
    tx.conn = conn.get();
    tx.now_us = ToMicros(now);
    absl::Status status = body(tx);
    if (status.ok()) status = Finish(tx);
    if (status.ok()) {
      internal::AppendSettled(std::move(tx.settled), settled);
      return status;
    }
    conn.get()->ForgetBegin();
    // An idle connection the server closed (it restarted): nothing was
    // done on it, so a new one may try, and not another idle one, which
    // the same restart most likely closed too.
    if (reused && conn.get()->FoundClosed() && !conn.get()->begin_confirmed() &&
        !replaced) {
      replaced = true;
      conn.Discard();
      pool_->DropIdle();
      --attempt;
      continue;
    }
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
    if (status.ok() || !reused || !conn.get()->FoundClosed() || attempt > 0) {
      return status;
    }
    conn.Discard();
    pool_->DropIdle();
  }
}

absl::Status PostgresBackend::Finish(Tx& tx) {
  if (tx.committed) return absl::OkStatus();
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> tail, Tail(tx));
  if (!tx.durable) tail.push_back("SET LOCAL synchronous_commit TO off");
  tail.push_back("COMMIT");
  return tx.conn->RunScript(absl::StrJoin(tail, ";\n"));
}

absl::Status PostgresBackend::Announce(Tx& tx) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> tail, Tail(tx));
  return tail.empty() ? absl::OkStatus()
                      : tx.conn->RunScript(absl::StrJoin(tail, ";\n"));
}

absl::StatusOr<std::vector<std::string>> PostgresBackend::Tail(Tx& tx) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> tail, CountsStatements(tx));
  for (std::string& news : NewsStatements(tx)) tail.push_back(std::move(news));
  return tail;
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

std::vector<std::string> PostgresBackend::NewsStatements(const Tx& tx) const {
  // Each NOTIFY is delivered when the transaction commits, and only then: a
  // subscriber that hears the news and reads the store sees the change.
  // Whether there is news is decided in the statements themselves, so the
  // news costs no round trip of its own.
  const std::string channel = tx.conn->Literal(NewsChannel(schema_));
  auto notify = [&](const std::string& message) {
    return absl::StrCat("SELECT pg_notify(", channel, ", ",
                        tx.conn->Literal(message), ")");
  };
  std::vector<std::string> statements;
  for (const auto& [topic, delta] : tx.news.ready_delta) {
    if (delta <= 0) continue;  // cannot have been empty and now have jobs
    // Ready jobs all of them the transaction's own: the set was empty.
    statements.push_back(
        absl::StrCat(notify(ReadyMessage(topic)),
                     " WHERE (SELECT count(*) FROM (SELECT 1 FROM ",
                     S("{s}.jobs"), " WHERE topic = ", tx.conn->Literal(topic),
                     " AND state = 1 LIMIT ", delta + 1, ") AS b) = ", delta));
  }
  for (const std::string& topic : tx.news.look_again) {
    statements.push_back(absl::StrCat(
        notify(ReadyMessage(topic)), " WHERE EXISTS (SELECT 1 FROM ",
        S("{s}.jobs"), " WHERE topic = ", tx.conn->Literal(topic),
        " AND state = 1)"));
  }
  if (tx.news.earliest_due_us && !tx.move_horizon) {
    // More news than needed, never less.
    statements.push_back(notify(DueMessage(*tx.news.earliest_due_us)));
  } else if (tx.news.earliest_due_us) {
    // Announced when earlier than the horizon (the latest announced), or
    // when the horizon has passed: while it lies ahead, every subscriber
    // wakes by then anyway. The horizon moves with the news.
    const int64_t at = *tx.news.earliest_due_us;
    statements.push_back(absl::StrCat(
        "WITH h AS (UPDATE ", S("{s}.news_horizon"), " SET at_us = ", at,
        " WHERE id = 1 AND (at_us IS NULL OR at_us > ", at,
        " OR at_us <= ", tx.now_us, ") RETURNING at_us) SELECT pg_notify(",
        channel, ", 'd' || at_us) FROM h"));
  }
  for (const std::string& name : tx.news.schedules) {
    statements.push_back(notify(SchedulesMessage(name)));
  }
  return statements;
}

absl::StatusOr<int64_t> PostgresBackend::CountUpTo(Connection& conn,
                                                   absl::string_view topic,
                                                   int state, int64_t bound) {
  // Each state is read through its own index (statements.h).
  const char* sql =
      state == kStateReserved ? Sql::kCountReservedUpTo : Sql::kCountReadyUpTo;
  DQ_ASSIGN_OR_RETURN(Result r,
                      conn.Exec(S(sql), Params().Text(topic).Int(bound)));
  return r.Int(0, 0);
}

absl::Status PostgresBackend::AddWithin(Connection* conn,
                                        absl::string_view schema,
                                        absl::Span<const NewJob> jobs,
                                        absl::Time now) {
  // The statements of a store, without its pool. It folds no counts: the
  // application's transaction may last, and should hold no lock but on
  // its own rows; the store's own calls fold.
  PostgresBackend store(nullptr, std::string(schema), CountsOptions(),
                        EventLogOptions());
  store.folded_at_minute_us_ = std::numeric_limits<int64_t>::max();
  DQ_RETURN_IF_ERROR(conn->Run("SAVEPOINT delayq_enqueue"));
  Tx tx;
  tx.conn = conn;
  tx.now_us = ToMicros(now);
  tx.move_horizon = false;
  absl::Status status = store.InsertJobs(tx, jobs);
  if (status.ok()) status = store.Announce(tx);
  if (!status.ok()) {
    conn->Run("ROLLBACK TO SAVEPOINT delayq_enqueue").IgnoreError();
  }
  conn->Run("RELEASE SAVEPOINT delayq_enqueue").IgnoreError();
  return status;
}

}  // namespace postgres_internal
}  // namespace delayq
