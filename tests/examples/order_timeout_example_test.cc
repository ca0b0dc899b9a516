// Copyright delayq authors.
//
// The README's "order row and its timeout job in one transaction" examples
// (tools/examples/order_timeout_*), run as the programs they are: each
// places an order, enqueues its timeout in the same transaction, reads the
// job back through a scheduler, and exits 0.

#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/child_process.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::ChildProcess;
using ::delayq::testing::PostgresServer;
using ::testing::HasSubstr;

// The example `name` in the test's runfiles.
std::string Example(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string path = "tools/examples/" + name;
  if (srcdir == nullptr || workspace == nullptr) return path;
  return absl::StrCat(srcdir, "/", workspace, "/", path);
}

TEST(OrderTimeoutExampleTest, Sqlite) {
  const std::string path = testing::FreshDbPath("shop");
  ChildProcess example({Example("order_timeout_sqlite"), path});
  ASSERT_TRUE(example.started());
  std::optional<std::string> said = example.ReadLine(absl::Seconds(60));
  ASSERT_TRUE(said.has_value()) << "the example said nothing";
  EXPECT_THAT(*said, HasSubstr("job cancel-order-"));
  EXPECT_THAT(*said, HasSubstr("(orders.cancel_unpaid)"));
  const int status = example.Finish();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(OrderTimeoutExampleTest, Postgres) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  ChildProcess example({Example("order_timeout_postgres"), server->Url("shop"),
                        absl::StrCat("host=127.0.0.1 port=", server->port(),
                                     " dbname=postgres user=postgres password=",
                                     PostgresServer::password())});
  ASSERT_TRUE(example.started());
  for (const char* kind : {"order-a", "order-b"}) {
    std::optional<std::string> said = example.ReadLine(absl::Seconds(60));
    ASSERT_TRUE(said.has_value()) << "the example said nothing of " << kind;
    EXPECT_THAT(*said, HasSubstr(absl::StrCat("job cancel-", kind)));
    EXPECT_THAT(
        *said, HasSubstr("orders.cancel_unpaid, payload " + std::string(kind)));
  }
  const int status = example.Finish();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace delayq
