// Copyright delayq authors.
//
// EnqueueInTransaction() on SQLite (delayq/sqlite_transaction.h), on a real
// file that the application opens itself: a job exists if and only if the
// application's transaction commits, other processes hear of it at the
// commit and never of a rollback, and a crash before the commit leaves
// neither the application's row nor the job.

#include "delayq/sqlite_transaction.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/sqlite_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"
#include "tests/testing/test_job.h"
#include "tests/testing/worker_process.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsRecorder;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TestJob;
using ::delayq::testing::WorkerProcess;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

std::unique_ptr<Backend> OpenStore(const std::string& path) {
  SqliteOptions options;
  options.path = path;
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenSqliteBackend(options);
  EXPECT_OK(store.status());
  return store.ok() ? *std::move(store) : nullptr;
}

// The application's own connection to the file, with a table of its own.
class AppDb {
 public:
  explicit AppDb(const std::string& path) {
    ok_ = sqlite3_open_v2(path.c_str(), &db_,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                          nullptr) == SQLITE_OK &&
          Run("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)");
  }
  ~AppDb() { sqlite3_close(db_); }
  AppDb(const AppDb&) = delete;
  AppDb& operator=(const AppDb&) = delete;

  bool ok() const { return ok_; }
  sqlite3* get() const { return db_; }
  bool Run(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) ==
           SQLITE_OK;
  }
  int64_t Orders() { return Int("SELECT count(*) FROM orders"); }
  // The integer `sql` returns, or -1.
  int64_t Int(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      n = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
  bool ok_ = false;
};

class SqliteTransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::FreshDbPath("in_tx");
    store_ = OpenStore(path_);
    ASSERT_NE(store_, nullptr);
    app_ = std::make_unique<AppDb>(path_);
    ASSERT_TRUE(app_->ok()) << sqlite3_errmsg(app_->get());
  }

  std::string path_;
  std::unique_ptr<Backend> store_;  // made the schema
  std::unique_ptr<AppDb> app_;
};

TEST_F(SqliteTransactionTest, ACommittedJobExistsOnceWithEveryOption) {
  ASSERT_TRUE(app_->Run("BEGIN IMMEDIATE"));
  ASSERT_TRUE(app_->Run("INSERT INTO orders VALUES ('order-42')"));
  JobOptions options;
  options.id = "order-42";
  options.delay = absl::Seconds(30);
  options.ttr = absl::Seconds(7);
  options.priority = -2;
  options.max_attempts = 5;
  options.backoff = Backoff::Fixed(absl::Seconds(3)).WithJitter(0.25);
  options.expire_after = absl::Minutes(5);
  options.discard_expired = true;
  options.unique_for = absl::Minutes(1);
  options.keep_for = absl::Minutes(2);
  options.keep_at_most = 7;
  ASSERT_OK_AND_ASSIGN(
      std::string id,
      EnqueueInTransaction(app_->get(), "orders", std::string("p\0q", 3),
                           options, kT0));
  EXPECT_EQ(id, "order-42");
  ASSERT_TRUE(app_->Run("COMMIT"));
  // Seen by another store on the file, as by another process.
  std::unique_ptr<Backend> other = OpenStore(path_);
  ASSERT_NE(other, nullptr);
  ASSERT_OK_AND_ASSIGN(Job job, other->Get(id));
  EXPECT_EQ(job.topic, "orders");
  EXPECT_EQ(job.payload, std::string("p\0q", 3));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.run_at, kT0 + absl::Seconds(30));
  EXPECT_EQ(job.enqueued_at, kT0);
  EXPECT_EQ(job.ttr, absl::Seconds(7));
  EXPECT_EQ(job.priority, -2);
  EXPECT_EQ(job.max_attempts, 5);
  EXPECT_EQ(job.backoff, options.backoff);
  EXPECT_EQ(job.expire_at, kT0 + absl::Minutes(5));
  EXPECT_TRUE(job.discard_expired);
  EXPECT_EQ(job.unique_for, absl::Minutes(1));
  EXPECT_EQ(job.keep_for, absl::Minutes(2));
  EXPECT_EQ(job.keep_at_most, 7);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, other->Stats("orders"));
  EXPECT_EQ(stats.delayed, 1);
  EXPECT_EQ(stats.ready + stats.reserved + stats.dead, 0);
  // Counted like any other enqueue.
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, other->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 1);
  EXPECT_EQ(app_->Orders(), 1);
}

