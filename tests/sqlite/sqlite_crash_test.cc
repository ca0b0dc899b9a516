// Copyright delayq authors.
//
// A process that enqueues, reserves and acks on a SQLite file is killed with
// SIGKILL at random moments, again and again (tests/testing/crash_rounds.h):
// nothing is lost, no acknowledged job is back, and after each kill the
// file is intact. Processes that finish a batch's last jobs, and close it,
// are killed around that moment (tests/testing/batch_rounds.h): the
// completion job is released once, never lost.

#include <sqlite3.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/testing/batch_rounds.h"
#include "tests/testing/crash_rounds.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::BatchRounds;
using ::delayq::testing::CrashRounds;
using ::delayq::testing::FreshDbPath;
using ::delayq::testing::RunBatchRounds;
using ::delayq::testing::RunCrashRounds;

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return "cannot open";
  sqlite3_stmt* stmt = nullptr;
  std::string result = "no result";
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

TEST(SqliteCrashTest, KilledProcessLosesNothingAndAckedJobsStayGone) {
  const std::string path = FreshDbPath("crash");
  CrashRounds test;
  test.url = absl::StrCat("sqlite:", path, "?busy_timeout_ms=30000");
  test.open = [path]() -> std::unique_ptr<Backend> {
    SqliteOptions options;
    options.path = path;
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        OpenSqliteBackend(options);
    EXPECT_OK(backend.status());
    return backend.ok() ? *std::move(backend) : nullptr;
  };
  test.check_after_kill = [path] {
    const std::string integrity = IntegrityCheck(path);
    return integrity == "ok" ? "" : integrity;
  };
  RunCrashRounds(test);
}

TEST(SqliteCrashTest, KillsAroundABatchsLastAcksReleaseItsCompletionOnce) {
  const std::string path = FreshDbPath("batchcrash");
  BatchRounds test;
  test.url = absl::StrCat("sqlite:", path, "?busy_timeout_ms=30000");
  test.open = [path]() -> std::unique_ptr<Backend> {
    SqliteOptions options;
    options.path = path;
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        OpenSqliteBackend(options);
    EXPECT_OK(backend.status());
    return backend.ok() ? *std::move(backend) : nullptr;
  };
  test.kill = true;
  test.check_after_round = [path] {
    const std::string integrity = IntegrityCheck(path);
    return integrity == "ok" ? "" : integrity;
  };
  RunBatchRounds(test);
}

}  // namespace
}  // namespace delayq
