// Copyright delayq authors.
//
// The multi-process suite on SQLite: every case on a fresh file in the
// test's temporary directory, shared by the processes through its path.

#include "gtest/gtest.h"
#include "tests/multiprocess/multiprocess_suite.h"
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

}  // namespace
}  // namespace delayq