TEST_F(SqliteTransactionTest, RunAtAndTheDefaultsRoundTrip) {
  ASSERT_TRUE(app_->Run("BEGIN"));
  JobOptions options;
  options.run_at = kT0 + absl::Hours(2);
  ASSERT_OK_AND_ASSIGN(std::string id, EnqueueInTransaction(app_->get(), "t",
                                                            "p", options, kT0));
  EXPECT_FALSE(id.empty()) << "a generated id";
  ASSERT_TRUE(app_->Run("COMMIT"));
  ASSERT_OK_AND_ASSIGN(Job job, store_->Get(id));
  const JobOptions defaults;
  EXPECT_EQ(job.run_at, kT0 + absl::Hours(2));
  EXPECT_EQ(job.ttr, defaults.ttr);
  EXPECT_EQ(job.priority, defaults.priority);
  EXPECT_EQ(job.max_attempts, defaults.max_attempts);
  EXPECT_EQ(job.backoff, defaults.backoff);
  EXPECT_EQ(job.expire_at, absl::InfiniteFuture());
  EXPECT_FALSE(job.discard_expired);
  EXPECT_EQ(job.unique_for, absl::ZeroDuration());
  EXPECT_EQ(job.keep_for, absl::ZeroDuration());
}

TEST_F(SqliteTransactionTest, ARolledBackJobDoesNotExist) {
  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_TRUE(app_->Run("INSERT INTO orders VALUES ('order-1')"));
  ASSERT_OK_AND_ASSIGN(
      std::string id,
      EnqueueInTransaction(app_->get(), "orders", "p", JobOptions(), kT0));
  ASSERT_TRUE(app_->Run("ROLLBACK"));
  EXPECT_THAT(store_->Get(id), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store_->Stats("orders"));
  EXPECT_EQ(stats, TopicStats());
  EXPECT_EQ(app_->Orders(), 0);
}

