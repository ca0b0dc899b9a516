// Copyright delayq authors.
//
// postgres_backend.h — a Backend that keeps jobs in a PostgreSQL database.
//
// For services that already run PostgreSQL: jobs live in tables of a schema
// of their own (`delayq` unless told otherwise), which the store creates
// and migrates itself, and any number of processes on any number of hosts
// share them. Every Backend call is one transaction on a connection of a
// small pool (one connection per calling thread at a time); a process
// killed at any moment leaves every job either before or after the call
// that was running. Workers take ready jobs with `FOR UPDATE SKIP LOCKED`,
// so reservations of one topic do not queue behind each other's row locks,
// and fencing tokens are random (src/common/lease_token.h). Changes that
// waiting schedulers must hear of are announced with NOTIFY in the
// transaction that makes them, so they arrive when it commits.
//
//   delayq::PostgresOptions options;
//   options.params = {{"host", "db.internal"}, {"dbname", "app"},
//                     {"user", "app"}, {"password", secret}};
//   auto backend = delayq::OpenPostgresBackend(options);
//   if (!backend.ok()) return backend.status();
//   auto scheduler = delayq::Scheduler::Create(*std::move(backend));
//
// Or through a URL (see open.h):
// `postgres://app:secret@db.internal:5432/app?schema=jobs&sslmode=require`.
//
// A job can also be enqueued inside the application's own transaction, so
// that it exists if and only if that transaction commits:
// EnqueueInTransaction() below. Code that does not link delayq (a trigger,
// a script, another language) calls the SQL function the store's schema
// holds (schema version 3 and later), in its own transaction:
//
//   SELECT jobs.enqueue('orders.cancel_unpaid', '42'::bytea,
//                       delay => '30 minutes');
//
//   <schema>.enqueue(topic text, payload bytea, id text, delay interval,
//       run_at timestamptz, ttr interval, priority integer,
//       max_attempts integer, backoff text ('fixed' or 'exponential'),
//       backoff_base interval, backoff_max interval,
//       backoff_jitter double precision, expire_after interval,
//       expire_at timestamptz, discard_expired boolean,
//       unique_for interval, keep_for interval, keep_at_most integer,
//       now_at timestamptz) RETURNS text  -- the job's id
//
// Every argument after the payload is optional (pass them by name), with
// JobOptions' defaults; `now_at` defaults to the server's clock
// (clock_timestamp()). It inserts, counts and NOTIFYs as
// EnqueueInTransaction() does, so waiting schedulers hear of the job at the
// commit. An id left NULL or empty is generated in the library's form,
// "<12 hex digits>-<serial>": the prefix is drawn once per schema, the
// serial comes from a sequence. Bad input raises SQLSTATE 22023
// (invalid_parameter_value); an id a live job or a dedup window holds,
// 23505 (unique_violation). backends/postgres/internal/schema.cc has its
// source.
//
// Errors beyond the Backend contract (every message names the server by
// host, port and database, never by password):
//   Unavailable         the server cannot be reached, went away during the
//                       call (the pool reconnects on the next call), is
//                       shutting down, did not answer within
//                       answer_timeout, or takes no writes (a standby, or a
//                       database or role set default_transaction_read_only)
//   PermissionDenied    the server refused the user or the password, or
//                       the user lacks rights on the schema or its tables
//   NotFound            the database does not exist
//   FailedPrecondition  the schema holds tables of a newer delayq
//   DeadlineExceeded    the server did not answer within the timeout
//
// Thread-safety: every method may be called from many threads at once; each
// call holds a connection of its own for its duration.

#ifndef DELAYQ_POSTGRES_BACKEND_H_
#define DELAYQ_POSTGRES_BACKEND_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"
#include "delayq/job.h"

// libpq's connection (libpq-fe.h), declared here so that this header does
// not need libpq's headers.
typedef struct pg_conn PGconn;

namespace delayq {

// PostgresOptions
struct PostgresOptions {
  // libpq connection parameters, keyword and value, as PQconnectdbParams()
  // takes them: host, port, user, password, dbname, sslmode, sslrootcert,
  // application_name, ... Unset ones take libpq's defaults (and the PG*
  // environment variables).
  std::vector<std::pair<std::string, std::string>> params;

