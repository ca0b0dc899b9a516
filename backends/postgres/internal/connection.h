// Copyright delayq authors.
//
// connection.h — one libpq connection, as the PostgreSQL store uses it:
// statements with parameters (integers and text as text, payloads as
// binary bytea), results read by row and column, and every error turned
// into the status code the Backend contract gives it.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECTION_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECTION_H_

#include <postgresql/libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "backends/postgres/internal/socket_wait.h"

namespace delayq {
namespace postgres_internal {

// Times are stored as integer microseconds since the epoch; the infinite
// times as the ends of the int64 range.
int64_t ToMicros(absl::Time t);
absl::Time FromMicros(int64_t us);

// `text` as this store can keep it: bytes that are not UTF-8 replaced by
// U+FFFD, NUL bytes by U+FFFD too. For text kept to be read (a failure's
// error, an event's error or name), never for text that names something.
std::string TextForStore(absl::string_view text);

// The parameters of one statement, $1 first.
class Params {
 public:
  Params& Int(int64_t v);
  // Text must be UTF-8 without NUL bytes (what PostgreSQL's text keeps);
  // Exec() refuses a statement with any other (see TextForStore() for text
  // that is read, not matched).
  Params& Text(absl::string_view v);
  // A bytea, sent as binary: any bytes, NUL included.
  Params& Bytes(absl::string_view v);
  Params& Null();
  // Int(v), or Null() when there is none.
  Params& MaybeInt(std::optional<int64_t> v);
  // Arrays (text[], bytea[], bigint[] with NULLs), for statements that
  // take a batch in one round trip (unnest()).
  Params& TextArray(const std::vector<std::string>& v);
  Params& BytesArray(const std::vector<std::string>& v);
  Params& IntArray(const std::vector<std::optional<int64_t>>& v);

 private:
  friend class Connection;
  std::vector<std::string> values_;
  std::vector<int> formats_;
  std::vector<bool> null_;
  // Why Exec() refuses the statement: a Text() value it cannot send; empty
  // when none.
  std::string refusal_;
};

// The rows of one statement. Columns are read as text (their text form)
// and decoded here.
class Result {
 public:
  explicit Result(PGresult* r) : r_(r, &PQclear) {}

  // PGRES_FATAL_ERROR for a statement that could not be sent at all.
  ExecStatusType status() const {
    return r_ == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r_.get());
  }
  const PGresult* get() const { return r_.get(); }
  int rows() const { return PQntuples(r_.get()); }
  // The rows a command changed.
  int64_t Affected() const;
  bool IsNull(int row, int col) const {
    return PQgetisnull(r_.get(), row, col) != 0;
  }
  int64_t Int(int row, int col) const;
  std::string Text(int row, int col) const;
  bool Bool(int row, int col) const;
  // A bytea column, decoded from its hex text form.
  std::string Bytes(int row, int col) const;

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> r_;
};

// Connection
//
// A connection the store opened waits for each answer of the server (the
// connection's opening, a statement's result) at most `answer_timeout`:
// then it gives up on the connection (Broken(), not FoundClosed()), which is
// closed rather than used again, and the call fails Unavailable.
//
// Not thread-safe: one thread at a time (the pool hands it out so).
class Connection {
 public:
  // Opens a connection with `params` (libpq keyword and value). `where`
  // names the server in errors ("postgres host:port/db"); it holds no
  // password.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const std::vector<std::pair<std::string, std::string>>& params,
      std::string where, absl::Duration answer_timeout);