// A job enqueued in the application's transaction may wait for others,
// and is released when they are done, as any other waiting job.
TEST_F(SqliteTransactionTest, AJobMayWaitForOthers) {
  ASSERT_OK(store_->Add({TestJob("charge", "pay", kT0)}, kT0));
  JobOptions after;
  after.after = {"charge"};
  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_OK_AND_ASSIGN(std::string id, EnqueueInTransaction(app_->get(), "ship",
                                                            "p", after, kT0));
  ASSERT_TRUE(app_->Run("COMMIT"));
  ASSERT_OK_AND_ASSIGN(Job waiting, store_->Get(id));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store_->Reserve("pay", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(store_->Ack("charge", leases[0].token, "", kT0));
  ASSERT_OK_AND_ASSIGN(Job released, store_->Get(id));
  EXPECT_EQ(released.state, JobState::kReady);
  // One that names no job is refused, and the transaction goes on.
  JobOptions unknown;
  unknown.after = {"nothing"};
  ASSERT_TRUE(app_->Run("BEGIN"));
  EXPECT_THAT(
      EnqueueInTransaction(app_->get(), "ship", "p", unknown, kT0).status(),
      StatusIs(absl::StatusCode::kNotFound));
  ASSERT_TRUE(app_->Run("INSERT INTO orders VALUES ('order-1')"));
  ASSERT_TRUE(app_->Run("COMMIT"));
  EXPECT_EQ(app_->Orders(), 1);
}

TEST_F(SqliteTransactionTest, ABatchIsAllOrNothing) {
  const std::vector<std::string> payloads = {"a", "b", "c"};
  JobOptions options;
  options.id = "batch";
  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> ids,
      EnqueueBatchInTransaction(app_->get(), "t", payloads, options, kT0));
  EXPECT_THAT(ids, ::testing::ElementsAre("batch-0", "batch-1", "batch-2"));
  ASSERT_TRUE(app_->Run("COMMIT"));
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(Job job, store_->Get(ids[i]));
    EXPECT_EQ(job.payload, payloads[i]);
    EXPECT_EQ(job.state, JobState::kReady);
  }
  // One id taken: none of the batch is stored, and the transaction goes on.
  ASSERT_TRUE(app_->Run("BEGIN"));
  options.id = "other";
  ASSERT_OK(store_->Add({TestJob("other-1", "t", kT0)}, kT0));
  EXPECT_THAT(
      EnqueueBatchInTransaction(app_->get(), "t", payloads, options, kT0)
          .status(),
      StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_TRUE(app_->Run("COMMIT"));
  EXPECT_THAT(store_->Get("other-0"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SqliteTransactionTest, RefusalsSayWhyAndLeaveTheTransactionUsable) {
  ASSERT_OK(store_->Add({TestJob("taken", "t", kT0)}, kT0));
  JobOptions options;
  options.id = "taken";
  EXPECT_THAT(
      EnqueueInTransaction(app_->get(), "t", "p", options, kT0).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("transaction open")));
  EXPECT_THAT(EnqueueInTransaction(nullptr, "t", "p", options, kT0).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_TRUE(app_->Run("INSERT INTO orders VALUES ('kept')"));
  EXPECT_THAT(
      EnqueueInTransaction(app_->get(), "t", "p", options, kT0).status(),
      StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(
      EnqueueInTransaction(app_->get(), "bad topic!", "p", JobOptions(), kT0)
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
  options.id = "";
  options.replace = true;
  EXPECT_THAT(
      EnqueueInTransaction(app_->get(), "t", "p", options, kT0).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replace")));
  options.replace = false;
  options.id = "fresh";
  EXPECT_OK(EnqueueInTransaction(app_->get(), "t", "p", options, kT0).status());
  ASSERT_TRUE(app_->Run("COMMIT"));
  EXPECT_OK(store_->Get("fresh").status());
  EXPECT_EQ(app_->Orders(), 1);
}

TEST(SqliteTransactionSchemaTest, AFileWithoutTheSchemaIsRefused) {
  const std::string path = testing::FreshDbPath("no_schema");
  AppDb app(path.c_str());
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("BEGIN"));
  EXPECT_THAT(
      EnqueueInTransaction(app.get(), "t", "p", JobOptions(), kT0).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("OpenSqliteBackend()")));
  ASSERT_TRUE(app.Run("COMMIT"));
}

TEST(SqliteTransactionSchemaTest, AnotherSchemaVersionIsRefused) {
  const std::string path = testing::FreshDbPath("old_schema");
  ASSERT_NE(OpenStore(path), nullptr);
  AppDb app(path);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("PRAGMA user_version = 3"));
  ASSERT_TRUE(app.Run("BEGIN"));
  EXPECT_THAT(
      EnqueueInTransaction(app.get(), "t", "p", JobOptions(), kT0).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("schema version 3")));
  ASSERT_TRUE(app.Run("ROLLBACK"));
  ASSERT_TRUE(app.Run("PRAGMA user_version = 999"));
  ASSERT_TRUE(app.Run("BEGIN"));
  EXPECT_THAT(
      EnqueueInTransaction(app.get(), "t", "p", JobOptions(), kT0).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("newer")));
  ASSERT_TRUE(app.Run("ROLLBACK"));
}

// News: at the commit, never for a rollback. A sentinel job added by the
// store after each step tells when everything before it has arrived.
TEST_F(SqliteTransactionTest, NewsComesAtTheCommitAndNeverForARollback) {
  std::unique_ptr<Backend> subscriber = OpenStore(path_);
  ASSERT_NE(subscriber, nullptr);
  NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(auto subscription,
                       subscriber->Subscribe(recorder.Callback()));
  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_OK(EnqueueInTransaction(app_->get(), "gone", "p", JobOptions(), kT0)
                .status());
  ASSERT_TRUE(app_->Run("ROLLBACK"));
  ASSERT_OK(store_->Add({TestJob("s1", "sentinel1", kT0)}, kT0));
  EXPECT_EQ(recorder.Next(), NewsRecorder::Ready("sentinel1"))
      << "nothing announced for the rollback";

  ASSERT_TRUE(app_->Run("BEGIN"));
  ASSERT_OK(EnqueueInTransaction(app_->get(), "kept", "p", JobOptions(), kT0)
                .status());
  EXPECT_EQ(recorder.Next(absl::Milliseconds(300)), "")
      << "nothing announced before the commit";
  ASSERT_TRUE(app_->Run("COMMIT"));
  EXPECT_EQ(recorder.Next(), NewsRecorder::Ready("kept"));
  // A later transaction of the connection that enqueues nothing announces
  // nothing: the hooks went with the commit.
  ASSERT_TRUE(app_->Run("INSERT INTO orders VALUES ('plain')"));
  ASSERT_OK(store_->Add({TestJob("s2", "sentinel2", kT0)}, kT0));
  EXPECT_EQ(recorder.Next(), NewsRecorder::Ready("sentinel2"));
}

