// Copyright delayq authors.
//
// Checkpoints of the SQLite store (backends/sqlite/internal/checkpointer.h):
// the WAL is copied back into the database file by a thread of the store's,
// not inside a caller's commit, and still starts again from its beginning
// under a steady load.
//
// The proof that no commit waits for a checkpoint holds the WAL file's sync
// (a VFS of the test's own, wrapped around the default one): a checkpoint
// syncs the WAL before it copies it into the database file, and with the
// store's durability (synchronous = NORMAL) no commit does. While that sync
// is held, a checkpoint cannot go on; the store's writes must regardless.

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backends/sqlite/internal/checkpointer.h"
#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::sqlite_internal::CheckpointCountsForTest;
using ::delayq::sqlite_internal::Checkpointer;
using ::delayq::testing::Eventually;
using ::delayq::testing::FreshDbPath;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

// A VFS around the default one whose WAL files' xSync waits while held.
// Registered as the default VFS for the test's life.
class HeldSyncVfs {
 public:
  HeldSyncVfs() {
    real_ = sqlite3_vfs_find(nullptr);
    vfs_ = *real_;
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.zName = "held_sync";
    vfs_.pAppData = this;
    vfs_.xOpen = &HeldSyncVfs::Open;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  ~HeldSyncVfs() {
    Release();
    sqlite3_vfs_unregister(&vfs_);
  }

  // WAL files' syncs wait from now until Release().
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  // Whether a sync waits now.
  bool Waiting() {
    absl::MutexLock lock(&mu_);
    return waiting_ > 0;
  }

 private:
  struct File {
    sqlite3_file base;
    HeldSyncVfs* vfs;
    bool wal;
    // The default VFS's file follows, szOsFile bytes.
    sqlite3_file* Real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };

  static File* Of(sqlite3_file* f) { return reinterpret_cast<File*>(f); }

  static int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file,
                  int flags, int* out_flags) {
    auto* self = static_cast<HeldSyncVfs*>(vfs->pAppData);
    File* f = Of(file);
    f->vfs = self;
    f->wal = (flags & SQLITE_OPEN_WAL) != 0;
    const int rc =
        self->real_->xOpen(self->real_, name, f->Real(), flags, out_flags);
    // SQLite calls xClose only when methods are set.
    f->base.pMethods = f->Real()->pMethods != nullptr ? &kMethods : nullptr;
    return rc;
  }

  static int Sync(sqlite3_file* file, int flags) {
    File* f = Of(file);
    if (f->wal) f->vfs->AwaitRelease();
    return f->Real()->pMethods->xSync(f->Real(), flags);
  }

  void AwaitRelease() {
    absl::MutexLock lock(&mu_);
    ++waiting_;
    mu_.Await(absl::Condition(
        +[](bool* held) { return !*held; }, &held_));
    --waiting_;
  }

  // Every other method passes through to the default VFS's file.
  static int Close(sqlite3_file* f) {
    return Of(f)->Real()->pMethods->xClose(Of(f)->Real());
  }
  static int Read(sqlite3_file* f, void* p, int n, sqlite3_int64 o) {
    return Of(f)->Real()->pMethods->xRead(Of(f)->Real(), p, n, o);
  }
  static int Write(sqlite3_file* f, const void* p, int n, sqlite3_int64 o) {
    return Of(f)->Real()->pMethods->xWrite(Of(f)->Real(), p, n, o);
  }
  static int Truncate(sqlite3_file* f, sqlite3_int64 size) {
    return Of(f)->Real()->pMethods->xTruncate(Of(f)->Real(), size);
  }
  static int FileSize(sqlite3_file* f, sqlite3_int64* size) {
    return Of(f)->Real()->pMethods->xFileSize(Of(f)->Real(), size);
  }
  static int Lock(sqlite3_file* f, int l) {
    return Of(f)->Real()->pMethods->xLock(Of(f)->Real(), l);
  }
  static int Unlock(sqlite3_file* f, int l) {
    return Of(f)->Real()->pMethods->xUnlock(Of(f)->Real(), l);
  }
  static int CheckReservedLock(sqlite3_file* f, int* out) {
    return Of(f)->Real()->pMethods->xCheckReservedLock(Of(f)->Real(), out);
  }
  static int FileControl(sqlite3_file* f, int op, void* arg) {
    return Of(f)->Real()->pMethods->xFileControl(Of(f)->Real(), op, arg);
  }
  static int SectorSize(sqlite3_file* f) {
    return Of(f)->Real()->pMethods->xSectorSize(Of(f)->Real());
  }
  static int DeviceCharacteristics(sqlite3_file* f) {
    return Of(f)->Real()->pMethods->xDeviceCharacteristics(Of(f)->Real());
  }
  static int ShmMap(sqlite3_file* f, int region, int size, int extend,
                    void volatile** out) {
    return Of(f)->Real()->pMethods->xShmMap(Of(f)->Real(), region, size, extend,
                                            out);
  }
  static int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
    return Of(f)->Real()->pMethods->xShmLock(Of(f)->Real(), offset, n, flags);
  }
  static void ShmBarrier(sqlite3_file* f) {
    Of(f)->Real()->pMethods->xShmBarrier(Of(f)->Real());
  }
  static int ShmUnmap(sqlite3_file* f, int delete_flag) {
    return Of(f)->Real()->pMethods->xShmUnmap(Of(f)->Real(), delete_flag);
  }

  // Version 2: no memory mapping (xFetch), which SQLite then does without.
  static constexpr sqlite3_io_methods kMethods = {
      2,
      &Close,
      &Read,
      &Write,
      &Truncate,
      &Sync,
      &FileSize,
      &Lock,
      &Unlock,
      &CheckReservedLock,
      &FileControl,
      &SectorSize,
      &DeviceCharacteristics,
      &ShmMap,
      &ShmLock,
      &ShmBarrier,
      &ShmUnmap,
      nullptr,
      nullptr,
  };

  sqlite3_vfs* real_;
  sqlite3_vfs vfs_;
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

