// Copyright delayq authors.
//
// sqlite_transaction.h — jobs enqueued inside the application's own SQLite
// transaction, so that a job exists if and only if that transaction commits.
//
// delayq's tables may live in the application's own database file: open
// the file once with OpenSqliteBackend() (which creates and migrates
// delayq's schema, and leaves the file in WAL mode), then the application
// opens the same file with sqlite3_open_v2() and writes its rows and its
// jobs in one transaction:
//
//   sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
//   sqlite3_exec(db, "INSERT INTO orders ...", nullptr, nullptr, nullptr);
//   delayq::JobOptions options;
//   options.delay = absl::Minutes(30);
//   auto id = delayq::EnqueueInTransaction(db, "orders.cancel_unpaid",
//                                          order_id, options, absl::Now());
//   if (!id.ok()) { /* ROLLBACK, or carry on without the job */ }
//   sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
//
// What is promised:
//   - the job is stored if and only if the transaction commits; a rollback,
//     or a crash of the process before COMMIT returns, leaves no trace of
//     it (SQLite's own atomicity);
//   - schedulers of every process on the file hear of the job (the store's
//     news, see sqlite_backend.h) right after the COMMIT, and never for a
//     transaction that rolled back.
//
// Why after and not at the commit: SQLite's commit hook runs before the
// commit is done (and the commit may still fail), so the news is sent from
// the WAL hook, which SQLite calls once the transaction is in the WAL and
// its write lock is released; a rollback hook forgets the news of a
// transaction that rolled back. While a transaction that enqueued a job is
// open, the connection's rollback hook and WAL hook are delayq's; once it
// ends they are SQLite's defaults again (automatic checkpoints as the
// connection had them). An application that sets either hook itself must
// not enqueue on that connection. A job undone by ROLLBACK TO a savepoint
// of the application is gone, but its news still goes out at COMMIT;
// schedulers that hear it find nothing new, which is harmless.
//
// delayq's tables must be in the connection's main database.
//
// Cost: each call checks the schema and prepares the statements it runs on
// the application's handle afresh (it cannot keep them: the application
// may close the handle), about 0.4 ms a call on a 2-core build machine
// against 0.1 ms for the store's own Add(); many jobs of one transaction
// are cheaper as one EnqueueBatchInTransaction(). The commit costs what
// the application's connection makes it cost: SQLite's default for a
// connection, synchronous=FULL, syncs the WAL on every commit, where the
// store's own connections use NORMAL unless told otherwise.
//
// Thread-safety: as the connection's own (one thread at a time per
// connection); calls on different connections may run at once.

#ifndef DELAYQ_SQLITE_TRANSACTION_H_
#define DELAYQ_SQLITE_TRANSACTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/job.h"

struct sqlite3;

namespace delayq {

// EnqueueInTransaction()
//
// Adds a job to the delayq tables of the database `db` is open on, inside
// the transaction the application has open on `db`; never BEGINs or
// COMMITs. `options` as for Scheduler::Enqueue() (every field; an empty id
// gets a generated one, which is returned); `now` is the application's
// clock. The call works in a savepoint of its own: on an error the
// application's transaction is left as it was before the call.
// Errors:
//   InvalidArgument     what Scheduler::Enqueue() refuses (topic, options,
//                       a payload over 1 MiB), and options.replace
//   AlreadyExists       the id names a live job, or a dedup window holds it
//   FailedPrecondition  `db` is null or has no transaction open (BEGIN
//                       first); the file has no delayq schema, or one of
//                       another version (the message says what to do); the
//                       connection is not in WAL mode
//   others              as the store's (sqlite_backend.h), e.g. Unavailable
//                       when another connection holds the write lock past
//                       the connection's busy timeout (BEGIN IMMEDIATE
//                       avoids that)
absl::StatusOr<std::string> EnqueueInTransaction(sqlite3* db,
                                                 absl::string_view topic,
                                                 absl::string_view payload,
                                                 const JobOptions& options,
                                                 absl::Time now);

// EnqueueBatchInTransaction()
//
// Enqueues one job per payload with the same options, all or nothing, as
// Scheduler::EnqueueBatch() does (with a non-empty options.id the ids are
// options.id + "-" + index), inside the application's transaction as
// EnqueueInTransaction() does; the ids in order. Errors as that.
absl::StatusOr<std::vector<std::string>> EnqueueBatchInTransaction(
    sqlite3* db, absl::string_view topic,
    absl::Span<const std::string> payloads, const JobOptions& options,
    absl::Time now);

}  // namespace delayq

#endif  // DELAYQ_SQLITE_TRANSACTION_H_
