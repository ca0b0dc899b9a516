// Copyright delayq authors.
//
// News of the PostgreSQL store (Backend::Subscribe(), LISTEN/NOTIFY): the
// news conformance suite (tests/conformance/news_conformance.h) on a fresh
// schema, and what only this store does: a late subscriber hears the
// horizon first, a subscription that lost its connection says resync once
// it is back, and a job enqueued in the application's transaction is news
// when that transaction commits, not before.

#include <postgresql/libpq-fe.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/postgres_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/news_conformance.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsConformanceTest;
using ::delayq::testing::NewsPair;
using ::delayq::testing::NewsRecorder;
using ::delayq::testing::NewsStore;
using ::delayq::testing::PostgresServer;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

std::string FreshSchema() {
  static std::atomic<int> n{0};
  return absl::StrCat("news_", ++n);
}

absl::StatusOr<std::unique_ptr<Backend>> OpenSchema(const std::string& schema) {
  absl::StatusOr<PostgresServer*> server = testing::SharedPostgresServer();
  if (!server.ok()) return server.status();
  absl::StatusOr<PostgresOptions> options =
      ParsePostgresUrl((*server)->Url(schema));
  if (!options.ok()) return options.status();
  return OpenPostgresBackend(*options);
}

NewsPair OpenPair() {
  const std::string schema = FreshSchema();
  return testing::OpenNewsPair([schema] { return OpenSchema(schema); }, schema);
}

std::string Name(const ::testing::TestParamInfo<NewsStore>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Postgres, NewsConformanceTest,
                         ::testing::Values(NewsStore{"postgres", OpenPair}),
                         Name);

class PostgresNewsTest : public NewsConformanceTest {};

TEST_P(PostgresNewsTest, ALateSubscriberHearsTheHorizonFirst) {
  ASSERT_OK(store_->Add({MakeJob("d", "t", kT0 + absl::Seconds(42))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(42)));
  NewsRecorder late(kT0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> sub,
                       subscriber_->Subscribe(late.Callback()));
  EXPECT_EQ(late.Next(), Due(absl::Seconds(42)));
}

TEST_P(PostgresNewsTest, AfterARestartTheSubscriptionSaysResyncThenHearsNews) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  ASSERT_OK(server->Restart());
  EXPECT_EQ(recorder_.Next(absl::Seconds(20)), NewsRecorder::Resync());
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
}

TEST_P(PostgresNewsTest, AJobEnqueuedInATransactionIsNewsAtItsCommit) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  PGconn* app =
      PQconnectdb(absl::StrCat("host=127.0.0.1 port=", server->port(),
                               " dbname=postgres user=postgres password=",
                               PostgresServer::password())
                      .c_str());
  ASSERT_EQ(PQstatus(app), CONNECTION_OK) << PQerrorMessage(app);
  PQclear(PQexec(app, "BEGIN"));
  JobOptions options;
  options.id = Id("in-tx");
  ASSERT_OK(
      EnqueueInTransaction(app, where_, "tx", "p", options, kT0).status());
  // Nothing is announced before the commit: the sentinel's news comes
  // first.
  EXPECT_TRUE(Settle().empty());
  PQclear(PQexec(app, "COMMIT"));
  EXPECT_EQ(recorder_.Next(), Ready("tx"));
  PQfinish(app);
}

// The same through the SQL function, as code that does not link delayq.
TEST_P(PostgresNewsTest, TheSqlFunctionsJobIsNewsAtItsCommit) {
  ASSERT_OK_AND_ASSIGN(PostgresServer * server,
                       testing::SharedPostgresServer());
  PGconn* app =
      PQconnectdb(absl::StrCat("host=127.0.0.1 port=", server->port(),
                               " dbname=postgres user=postgres password=",
                               PostgresServer::password())
                      .c_str());
  ASSERT_EQ(PQstatus(app), CONNECTION_OK) << PQerrorMessage(app);
  PQclear(PQexec(app, "BEGIN"));
  PGresult* r = PQexec(
      app,
      absl::StrCat("SELECT ", where_, ".enqueue('sqltx', 'p'::bytea)").c_str());
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(app);
  PQclear(r);
  EXPECT_TRUE(Settle().empty());
  PQclear(PQexec(app, "COMMIT"));
  EXPECT_EQ(recorder_.Next(), Ready("sqltx"));
  // A rolled back one is not news.
  PQclear(PQexec(app, "BEGIN"));
  PQclear(PQexec(
      app, absl::StrCat("SELECT ", where_, ".enqueue('sqlgone', 'p'::bytea)")
               .c_str()));
  PQclear(PQexec(app, "ROLLBACK"));
  EXPECT_TRUE(Settle().empty());
  PQfinish(app);
}

INSTANTIATE_TEST_SUITE_P(Postgres, PostgresNewsTest,
                         ::testing::Values(NewsStore{"postgres", OpenPair}),
                         Name);

}  // namespace
}  // namespace delayq
