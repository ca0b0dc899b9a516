// Copyright delayq authors.
//
// The multi-process suite on SQLite: every case on a fresh file in the
// test's temporary directory, shared by the processes through its path.
// And processes that ack a batch's last jobs at the same moment
// (tests/testing/batch_rounds.h).

#include "delayq/open.h"
#include "gtest/gtest.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/batch_rounds.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::FanInTest;
using ::delayq::testing::MultiProcessTest;
using ::delayq::testing::SharedStore;
using ::delayq::testing::SharedStoreName;
using ::delayq::testing::WakeupTest;

// Writers wait for each other rather than fail: the cases put several
// processes' write transactions on one file at once.
const SharedStore kSqlite{
    "sqlite", [] {
      return "sqlite:" + testing::FreshDbPath("multiprocess") +
             "?busy_timeout_ms=30000";
    }};

INSTANTIATE_TEST_SUITE_P(Sqlite, MultiProcessTest, ::testing::Values(kSqlite),
                         SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Sqlite, WakeupTest, ::testing::Values(kSqlite),
                         SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Sqlite, FanInTest, ::testing::Values(kSqlite),
                         SharedStoreName);

TEST(SqliteBatchTest, LastAcksOfSeveralProcessesAtOnceReleaseOnce) {
  testing::BatchRounds test;
  test.url = kSqlite.fresh_url();
  test.open = [url = test.url]() -> std::unique_ptr<Backend> {
    absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
    EXPECT_OK(backend.status());
    return backend.ok() ? *std::move(backend) : nullptr;
  };
  test.rounds = 30;
  test.processes = 4;
  testing::RunBatchRounds(test);
}

}  // namespace
}  // namespace delayq
