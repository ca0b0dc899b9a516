// Copyright delayq authors.
//
// sqlite_backend.h — a Backend that keeps jobs in one SQLite file.
//
// The embedded default store: durable, one file, no server. Many threads and
// many processes may open the same file at once; every Backend call is
// all or nothing in one SQLite transaction (writes take the write lock up
// front with BEGIN IMMEDIATE), so a process killed at any moment leaves every
// job either before or after the call that was running. Writes that threads
// of one Backend make at the same moment share a transaction (group commit):
// each still sees the ones before it and fails alone, but a COMMIT that
// fails fails all of them. The file is in WAL mode, so readers never block
// the writer.
//
//   delayq::SqliteOptions options;
//   options.path = "/var/lib/app/jobs.db";
//   options.durability = delayq::SqliteOptions::Durability::kFull;
//   auto backend = delayq::OpenSqliteBackend(options);
//   if (!backend.ok()) return backend.status();
//   auto scheduler = delayq::Scheduler::Create(*std::move(backend));
//
// Or through a URL (see open.h):
// `sqlite:jobs.db?sync=full&busy_timeout_ms=2000&page_size=4096`.
//
// Every operation is O(log n) in the number of stored jobs (O(k log n) for a
// call that moves k jobs; Topics() is linear in the number of topics): each
// query walks an index, and per-topic counts are kept in a table updated in
// the same transaction as the jobs. Times are stored as integer microseconds.
// Paused topics, topic limits (with their token buckets) and the ids held by
// dedup windows are tables of their own, changed in the same transactions
// as the jobs they concern; backends/sqlite/internal/schema.cc describes
// every table and the schema version that added it (now 9).
//
// Errors beyond the Backend contract:
//   Unavailable         another connection held the write lock for longer
//                       than busy_timeout, or an I/O error
//   InvalidArgument     the path is a directory, or the file exists but is
//                       not a SQLite database
//   FailedPrecondition  the directory does not exist; the file cannot be
//                       created or written there (read-only location); the
//                       file is a SQLite database that is not delayq's (it
//                       has other tables) or was written by a newer delayq
//   DataLoss            the file is damaged (truncated, corrupted, or its
//                       tables are not those of its schema version)
//   ResourceExhausted   the disk is full
// Every message names the file's path. A file that is refused is not
// modified.
//
// Thread-safety: a Backend object serialises its own calls on one connection;
// use one object per thread (or per process) for more parallelism on reads.

#ifndef DELAYQ_SQLITE_BACKEND_H_
#define DELAYQ_SQLITE_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"

namespace delayq {

// SqliteOptions
struct SqliteOptions {
  // The database file. Created (with delayq's schema) if it does not exist;
  // its directory must exist. An existing empty SQLite database is
  // initialised; any other existing database must be delayq's.
  std::string path;

  // How hard a commit works to survive a power loss. Either way a crash of
  // the process loses nothing that was committed.
  enum class Durability {
    // synchronous=NORMAL: the last commits before a power loss or OS crash
    // may roll back; the file is never corrupted. Fastest.
    kNormal,
    // synchronous=FULL: every commit is on disk when the call returns.
    kFull,
  };
  Durability durability = Durability::kNormal;

  // How long a call waits for another connection's write lock before it
  // gives up with Unavailable. Must not be negative.
  absl::Duration busy_timeout = absl::Seconds(5);

  // The size in bytes of a database page, for a file this call creates: a
  // power of two from 512 to 65536. An existing file keeps the size it was
  // made with. Every commit writes each page it changed to the WAL, and a
  // single-job call changes a handful, so small pages write less: 1 KiB
  // pages run single-job calls about half again as fast as SQLite's usual
  // 4 KiB (see bench/README.md). Jobs whose payload nears the page size
  // spill into overflow pages; for payloads of several KiB choose 4096 or
  // more.
  int page_size = 1024;

  // The WAL is copied back into the database file (a checkpoint, which
  // syncs the file twice) once it holds this many pages; 0 turns automatic
  // checkpoints off. Larger means fewer syncs and higher throughput, for a
  // larger -wal file beside the database (about page_size times this). A
  // thread of the store's runs the checkpoint, so no call waits for it;
  // should that thread fall behind, the commit that finds the WAL at four
  // times this size checkpoints itself. Must not be negative.
  int wal_autocheckpoint_pages = 10000;

  // What the store counts (see counts.h): on, keeping 24 hours, unless
  // told otherwise.
  CountsOptions counts;
  // How many events the store's log keeps (see event_log.h).
  EventLogOptions events;
};

// OpenSqliteBackend()
//
// Opens (creating if needed) the delayq database at `options.path`. Upgrades
// a file written by an older delayq in place; refuses, without touching it,
// a file written by a newer one. Errors as listed at the top of this file;
// InvalidArgument for an empty path, a negative busy_timeout or
// wal_autocheckpoint_pages, or a page_size that is not a power of two from
// 512 to 65536.
absl::StatusOr<std::unique_ptr<Backend>> OpenSqliteBackend(
    const SqliteOptions& options);

// ParseSqliteUrl()
//
// Parses `sqlite:PATH[?sync=normal|full&busy_timeout_ms=N&page_size=N]` into
// options.
// PATH is taken literally (relative paths are relative to the working
// directory) and must not be empty. Each parameter may appear at most once.
// InvalidArgument, naming the problem, for another scheme, an empty path, an
// unknown parameter, a parameter without '=', or a bad value.
absl::StatusOr<SqliteOptions> ParseSqliteUrl(absl::string_view url);

}  // namespace delayq

#endif  // DELAYQ_SQLITE_BACKEND_H_