  // The schema that holds delayq's tables: letters, digits and '_', not
  // starting with a digit, at most 63 bytes. Created if missing, unless
  // create_schema is false: then a missing schema is NotFound and nothing
  // is created (for a program that only reads, as `delayq stats`).
  std::string schema = "delayq";
  bool create_schema = true;

  // How long a statement may run on the server, data sent may go
  // unacknowledged by its host, and opening a connection to one host may
  // take, before the call fails (or, opening, tries the URL's next host):
  // the server's statement_timeout (DeadlineExceeded), tcp_user_timeout and
  // libpq's connect_timeout (whole seconds, at least 2), each unless
  // `params` sets it (an `options` of `params` that sets
  // statement_timeout wins). At least a second. Whatever `options` says,
  // every connection reads bytea in hex and runs its transactions READ
  // COMMITTED, as the store's SQL expects.
  absl::Duration timeout = absl::Seconds(10);

  // How long the store waits for the server to answer a statement on an
  // open connection (its result, or room to send it) before it gives up on the
  // connection, closes it and fails the call with Unavailable ("no answer
  // from the server in 30s"). It is what ends a call to a server that is
  // frozen, or behind a network that drops packets silently, where the
  // kernel still acknowledges what is sent (so tcp_user_timeout never
  // fires) and the server cannot run its statement_timeout. Zero: three
  // times `timeout` (30 s by default): longer than the statement timeout,
  // so that a slow statement is ended by the server first, with an error
  // that says what it was, and its answer still has time to arrive. At
  // least a second otherwise; shorter than `timeout` gives up on slow
  // statements instead of letting the server end them. The connection the
  // news subscription (Subscribe()) holds asks the server for a sign of
  // life after this long without news, and connects again (kResync) when
  // none comes within it.
  absl::Duration answer_timeout = absl::ZeroDuration();

  // Connections kept open between calls; a thread that finds none idle
  // opens another, which stays if there is room. At least 1.
  int max_idle_connections = 8;

  // What the store counts (see counts.h): on, keeping 24 hours, unless
  // told otherwise.
  CountsOptions counts;
  // How many events the store's log keeps (see event_log.h).
  EventLogOptions events;
};

// OpenPostgresBackend()
//
// Connects, creates the schema and its tables if missing and migrates
// those of an older delayq (in one transaction, under a lock, so that
// processes starting together do it once). Errors as listed at the top of
// this file; InvalidArgument for a bad schema name, timeout or
// max_idle_connections.
absl::StatusOr<std::unique_ptr<Backend>> OpenPostgresBackend(
    const PostgresOptions& options);

// ParsePostgresUrl()
//
// Parses `postgres://[user[:password]@][host[:port][,host[:port]...]]
// [/dbname][?param=value&...]` (also `postgresql://`) into options. User,
// password and dbname may be percent-encoded. The parameters `schema`,
// `timeout_ms`, `answer_timeout_ms`, `max_idle_connections`, `counts` and
// `counts_window_min`
// are delayq's; every other one is passed to libpq as a connection
// parameter (sslmode, application_name, host for a socket folder, ...)
// and must be one libpq knows. InvalidArgument, naming the problem, with
// the password hidden (RedactedUrl()).
absl::StatusOr<PostgresOptions> ParsePostgresUrl(absl::string_view url);

// EnqueueInTransaction()
//
// Adds a job to the store in schema `schema` of the database `conn` is
// connected to, inside the transaction the application has open on `conn`:
// the job exists if and only if that transaction commits, and waiting
// schedulers hear of it when it does (NOTIFY). `options` as for
// Scheduler::Enqueue() (an empty id gets a generated one, which is
// returned); `now` is the application's clock. The schema must exist (an
// OpenPostgresBackend() on the database made it). InvalidArgument for
// options the scheduler would refuse; AlreadyExists for a live or held id;
// FailedPrecondition when `conn` has no transaction open (or one that
// failed). The call works in a savepoint of its own: on an error the
// application's transaction is left as it was before the call.
absl::StatusOr<std::string> EnqueueInTransaction(
    PGconn* conn, absl::string_view schema, absl::string_view topic,
    absl::string_view payload, const JobOptions& options, absl::Time now);

}  // namespace delayq

#endif  // DELAYQ_POSTGRES_BACKEND_H_
