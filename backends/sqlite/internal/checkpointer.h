// Copyright delayq authors.
//
// checkpointer.h — copies the WAL back into the database file on a thread
// of its own, so that no caller's commit waits for it.
//
// Why: SQLite's automatic checkpoint runs inside the commit that finds the
// WAL full, on the caller's thread. It copies up to wal_autocheckpoint
// pages into the database file and syncs it: on this project's machines
// tens of milliseconds, once every few hundred milliseconds under a steady
// load. Every caller of the group that commit belongs to (and every caller
// queued behind it) waits that long: the periodic stalls of a delivery's
// lateness (bench/README.md).
//
// With a Checkpointer, the commit that finds the WAL at `pages` or more
// asks a thread with a connection of its own for a PASSIVE checkpoint: it
// takes no lock a writer needs, and writers go on while it copies and
// syncs. But the WAL starts again from its beginning only once a
// checkpoint has copied all of it, and under a steady load writers append
// while the thread copies. So the thread copies the bulk, pass after pass
// while commits keep asking, and once what is left to copy is at most
// pages / kRemainderDivisor frames, the commit that finds it so copies
// that rest itself: a short checkpoint, with no write in between, after
// which the next write starts the WAL again. Should the thread fall behind
// (a slow disk), a commit that finds the WAL at kCatchUp times `pages`
// checkpoints on its own thread, as SQLite would have, so the WAL cannot
// grow without bound.
//
// The thread starts at the first checkpoint asked for, so a store that is
// only read, or opened for a moment, starts none.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_CHECKPOINTER_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_CHECKPOINTER_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "src/common/mutex.h"

namespace delayq {

class Backend;

namespace sqlite_internal {

class Connection;

class Checkpointer {
 public:
  // A commit that finds the WAL at this many times `pages` checkpoints on
  // its own thread.
  static constexpr int kCatchUp = 4;
  // A commit checkpoints the rest itself once the thread has copied all
  // but pages / kRemainderDivisor frames (at least one) of the WAL.
  static constexpr int kRemainderDivisor = 8;

  // Checkpoints the database at `path` once a commit finds its WAL at
  // `pages` pages or more (0: never). `busy_timeout`: for opening the
  // thread's connection.
  Checkpointer(std::string path, int pages, absl::Duration busy_timeout);
  // Stops the thread, if any (a checkpoint it is running ends first).
  ~Checkpointer();

  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Takes over `db`'s WAL hook (in place of SQLite's automatic checkpoint).
  // `db` must be closed, or its hook removed, before this object goes.
  void Attach(sqlite3* db);

  // What tests look at: the checkpoints run by the thread and by a commit
  // itself, how often the WAL was seen to start again from its beginning,
  // and its size in pages at the last commit.
  struct Counts {
    int64_t by_thread = 0;
    int64_t by_commit = 0;
    int64_t restarts = 0;
    int wal_pages = 0;
  };
  Counts CountsForTest() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // SQLite's WAL hook: runs after each commit of an attached connection,
  // on the committing thread, with the WAL's size in pages.
  static int OnCommit(void* self, sqlite3* db, const char* database,
                      int wal_pages);
  // Whether the commit that found the WAL at `wal_pages` checkpoints on its
  // own thread; otherwise asks the thread for a pass, starting it if need
  // be.
  bool CommitCheckpoints(int wal_pages) ABSL_LOCKS_EXCLUDED(mu_);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  const int pages_;
  const absl::Duration busy_timeout_;
  internal::Mutex mu_;
  internal::CondVar asked_cv_;
  bool asked_ ABSL_GUARDED_BY(mu_) = false;
  // The WAL's size at the last commit, and how often it was seen to start
  // again (smaller than before): a pass's count of frames copied holds for
  // the WAL it ran on only.
  int last_wal_pages_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Frames of this generation's WAL the thread has copied.
  int copied_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

// Test seam (`backend` must be a SQLite store; defined in
// sqlite_backend.cc): the counts of its Checkpointer.
Checkpointer::Counts CheckpointCountsForTest(Backend* backend);

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_CHECKPOINTER_H_
