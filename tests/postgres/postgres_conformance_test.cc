// Copyright delayq authors.
//
// The PostgreSQL backend against the conformance suite: one server for the
// test process (started by the test itself), each test on a fresh schema
// of its own.

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/postgres_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/testing/postgres_server.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;
using ::delayq::testing::BatchConformanceTest;
using ::delayq::testing::DependencyConformanceTest;
using ::delayq::testing::DependencyResultsTest;
using ::delayq::testing::PostgresServer;

// A store in a fresh schema, its URL ending in `params` ("&events=50").
absl::StatusOr<std::unique_ptr<Backend>> FreshStore(
    const std::string& params = "") {
  static std::atomic<int> stores{0};
  absl::StatusOr<PostgresServer*> server = testing::SharedPostgresServer();
  if (!server.ok()) return server.status();
  absl::StatusOr<PostgresOptions> options = ParsePostgresUrl(absl::StrCat(
      (*server)->Url(absl::StrCat("conformance_", ++stores)), params));
  if (!options.ok()) return options.status();
  return OpenPostgresBackend(*options);
}

INSTANTIATE_TEST_SUITE_P(Postgres, BackendConformanceTest,
                         ::testing::Values(BackendFactory{
                             "postgres", [] { return FreshStore(); }}),
                         BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, DependencyConformanceTest,
                         ::testing::Values(BackendFactory{
                             "postgres", [] { return FreshStore(); }}),
                         BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, BatchConformanceTest,
                         ::testing::Values(BackendFactory{
                             "postgres", [] { return FreshStore(); }}),
                         BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, DependencyResultsTest,
                         ::testing::Values(BackendFactory{
                             "postgres", [] { return FreshStore(); }}),
                         BackendFactoryName);

// The bound of the event log, given on the URL as users give it.
TEST(PostgresEventLogTest, KeepsTheNewestEventsWithinItsBound) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = FreshStore("&events=50");
  ASSERT_TRUE(backend.ok()) << backend.status();
  testing::CheckEventLogBound(**backend, 50, /*slack=*/0);
}

}  // namespace
}  // namespace delayq