// The connection's own WAL checkpointing is delayq's only while a
// transaction with jobs is open, and comes back as it was.
TEST_F(SqliteTransactionTest, TheConnectionsHooksComeBackAfterTheTransaction) {
  ASSERT_TRUE(app_->Run("PRAGMA wal_autocheckpoint = 123"));
  for (const char* end : {"COMMIT", "ROLLBACK"}) {
    ASSERT_TRUE(app_->Run("BEGIN"));
    ASSERT_OK(EnqueueInTransaction(app_->get(), absl::StrCat("t", end), "p",
                                   JobOptions(), kT0)
                  .status());
    EXPECT_EQ(app_->Int("PRAGMA wal_autocheckpoint"), 0)
        << "SQLite reports 0 under a WAL hook of another";
    ASSERT_TRUE(app_->Run(end));
    EXPECT_EQ(app_->Int("PRAGMA wal_autocheckpoint"), 123) << end;
  }
}

// A worker in another process whose scheduler looks at the store on its
// own only once an hour: only the commit's news can wake it.
TEST_F(SqliteTransactionTest, TheCommitWakesAWorkerInAnotherProcess) {
  auto worker = WorkerProcess::Start("sqlite:" + path_);
  ASSERT_NE(worker, nullptr);
  ASSERT_OK(worker->Run("reserve wake"));
  // "looked" may come before the command's "ok", from another thread.
  const std::vector<std::string>& said = worker->lines();
  if (std::find(said.begin(), said.end(), "looked") == said.end()) {
    ASSERT_TRUE(worker->NextStartingWith("looked", absl::Seconds(20)));
  }
  ASSERT_TRUE(app_->Run("BEGIN IMMEDIATE"));
  JobOptions options;
  options.id = "wake-1";
  ASSERT_OK(EnqueueInTransaction(app_->get(), "wake", "p", options, absl::Now())
                .status());
  const absl::Time committed = absl::Now();
  ASSERT_TRUE(app_->Run("COMMIT"));
  std::optional<std::string> got =
      worker->NextStartingWith("got ", absl::Seconds(20));
  ASSERT_TRUE(got.has_value()) << "the worker was not woken";
  EXPECT_THAT(*got, HasSubstr("wake-1"));
  EXPECT_LT(absl::Now() - committed, absl::Seconds(10));
}

// A process killed (SIGKILL) inside its open transaction, after its own row
// and its job were written: the file has neither.
TEST(SqliteTransactionCrashTest, AKillBeforeTheCommitLeavesNeither) {
  const std::string path = testing::FreshDbPath("in_tx_crash");
  ASSERT_NE(OpenStore(path), nullptr);
  {
    AppDb app(path);
    ASSERT_TRUE(app.ok());
  }
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    AppDb app(path);
    JobOptions options;
    options.id = "crash-1";
    const bool written =
        app.ok() && app.Run("BEGIN IMMEDIATE") &&
        app.Run("INSERT INTO orders VALUES ('crash-1')") &&
        EnqueueInTransaction(app.get(), "orders", "p", options, kT0).ok();
    if (!written) _exit(1);
    const char done = 'w';
    if (write(pipe_fds[1], &done, 1) != 1) _exit(1);
    raise(SIGKILL);
    _exit(1);
  }
  close(pipe_fds[1]);
  char said = 0;
  EXPECT_EQ(read(pipe_fds[0], &said, 1), 1) << "the child did not write";
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(said, 'w');
  std::unique_ptr<Backend> store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Get("crash-1"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("orders"));
  EXPECT_EQ(stats, TopicStats());
  AppDb app(path);
  ASSERT_TRUE(app.ok());
  EXPECT_EQ(app.Orders(), 0);
  // And the file takes the next transaction.
  ASSERT_TRUE(app.Run("BEGIN IMMEDIATE"));
  ASSERT_OK(EnqueueInTransaction(app.get(), "orders", "p", JobOptions(), kT0)
                .status());
  ASSERT_TRUE(app.Run("COMMIT"));
  ASSERT_OK_AND_ASSIGN(stats, store->Stats("orders"));
  EXPECT_EQ(stats.ready, 1);
}

}  // namespace
}  // namespace delayq
