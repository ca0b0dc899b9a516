// Copyright delayq authors.
//
// The multi-process suite on PostgreSQL: one server for the test binary,
// a fresh schema per case, shared by the worker processes through its URL.
// And processes that ack a batch's last jobs at the same moment
// (tests/testing/batch_rounds.h).

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/open.h"
#include "gtest/gtest.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/batch_rounds.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::FanInTest;
using ::delayq::testing::MultiProcessTest;
using ::delayq::testing::SharedStore;
using ::delayq::testing::SharedStoreName;
using ::delayq::testing::WakeupTest;

std::string FreshPostgresUrl() {
  static std::atomic<int> n{0};
  absl::StatusOr<testing::PostgresServer*> server =
      testing::SharedPostgresServer();
  if (!server.ok()) {
    ADD_FAILURE() << server.status();
    return "postgres-server-did-not-start:";
  }
  return (*server)->Url(absl::StrCat("multiprocess_", ++n));
}

// 20,000 jobs at a round trip a call take 60-95 s on a loaded 2-core
// machine: room for twice that.
const SharedStore kPostgres{"postgres", FreshPostgresUrl, absl::Seconds(200)};

INSTANTIATE_TEST_SUITE_P(Postgres, MultiProcessTest,
                         ::testing::Values(kPostgres), SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Postgres, WakeupTest, ::testing::Values(kPostgres),
                         SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Postgres, FanInTest, ::testing::Values(kPostgres),
                         SharedStoreName);

TEST(PostgresBatchTest, LastAcksOfSeveralProcessesAtOnceReleaseOnce) {
  testing::BatchRounds test;
  test.url = FreshPostgresUrl();
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
