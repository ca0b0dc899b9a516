// Copyright delayq authors.
//
// EnqueueInTransaction() on SQLite: the store's own insert (InsertJobs())
// run on the application's connection, and its news held back until that
// connection's transaction has committed.

#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/news.h"
#include "backends/sqlite/internal/schema.h"
#include "backends/sqlite/internal/statements.h"
#include "delayq/sqlite_transaction.h"
#include "src/common/job_in_transaction.h"
#include "src/common/mutex.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {

absl::StatusOr<std::vector<std::string>> SqliteBackend::AddWithin(
    sqlite3* db, const std::string& path, absl::Span<const NewJob> jobs,
    absl::Time now) {
  // The statements of a store on the borrowed handle. It folds no counts
  // (the store's own calls do), to keep the application's transaction
  // short.
  SqliteBackend store(Connection::Borrow(db, path), NewsFolder(path),
                      CountsOptions(), EventLogOptions());
  internal::MutexLock lock(&store.mu_);
  // Only the statements InsertJobs(), WriteCounts() and CollectNews() run:
  // all of the store's would cost milliseconds a call, and statements on
  // the application's handle cannot outlive the call (the application may
  // close it).
  Statements& s = store.s_;
  const std::pair<std::unique_ptr<Statement>*, const char*> needed[] = {
      {&s.insert, Sql::kInsert},          {&s.drop_holds, Sql::kDropHolds},
      {&s.is_held, Sql::kIsHeld},         {&s.ready_count, Sql::kReadyCount},
      {&s.horizon_get, Sql::kHorizonGet}, {&s.horizon_set, Sql::kHorizonSet},
  };
  // A job that waits for others reaches the dependency code, which may
  // also settle a dependant at once (a dead dependency), and one that joins
  // a batch the batch's: that takes the store's other statements, so all of
  // them are prepared.
  const bool waits = std::any_of(jobs.begin(), jobs.end(), [](const NewJob& j) {
    return !j.after.empty() || !j.batch.empty();
  });
  if (waits) {
    DQ_RETURN_IF_ERROR(store.PrepareAll());
  } else {
    for (const auto& [stmt, sql] : needed) {
      DQ_ASSIGN_OR_RETURN(*stmt, store.conn_->Prepare(sql));
    }
  }
  store.folded_at_minute_us_ = std::numeric_limits<int64_t>::max();
  store.op_now_us_ = store.pending_.now_us = ToMicros(now);
  Connection* conn = store.conn_.get();
  DQ_RETURN_IF_ERROR(conn->Exec("SAVEPOINT delayq_enqueue", "savepoint"));
  absl::StatusOr<std::vector<std::string>> news =
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          store.mu_) -> absl::StatusOr<std::vector<std::string>> {
    DQ_RETURN_IF_ERROR(store.InsertJobs(jobs, store.op_now_us_));
    DQ_RETURN_IF_ERROR(store.WriteCounts());
    return store.CollectNews();
  }();
  // Some errors (a full disk, an I/O error) end the whole transaction, and
  // the savepoint with it.
  if (!news.ok() && conn->InTransaction()) {
    conn->Exec("ROLLBACK TO delayq_enqueue", "roll back").IgnoreError();
  }
  if (conn->InTransaction()) {
    conn->Exec("RELEASE delayq_enqueue", "release").IgnoreError();
  }
  return news;
}

namespace {

// News waiting for a connection's transaction to commit.
struct AfterCommit {
  std::string folder;
  std::vector<std::string> news;
  // The connection's wal_autocheckpoint before delayq's WAL hook replaced
  // SQLite's default one, which is what runs that checkpoint.
  int autocheckpoint_pages = 0;
};

// The connections that have news waiting, each with its hooks set.
class Waiting {
 public:
  static Waiting& Get() {
    static Waiting* const waiting = new Waiting();
    return *waiting;
  }

  // Adds `news` for `db`'s open transaction, setting the hooks on the
  // first news of a transaction. SQLite is called outside mu_: the hooks
  // run under the connection's mutex and take mu_.
  void Add(sqlite3* db, const std::string& folder,
           std::vector<std::string> news) ABSL_LOCKS_EXCLUDED(mu_) {
    // Ours already when this transaction has news waiting.
    const bool hooked =
        sqlite3_rollback_hook(db, &Waiting::OnRollback, db) == db;
    int pages = kSqliteDefaultPages;
    if (!hooked) {
      // Read before the WAL hook is set: SQLite reports 0 under another.
      pages = AutocheckpointPages(db);
      sqlite3_wal_hook(db, &Waiting::OnCommitted, db);
    }
    internal::MutexLock lock(&mu_);
    std::unique_ptr<AfterCommit>& entry = by_connection_[db];
    // An entry of a connection whose hooks were not ours was left by a
    // connection closed in mid-transaction (closing rolls back without the
    // hook) whose address this one reuses: its news is void.
    if (entry == nullptr || !hooked) {
      entry = std::make_unique<AfterCommit>();
      entry->folder = folder;
      entry->autocheckpoint_pages = pages;
    }
    for (std::string& message : news) {
      entry->news.push_back(std::move(message));
    }
  }

