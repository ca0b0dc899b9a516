// Copyright delayq authors.
//
// db.h — a thin layer over the SQLite C API: one connection, prepared
// statements that live as long as it, and the mapping of SQLite result codes
// to absl::Status codes.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_DB_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {
namespace sqlite_internal {

// StatusFromSqlite()
//
// The absl::Status for SQLite result code `rc` (primary or extended), with a
// message naming `path`, what was being done and SQLite's own text:
//   BUSY, LOCKED, CANTOPEN, IOERR  -> Unavailable
//   FULL, NOMEM                    -> ResourceExhausted
//   CORRUPT, NOTADB                -> DataLoss
//   READONLY, PERM, AUTH           -> FailedPrecondition
//   CONSTRAINT                     -> AlreadyExists
//   anything else                  -> Internal
absl::Status StatusFromSqlite(int rc, absl::string_view detail,
                              absl::string_view path, absl::string_view what);

// Microseconds since the Unix epoch, saturating at the int64 range; and back
// (the extremes map to the infinite times).
int64_t ToMicros(absl::Time t);
absl::Time FromMicros(int64_t us);

class Connection;

// Statement
//
// A prepared statement owned by a Connection. Bind, Step until done, Reset.
// Parameters are 1-based, columns 0-based (as in SQLite).
class Statement {
 public:
  Statement(Connection* conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void BindInt64(int i, int64_t v);
  void BindText(int i, absl::string_view v);
  void BindBlob(int i, absl::string_view v);
  void BindNull(int i);

  // Step()
  //
  // true when a row is available, false when the statement is done.
  absl::StatusOr<bool> Step();

  // Run()
  //
  // Steps to the end, ignoring rows; returns the rows changed.
  absl::StatusOr<int> Run();

  bool IsNull(int col) const;
  int64_t Int64(int col) const;
  std::string Text(int col) const;

  // Reset()
  //
  // Ready for the next execution; clears bindings.
  void Reset();

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_;
};

// ScopedReset
//
// Resets a statement when it goes out of scope, so a statement is never left
// half-stepped (which would keep a read transaction open).
class ScopedReset {
 public:
  explicit ScopedReset(Statement* s) : s_(s) {}
  ~ScopedReset() { s_->Reset(); }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  Statement* s_;
};

// Connection
//
// One open sqlite3 handle. Not thread-safe: the caller serialises.
class Connection {
 public:
  // Open()
  //
  // Opens or creates `path` read-write. Refuses, without creating or
  // changing anything, an existing non-empty file that does not start with
  // the SQLite header (InvalidArgument).
  static absl::StatusOr<std::unique_ptr<Connection>> Open(
      const std::string& path, absl::Duration busy_timeout);

  // Borrow()
  //
  // The application's own open handle `db` on the file at `path`, used as
  // the application set it up (no busy handler of ours) and left open.
  static std::unique_ptr<Connection> Borrow(sqlite3* db, std::string path);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prepare()
  //
  // A statement kept for the connection's life.
  absl::StatusOr<std::unique_ptr<Statement>> Prepare(absl::string_view sql);

  // Exec()
  //
  // Runs one or more statements that take no parameters.
  absl::Status Exec(absl::string_view sql, absl::string_view what);

  // Error()
  //
  // The status for `rc` on this connection, while doing `what`.
  absl::Status Error(int rc, absl::string_view what) const;

  // Rollback()
  //
  // Ends the open transaction, if any, throwing its changes away.
  void Rollback();

  // InTransaction()
  //
  // Whether a transaction is open (SQLite ends one by itself on some errors).
  bool InTransaction() const { return !sqlite3_get_autocommit(db_); }

  int64_t Changes() const { return sqlite3_changes64(db_); }
  const std::string& path() const { return path_; }
  sqlite3* db() const { return db_; }

 private:
  Connection(sqlite3* db, std::string path, absl::Duration busy_timeout,
             bool owned = true)
      : db_(db),
        path_(std::move(path)),
        busy_timeout_(busy_timeout),
        owned_(owned) {}

  // SQLite's busy handler: while another process holds the write lock,
  // waits in short naps (20 µs doubling to 1 ms) until busy_timeout_ has
  // passed. SQLite's own busy_timeout naps up to 100 ms at a time, which
  // delays a waiting writer long after the lock is free.
  static int OnBusy(void* connection, int count);

  sqlite3* db_;
  std::string path_;
  const absl::Duration busy_timeout_;
  // Whether the handle is ours to close (not the application's).
  const bool owned_;
  // When the current wait for the lock began (steady clock, nanoseconds).
  int64_t busy_since_ns_ = 0;
};

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_DB_H_