class CheckpointTest : public ::testing::Test {
 protected:
  // WAL pages that ask for a checkpoint: small, so a few jobs fill it.
  static constexpr int kPages = 320;
  static constexpr int kPageSize = 1024;

  void SetUp() override {
    path_ = FreshDbPath("checkpoint");
    SqliteOptions options;
    options.path = path_;
    options.page_size = kPageSize;
    options.wal_autocheckpoint_pages = kPages;
    absl::StatusOr<std::unique_ptr<Backend>> opened =
        OpenSqliteBackend(options);
    ASSERT_OK(opened);
    backend_ = *std::move(opened);
  }

  // Enqueues, reserves and acks one job: a few commits.
  void OneJob() {
    NewJob job = testing::PlainJob(absl::StrCat("j", next_++), "t", kNow);
    job.payload = std::string(200, 'p');
    ASSERT_OK(backend_->Add({job}, kNow));
    absl::StatusOr<std::vector<Lease>> leases = backend_->Reserve("t", 1, kNow);
    ASSERT_OK(leases);
    ASSERT_EQ(leases->size(), 1u);
    ASSERT_OK(
        backend_->Ack(leases->front().job.id, leases->front().token, "", kNow));
  }

  // The most frames the WAL file has held (it is never made shorter):
  // a 32-byte header, then frames of a 24-byte header and a page.
  int64_t WalFrames() {
    struct stat st;
    if (stat((path_ + "-wal").c_str(), &st) != 0) return 0;
    return (st.st_size - 32) / (kPageSize + 24);
  }

  Checkpointer::Counts Counts() {
    return CheckpointCountsForTest(backend_.get());
  }

  HeldSyncVfs vfs_;
  std::string path_;
  std::unique_ptr<Backend> backend_;
  int next_ = 0;
};

TEST_F(CheckpointTest, WritesGoOnWhileTheThreadsCheckpointWaitsForItsSync) {
  // The first frames of a WAL write its header, which is synced: before
  // the hold.
  OneJob();
  ASSERT_LT(WalFrames(), kPages);
  vfs_.Hold();
  // Writes until the WAL asks for a checkpoint and that checkpoint waits
  // for its sync, then on to twice the WAL size that asked (below the size
  // at which a commit checkpoints itself). A commit that ran the checkpoint
  // itself would wait with it: the writes run apart, so such a wait fails
  // the test instead of hanging it.
  std::future<void> writes = std::async(std::launch::async, [this] {
    while (!vfs_.Waiting() && next_ < 5'000 && !HasFatalFailure()) OneJob();
    while (WalFrames() < 2 * kPages && next_ < 5'000 && !HasFatalFailure()) {
      OneJob();
    }
  });
  const bool wrote =
      writes.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  const bool thread_waited = vfs_.Waiting();
  const Checkpointer::Counts held = Counts();
  vfs_.Release();
  writes.wait();
  EXPECT_TRUE(wrote) << "a write waited for the checkpoint's sync";
  EXPECT_TRUE(thread_waited) << "no checkpoint was under way";
  EXPECT_GE(WalFrames(), 2 * kPages);
  EXPECT_EQ(held.by_commit, 0);
  EXPECT_EQ(held.by_thread, 0);
  EXPECT_TRUE(
      Eventually(absl::Seconds(30), [&] { return Counts().by_thread >= 1; }));
}

TEST_F(CheckpointTest, TheWalStartsAgainFromItsBeginningAndStaysShort) {
  // A job at a time; once the WAL asks for a checkpoint, the writes pause
  // until the thread has run one: it then copies the whole WAL, and the
  // next write starts the WAL again from its beginning.
  int64_t copies = 0;
  while (Counts().restarts < 3) {
    OneJob();
    ASSERT_LT(next_, 5'000) << "the WAL did not start again";
    if (Counts().wal_pages < kPages) continue;
    ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
      return Counts().by_thread + Counts().by_commit > copies;
    })) << "no checkpoint ran";
    copies = Counts().by_thread + Counts().by_commit;
  }
  // The WAL file keeps its largest size: a job's frames past the size that
  // asks for a checkpoint, far from the size at which a commit copies the
  // WAL itself.
  EXPECT_LT(WalFrames(), 2 * kPages);
}

}  // namespace
}  // namespace delayq
