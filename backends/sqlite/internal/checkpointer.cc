// Copyright delayq authors.

#include "backends/sqlite/internal/checkpointer.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "backends/sqlite/internal/db.h"

namespace delayq {
namespace sqlite_internal {

Checkpointer::Checkpointer(std::string path, int pages,
                           absl::Duration busy_timeout)
    : path_(std::move(path)), pages_(pages), busy_timeout_(busy_timeout) {}

Checkpointer::~Checkpointer() {
  std::thread thread;
  {
    internal::MutexLock lock(&mu_);
    stopping_ = true;
    asked_cv_.SignalAll();
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

void Checkpointer::Attach(sqlite3* db) {
  sqlite3_wal_hook(db, &Checkpointer::OnCommit, this);
}

int Checkpointer::OnCommit(void* self, sqlite3* db, const char* database,
                           int wal_pages) {
  auto* checkpointer = static_cast<Checkpointer*>(self);
  if (!checkpointer->CommitCheckpoints(wal_pages)) return SQLITE_OK;
  // On the connection that just committed, whose callers wait: what
  // SQLite's own hook does. Its error, like SQLite's, is not the commit's
  // (the commit is done); the next commit tries again.
  if (sqlite3_wal_checkpoint_v2(db, database, SQLITE_CHECKPOINT_PASSIVE,
                                nullptr, nullptr) == SQLITE_OK) {
    internal::MutexLock lock(&checkpointer->mu_);
    ++checkpointer->counts_.by_commit;
  }
  return SQLITE_OK;
}

bool Checkpointer::CommitCheckpoints(int wal_pages) {
  internal::MutexLock lock(&mu_);
  if (wal_pages < last_wal_pages_) {
    ++generation_;
    copied_ = 0;
  }
  last_wal_pages_ = wal_pages;
  if (pages_ <= 0 || wal_pages < pages_) return false;
  // The thread is not asked again then: a checkpoint it runs would keep
  // the commit's from running (one checkpoint at a time), and the commit's
  // copies only what the thread has not.
  const int rest = std::max(pages_ / kRemainderDivisor, 1);
  if (wal_pages - copied_ <= rest || wal_pages / kCatchUp >= pages_) {
    return true;
  }
  if (stopping_) return true;
  asked_ = true;
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Run(); });
  } else {
    asked_cv_.Signal();
  }
  return false;
}

void Checkpointer::Run() {
  std::unique_ptr<Connection> conn;
  for (;;) {
    int64_t generation;
    {
      internal::MutexLock lock(&mu_);
      while (!asked_ && !stopping_) asked_cv_.Wait(&mu_);
      if (stopping_) return;
      asked_ = false;
      generation = generation_;
    }
    if (conn == nullptr) {
      // Opened here, not by the store: the store's connection is in use by
      // its callers, and a checkpoint runs on a connection of its own.
      absl::StatusOr<std::unique_ptr<Connection>> opened =
          Connection::Open(path_, busy_timeout_);
      // A file that cannot be opened now is tried again at the next ask;
      // meanwhile commits checkpoint on their own once the WAL is too long.
      if (!opened.ok()) continue;
      // A connection finds the file in WAL mode at its first read; until
      // then a checkpoint does nothing.
      if (!(*opened)->Exec("PRAGMA main.journal_mode", "read").ok()) continue;
      conn = *std::move(opened);
    }
    // PASSIVE: copies what no reader still needs, takes no lock a writer
    // waits for, and never calls the busy handler. An error (another
    // process checkpointing, a disk error) leaves the WAL to the next ask.
    int copied = 0;
    if (sqlite3_wal_checkpoint_v2(conn->db(), "main", SQLITE_CHECKPOINT_PASSIVE,
                                  nullptr, &copied) == SQLITE_OK) {
      internal::MutexLock lock(&mu_);
      ++counts_.by_thread;
      if (generation_ == generation) copied_ = std::max(copied_, copied);
    }
  }
}

Checkpointer::Counts Checkpointer::CountsForTest() {
  internal::MutexLock lock(&mu_);
  Counts counts = counts_;
  counts.restarts = generation_;
  counts.wal_pages = last_wal_pages_;
  return counts;
}

}  // namespace sqlite_internal
}  // namespace delayq
