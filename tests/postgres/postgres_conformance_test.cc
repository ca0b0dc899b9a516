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
#include "tests/testing/postgres_server.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;
using ::delayq::testing::PostgresServer;

absl::StatusOr<std::unique_ptr<Backend>> FreshStore() {
  static std::atomic<int> stores{0};
  absl::StatusOr<PostgresServer*> server = testing::SharedPostgresServer();
  if (!server.ok()) return server.status();
  absl::StatusOr<PostgresOptions> options =
      ParsePostgresUrl((*server)->Url(absl::StrCat("conformance_", ++stores)));
  if (!options.ok()) return options.status();
  return OpenPostgresBackend(*options);
}

INSTANTIATE_TEST_SUITE_P(Postgres, BackendConformanceTest,
                         ::testing::Values(BackendFactory{"postgres",
                                                          FreshStore}),
                         BackendFactoryName);

}  // namespace
}  // namespace delayq
