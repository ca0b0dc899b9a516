// Copyright delayq authors.
//
// The SQLite backend against the conformance suite, each test on a fresh
// file.

#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;

INSTANTIATE_TEST_SUITE_P(Sqlite, BackendConformanceTest,
                         ::testing::Values(BackendFactory{
                             "sqlite",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               SqliteOptions options;
                               options.path =
                                   testing::FreshDbPath("conformance");
                               return OpenSqliteBackend(options);
                             }}),
                         BackendFactoryName);

}  // namespace
}  // namespace delayq
