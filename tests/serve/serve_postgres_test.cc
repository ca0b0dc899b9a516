// Copyright delayq authors.
//
// `delayq serve` on PostgreSQL when the store refuses the server itself:
// the credentials it was started with are no longer accepted, or its role
// was set read-only. The client did nothing wrong: the reply is 503
// UNAVAILABLE with a message that names the cause (and never the
// password), not 403 (kept for a client's cross-origin mistakes) or 500.
// Each test alters a role, so it runs a server of its own.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ServePostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, PostgresServer::Start());
    // Psql() works in the database "postgres": the store's schema is there.
    ASSERT_OK(
        db_->Psql("CREATE ROLE dq_app LOGIN PASSWORD 'Zq9-first'; "
                  "GRANT CREATE ON DATABASE postgres TO dq_app"));
    ASSERT_OK_AND_ASSIGN(serve_, ServeProcess::Start(absl::StrCat(
                                     "postgres://dq_app:Zq9-first@127.0.0.1:",
                                     db_->port(), "/postgres?schema=jobs")));
    client_ = std::make_unique<ApiClient>(serve_->port());
    ASSERT_EQ(client_->Post("/v1/topics/t/jobs", {{"payload", "p"}}).status,
              201);
  }

  // Ends the store's sessions, so that its next call connects again and
  // meets what changed.
  void EndSessions() {
    ASSERT_OK(
        db_->Psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE usename = 'dq_app'"));
  }

  static void ExpectUnavailable(const HttpReply& reply,
                                const std::string& cause) {
    EXPECT_EQ(reply.status, 503) << reply.body;
    EXPECT_EQ(reply.code(), "UNAVAILABLE") << reply.body;
    EXPECT_THAT(reply.json.value("message", ""), HasSubstr(cause));
    EXPECT_THAT(reply.body, Not(HasSubstr("Zq9")));
  }

  std::unique_ptr<PostgresServer> db_;
  std::unique_ptr<ServeProcess> serve_;
  std::unique_ptr<ApiClient> client_;
};

TEST_F(ServePostgresTest, ARefusedPasswordIsUnavailableNotForbidden) {
  ASSERT_OK(db_->Psql("ALTER ROLE dq_app PASSWORD 'Zq9-second'"));
  EndSessions();
  ExpectUnavailable(client_->Get("/v1/topics/t/stats"),
                    "password authentication failed");
  ExpectUnavailable(client_->Post("/v1/topics/t/jobs", {{"payload", "q"}}),
                    "password authentication failed");
}

TEST_F(ServePostgresTest, AReadOnlyRoleIsUnavailableForWrites) {
  ASSERT_OK(
      db_->Psql("ALTER ROLE dq_app SET default_transaction_read_only = on"));
  EndSessions();
  ExpectUnavailable(client_->Post("/v1/topics/t/jobs", {{"payload", "q"}}),
                    "read-only");
  // Reads still work.
  EXPECT_EQ(client_->Get("/v1/topics/t/stats").status, 200);
}

// A role without its rights on the store's tables (insufficient_privilege).
TEST_F(ServePostgresTest, MissingRightsAreUnavailableNotForbidden) {
  ASSERT_OK(db_->Psql("REVOKE ALL ON ALL TABLES IN SCHEMA jobs FROM dq_app"));
  ExpectUnavailable(client_->Get("/v1/topics/t/stats"), "permission denied");
}

}  // namespace
}  // namespace testing
}  // namespace delayq