  // A connection the application owns (EnqueueInTransaction()): used,
  // never closed. It waits as the application's own calls on it do
  // (libpq's blocking calls, without a deadline of the store's): its
  // socket's mode, timeouts and any wait bounds are the application's.
  static std::unique_ptr<Connection> Borrow(PGconn* conn, std::string where);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql` with `params` and returns its rows (none for a command).
  // The first run of a text on a connection prepares it there; later runs
  // skip parsing and planning.
  absl::StatusOr<Result> Exec(absl::string_view sql,
                              const Params& params = Params());
  // Runs several statements without parameters (a migration, the end of
  // a transaction), with the simple query protocol.
  absl::Status RunScript(absl::string_view sql);

  // Begins a transaction with the next statement: BEGIN goes to the server
  // with it, in one round trip (libpq's pipeline mode), rather than in one
  // of its own.
  void BeginWithNext() {
    begin_pending_ = true;
    begin_confirmed_ = false;
  }
  // With the BEGIN of BeginWithNext(): the transaction's prepared
  // statements run on their generic plans, made once per connection, for
  // statements whose custom plan the server would otherwise make anew on
  // each call. A statement over unnest($1) of an array is one: its generic
  // plan guesses ten elements, and looks dearer than the custom plan of
  // one element, so a single add was planned every time.
  void PlanGenericallyWithNext() { generic_pending_ = true; }
  // Commits the transaction with the next statement: COMMIT goes to the
  // server right behind it, in the same round trip as the statement (and
  // its BEGIN, after BeginWithNext()). The statement's rows come back only
  // when both it and the COMMIT succeeded; a failed statement leaves the
  // transaction open and aborted, to be rolled back. `before_commit`,
  // statements without parameters, go between the two in the same round
  // trip.
  void CommitWithNext(std::vector<std::string> before_commit = {}) {
    commit_pending_ = true;
    before_commit_ = std::move(before_commit);
  }
  // Forgets a BeginWithNext() or CommitWithNext() that no statement
  // followed (the transaction's body failed first), so the connection's
  // next user does not begin or commit one unasked.
  void ForgetBegin() {
    begin_pending_ = false;
    generic_pending_ = false;
    commit_pending_ = false;
    before_commit_.clear();
  }
  // Whether the server confirmed the BEGIN of the transaction: until it
  // has, a lost connection did nothing in one.
  bool begin_confirmed() const { return begin_confirmed_; }
  // Exec() when the rows do not matter.
  absl::Status Run(absl::string_view sql, const Params& params = Params());

  // `text` as an SQL string literal, for a script (RunScript()).
  std::string Literal(absl::string_view text) const;

  // The SQLSTATE of the last statement that failed; empty when it failed
  // without one (a lost connection).
  const std::string& last_sql_state() const { return last_sql_state_; }

  // Whether the connection is lost, or given up on: it must not be used
  // again.
  bool Broken() const { return gave_up_ || PQstatus(conn_) != CONNECTION_OK; }
  // Whether it was found closed (by the server, or the network), rather
  // than given up on: a new connection may try again at once, whereas one
  // to a server that did not answer would most likely wait as long.
  bool FoundClosed() const {
    return !gave_up_ && PQstatus(conn_) != CONNECTION_OK;
  }
  // Whether a transaction is open (or failed and not yet rolled back).
  bool InTransaction() const;

  PGconn* raw() const { return conn_; }
  const std::string& where() const { return where_; }

  // Whether the store has warmed the connection up for its workers
  // (PostgresBackend::WarmUp()); a mark of the store's, kept here because
  // it lasts as long as the server's session.
  bool warm() const { return warm_; }
  void set_warm() { warm_ = true; }

 private:
  Connection(PGconn* conn, std::string where, bool owned,
             absl::Duration answer_timeout)
      : conn_(conn),
        where_(std::move(where)),
        owned_(owned),
        answer_timeout_(answer_timeout) {}

  absl::Status ErrorOf(const PGresult* r, absl::string_view sql) const;

  // The answer to what was just sent (`sent`: the PQsend* call's success):
  // its last result, or its first error. Null when nothing was sent, the
  // connection was lost, or no answer came within answer_timeout
  // (gave_up_).
  PGresult* Answer(bool sent);
  // The next result of what was sent, once it has arrived (PQgetResult()
  // without blocking past `deadline`); null at the end of the results, or
  // when the deadline passed (gave_up_).
  PGresult* NextResult(Deadline deadline);

  // The name `sql` is prepared under on this connection, preparing it
  // first if need be.
  absl::StatusOr<std::string> Prepared(const std::string& sql, int params);
  // The statements that open the transaction BeginWithNext() asked for
  // (BEGIN, and PlanGenericallyWithNext()'s setting); none when it did not.
  // Clears both requests.
  std::vector<const char*> TakeOpening();
  // The prepared statement `name`, after the statements `opening`
  // (TakeOpening()), then the statements `then`, then COMMIT when
  // `commit`, in one round trip.
  PGresult* ExecInPipeline(const std::string& name, int n,
                           const char* const* values, const int* lengths,
                           const int* formats,
                           const std::vector<const char*>& opening,
                           const std::vector<std::string>& then, bool commit);

  PGconn* conn_;
  const std::string where_;
  const bool owned_;
  const absl::Duration answer_timeout_;
  bool gave_up_ = false;
  bool warm_ = false;
  // Statements prepared on this connection, by text. A borrowed
  // connection prepares none: the names are the application's to choose.
  absl::flat_hash_map<std::string, std::string> prepared_;
  bool begin_pending_ = false;
  bool begin_confirmed_ = false;
  bool commit_pending_ = false;
  bool generic_pending_ = false;
  std::vector<std::string> before_commit_;
  mutable std::string last_sql_state_;
};

// The status a failed statement's SQLSTATE (or a connection's state, when
// there is none) stands for: unique violation -> AlreadyExists, serialisation
// failure and deadlock -> Aborted (the transaction may be run again), lost
// connection, server shutdown and a transaction that may not write
// (read_only_sql_transaction) -> Unavailable, statement timeout ->
// DeadlineExceeded, refused credentials -> PermissionDenied, missing
// database -> NotFound; anything else Internal.
absl::StatusCode CodeOfSqlState(absl::string_view sqlstate);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECTION_H_