 private:
  static constexpr int kSqliteDefaultPages = 1000;

  static int AutocheckpointPages(sqlite3* db) {
    sqlite3_stmt* stmt = nullptr;
    int pages = kSqliteDefaultPages;
    if (sqlite3_prepare_v2(db, "PRAGMA wal_autocheckpoint", -1, &stmt,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      pages = sqlite3_column_int(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return pages;
  }

  // Takes `db`'s entry (nullptr when it has none) and gives the connection
  // back SQLite's default hooks.
  std::unique_ptr<AfterCommit> Take(sqlite3* db) ABSL_LOCKS_EXCLUDED(mu_) {
    std::unique_ptr<AfterCommit> entry;
    {
      internal::MutexLock lock(&mu_);
      auto it = by_connection_.find(db);
      if (it != by_connection_.end()) {
        entry = std::move(it->second);
        by_connection_.erase(it);
      }
    }
    sqlite3_rollback_hook(db, nullptr, nullptr);
    sqlite3_wal_autocheckpoint(db, entry != nullptr
                                       ? entry->autocheckpoint_pages
                                       : kSqliteDefaultPages);
    return entry;
  }

  // SQLite's rollback hook: the transaction (and its jobs) is gone.
  static void OnRollback(void* db) { Get().Take(static_cast<sqlite3*>(db)); }

  // SQLite's WAL hook, called once a transaction of `db` is in the WAL and
  // its write lock released: the commit is done, so a subscriber that hears
  // the news and reads the file sees the jobs. Then what SQLite's default
  // hook does, which this one replaced: a checkpoint once the WAL holds
  // `autocheckpoint_pages` pages.
  static int OnCommitted(void* arg, sqlite3* db, const char* database,
                         int wal_pages) {
    std::unique_ptr<AfterCommit> entry = Get().Take(static_cast<sqlite3*>(arg));
    const int pages =
        entry != nullptr ? entry->autocheckpoint_pages : kSqliteDefaultPages;
    if (pages > 0 && wal_pages >= pages) sqlite3_wal_checkpoint(db, database);
    if (entry != nullptr && !entry->news.empty()) {
      NewsSender(entry->folder).Send(entry->news);
    }
    return SQLITE_OK;
  }

  internal::Mutex mu_;
  absl::flat_hash_map<sqlite3*, std::unique_ptr<AfterCommit>> by_connection_
      ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::vector<std::string>> AddInTransaction(
    sqlite3* db, absl::Span<const NewJob> jobs, absl::Time now) {
  if (db == nullptr || sqlite3_get_autocommit(db)) {
    return absl::FailedPreconditionError(
        "sqlite: EnqueueInTransaction() needs a connection with a "
        "transaction open (BEGIN, or BEGIN IMMEDIATE to take the write lock "
        "up front)");
  }
  const char* file = sqlite3_db_filename(db, "main");
  const std::string path = file != nullptr ? file : "";
  {
    std::unique_ptr<Connection> conn = Connection::Borrow(db, path);
    DQ_RETURN_IF_ERROR(CheckSchemaForTransaction(conn.get()));
  }
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> news,
                      SqliteBackend::AddWithin(db, path, jobs, now));
  if (!news.empty()) {
    Waiting::Get().Add(db, NewsFolder(path), std::move(news));
  }
  std::vector<std::string> ids;
  ids.reserve(jobs.size());
  for (const NewJob& job : jobs) ids.push_back(job.id);
  return ids;
}

}  // namespace
}  // namespace sqlite_internal

absl::StatusOr<std::string> EnqueueInTransaction(sqlite3* db,
                                                 absl::string_view topic,
                                                 absl::string_view payload,
                                                 const JobOptions& options,
                                                 absl::Time now) {
  DQ_ASSIGN_OR_RETURN(NewJob job, internal::ResolveJobInTransaction(
                                      topic, payload, options, now));
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> ids,
                      sqlite_internal::AddInTransaction(db, {&job, 1}, now));
  return std::move(ids[0]);
}

absl::StatusOr<std::vector<std::string>> EnqueueBatchInTransaction(
    sqlite3* db, absl::string_view topic,
    absl::Span<const std::string> payloads, const JobOptions& options,
    absl::Time now) {
  DQ_ASSIGN_OR_RETURN(
      std::vector<NewJob> jobs,
      internal::ResolveBatchInTransaction(topic, payloads, options, now));
  return sqlite_internal::AddInTransaction(db, jobs, now);
}

}  // namespace delayq
