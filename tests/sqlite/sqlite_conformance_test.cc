// Copyright delayq authors.
//
// The SQLite backend against the conformance suite, each test on a fresh
// file.

#include "absl/strings/str_cat.h"
#include "delayq/open.h"
#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;
using ::delayq::testing::BatchConformanceTest;
using ::delayq::testing::DependencyConformanceTest;
using ::delayq::testing::DependencyResultsTest;

const BackendFactory kSqlite{
    "sqlite", []() -> absl::StatusOr<std::unique_ptr<Backend>> {
      SqliteOptions options;
      options.path = testing::FreshDbPath("conformance");
      return OpenSqliteBackend(options);
    }};

INSTANTIATE_TEST_SUITE_P(Sqlite, BackendConformanceTest,
                         ::testing::Values(kSqlite), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, DependencyConformanceTest,
                         ::testing::Values(kSqlite), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, BatchConformanceTest,
                         ::testing::Values(kSqlite), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, DependencyResultsTest,
                         ::testing::Values(kSqlite), BackendFactoryName);

// The bound of the event log, given on the URL as users give it.
TEST(SqliteEventLogTest, KeepsTheNewestEventsWithinItsBound) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(
      absl::StrCat("sqlite:", testing::FreshDbPath("events"), "?events=50"));
  ASSERT_TRUE(backend.ok()) << backend.status();
  testing::CheckEventLogBound(**backend, 50, /*slack=*/0);
}

}  // namespace
}  // namespace delayq
