// Copyright delayq authors.
//
// What only the PostgreSQL store does, on a real server the test starts:
// its URL, its errors (a refused password, a missing database, a server
// that is down), reconnecting after a restart, its schema's versions, and
// a job enqueued inside the application's own transaction.

#include <postgresql/libpq-fe.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback_port.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::PostgresServer;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TestJob;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A schema no other test of the process uses.
std::string FreshSchema(absl::string_view stem) {
  static std::atomic<int> n{0};
  return absl::StrCat(stem, "_", ++n);
}

class PostgresBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, testing::SharedPostgresServer());
  }

  std::string Url(absl::string_view schema) const {
    return server_->Url(schema);
  }

  std::unique_ptr<Backend> Open(absl::string_view schema) {
    absl::StatusOr<std::unique_ptr<Backend>> b = OpenBackend(Url(schema));
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *std::move(b) : nullptr;
  }

  PostgresServer* server_ = nullptr;
};

const std::string* Param(const PostgresOptions& options,
                         absl::string_view key) {
  for (const auto& [k, v] : options.params) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(ParsePostgresUrlTest, ReadsEveryPartAndPassesLibpqParametersThrough) {
  ASSERT_OK_AND_ASSIGN(
      PostgresOptions options,
      ParsePostgresUrl("postgres://app:p%40ss@db.internal:6432/jobs?schema=q&"
                       "sslmode=require&application_name=billing&"
                       "timeout_ms=2500&max_idle_connections=3&counts=off"));
  ASSERT_NE(Param(options, "user"), nullptr);
  EXPECT_EQ(*Param(options, "user"), "app");
  EXPECT_EQ(*Param(options, "password"), "p@ss");
  EXPECT_EQ(*Param(options, "host"), "db.internal");
  EXPECT_EQ(*Param(options, "port"), "6432");
  EXPECT_EQ(*Param(options, "dbname"), "jobs");
  EXPECT_EQ(*Param(options, "sslmode"), "require");
  EXPECT_EQ(*Param(options, "application_name"), "billing");
  EXPECT_EQ(options.schema, "q");
  EXPECT_EQ(options.timeout, absl::Milliseconds(2500));
  EXPECT_EQ(options.max_idle_connections, 3);
  EXPECT_FALSE(options.counts.enabled);

  ASSERT_OK_AND_ASSIGN(options,
                       ParsePostgresUrl("postgresql://h1:5433,[::1]/db"));
  EXPECT_EQ(*Param(options, "host"), "h1,::1");
  EXPECT_EQ(*Param(options, "port"), "5433,5432");
  EXPECT_EQ(options.schema, "delayq");

  // A socket folder as libpq's host parameter; no authority at all.
  ASSERT_OK_AND_ASSIGN(
      options, ParsePostgresUrl("postgres:///db?host=%2Frun%2Fpostgresql"));
  EXPECT_EQ(*Param(options, "host"), "/run/postgresql");
  EXPECT_EQ(*Param(options, "dbname"), "db");
}

TEST(ParsePostgresUrlTest, RefusesWhatItCannotReadWithoutThePassword) {
  for (const char* url : {
           "postgres://u:Zq9secret@h/db?bogus=1",
           "postgres://u:Zq9secret@h/db?schema=9lives",
           "postgres://u:Zq9secret@h/db?schema=a-b",
           "postgres://u:Zq9secret@h:99999/db",
           "postgres://u:Zq9secret@h/db?timeout_ms=5",
           "postgres://u:Zq9secret",
           "postgres://u:Zq9?secret@h/db",
           "mysql://u:Zq9secret@h/db",
           // libpq takes C strings: a NUL would cut the value short.
           "postgres://u:Zq9%00junk@h/db",
           "postgres://u:Zq9secret@h/db%00other",
           "postgres://u:Zq9secret@h/db?sslmode=disable%00require",
       }) {
    absl::Status status = ParsePostgresUrl(url).status();
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument)) << url;
    EXPECT_THAT(std::string(status.message()), Not(HasSubstr("Zq9"))) << url;
  }
  EXPECT_THAT(
      std::string(
          ParsePostgresUrl("postgres://h/db?bogus=1").status().message()),
      HasSubstr("bogus"));
}

// libpq sends text as C strings: an id with a NUL byte must not reach the
// server cut short, where it would name another job.
TEST_F(PostgresBackendTest, AnIdWithANulByteNamesNoOtherJob) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("nul"));
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("victim", "t", kT0)}, kT0));
  const std::string cut("victim\0junk", 11);
  EXPECT_THAT(backend->Get(cut).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(backend->Cancel(cut, kT0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK(backend->Get("victim").status());
}

TEST_F(PostgresBackendTest, OpenBackendTakesPostgresUrlsAndKeepsJobs) {
  const std::string schema = FreshSchema("open");
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    EXPECT_EQ(backend->Name(), "postgres");
    ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  }
  std::unique_ptr<Backend> again = Open(schema);
  ASSERT_NE(again, nullptr);
  ASSERT_OK_AND_ASSIGN(Job job, again->Get("a"));
  EXPECT_EQ(job.topic, "t");
  // postgresql:// is the same store.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> other,
      OpenBackend(absl::StrCat(
          "postgresql://postgres:", PostgresServer::password(),
          "@127.0.0.1:", server_->port(), "/postgres?schema=", schema)));
  EXPECT_OK(other->Get("a").status());
}

TEST_F(PostgresBackendTest, ARefusedPasswordIsPermissionDeniedAndNotShown) {
  absl::Status status =
      OpenBackend(absl::StrCat("postgres://postgres:Zq9-wrong@127.0.0.1:",
                               server_->port(), "/postgres"))
          .status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("Zq9")));
  EXPECT_THAT(std::string(status.message()), HasSubstr("127.0.0.1"));
}

TEST_F(PostgresBackendTest, AMissingDatabaseIsNotFound) {
  absl::Status status =
      OpenBackend(server_->Url("delayq", "no_such_database")).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(std::string(status.message()), HasSubstr("no_such_database"));
  EXPECT_THAT(std::string(status.message()),
              Not(HasSubstr(PostgresServer::password())));
}

TEST_F(PostgresBackendTest, AServerThatIsDownIsUnavailable) {
  // A port this process holds without listening: connections are refused.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_OK_AND_ASSIGN(int port, testing::BindLoopback(fd));
  absl::Status status =
      OpenBackend(absl::StrCat("postgres://postgres:Zq9pw@127.0.0.1:", port,
                               "/postgres"))
          .status();
  close(fd);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr("Zq9")));
}

TEST_F(PostgresBackendTest, CallsFailUnavailableWhileTheServerIsDownThenGoOn) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("restart"));
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("before", "t", kT0)}, kT0));
  ASSERT_OK(server_->Stop());
  EXPECT_THAT(backend->Get("before"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(backend->Add({TestJob("during", "t", kT0)}, kT0),
              StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_OK(server_->Restart());
  // The pool's connections died with the server: the store connects again.
  EXPECT_OK(backend->Get("before").status());
  ASSERT_OK(backend->Add({TestJob("after", "t", kT0)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 10, kT0));
  EXPECT_EQ(leases.size(), 2u);
}

TEST_F(PostgresBackendTest, AnIdleConnectionLostInARestartIsReplaced) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("idle"));
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  // The pool keeps its connection; the restart ends it on the server's
  // side. No call fails for it.
  ASSERT_OK(server_->Restart());
  EXPECT_OK(backend->Add({TestJob("b", "t", kT0)}, kT0));
  ASSERT_OK(server_->Restart());
  EXPECT_OK(backend->Get("a").status());
}

TEST_F(PostgresBackendTest, ASchemaOfANewerDelayqIsRefusedUntouched) {
  const std::string schema = FreshSchema("newer");
  ASSERT_NE(Open(schema), nullptr);
  ASSERT_OK(server_->Psql(
      absl::StrCat("UPDATE ", schema, ".schema_version SET version = 99")));
  absl::Status status = OpenBackend(Url(schema)).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(status.message()), HasSubstr("newer delayq"));
}

// A schema of version 1 (no lease holders) is migrated with its jobs: a
// lease made before shows no holder; the next one has its holder and time.
TEST_F(PostgresBackendTest, ASchemaOfVersion1IsMigrated) {
  const std::string schema = FreshSchema("v1");
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    ASSERT_OK(backend->Add({TestJob("old", "t", kT0)}, kT0));
    ASSERT_OK(backend->Add({TestJob("next", "t", kT0)}, kT0));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("t", 1, kT0));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_EQ(leases[0].job.id, "old");
  }
  ASSERT_OK(server_->Psql(
      absl::StrCat("ALTER TABLE ", schema, ".jobs DROP COLUMN holder, ",
                   "DROP COLUMN reserved_at_us; UPDATE ", schema,
                   ".schema_version SET version = 1")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK_AND_ASSIGN(Job old, backend->Get("old"));
  EXPECT_EQ(old.state, JobState::kReserved);
  EXPECT_EQ(old.holder, "");
  EXPECT_EQ(old.reserved_at, absl::InfinitePast());
  ReserveReport report;
  report.holder = "migrated:1";
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend->Reserve("t", 1, kT0 + absl::Seconds(1), &report));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Job next, backend->Get("next"));
  EXPECT_EQ(next.holder, "migrated:1");
  EXPECT_EQ(next.reserved_at, kT0 + absl::Seconds(1));
}

TEST_F(PostgresBackendTest, ASchemaWithOtherTablesIsRefused) {
  const std::string schema = FreshSchema("theirs");
  ASSERT_OK(
      server_->Psql(absl::StrCat("CREATE SCHEMA ", schema, "; CREATE TABLE ",
                                 schema, ".orders (id int)")));
  absl::Status status = OpenBackend(Url(schema)).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(status.message()), HasSubstr("not delayq's"));
}

TEST_F(PostgresBackendTest, StoresOpeningANewSchemaTogetherAllSucceed) {
  const std::string schema = FreshSchema("race");
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(6);
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = OpenBackend(Url(schema)).status(); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_OK(s);
}

// A connection of the application's own, as it would have.
class AppConnection {
 public:
  explicit AppConnection(const PostgresServer& server)
      : conn_(
            PQconnectdb(absl::StrCat("host=127.0.0.1 port=", server.port(),
                                     " dbname=postgres user=postgres password=",
                                     PostgresServer::password())
                            .c_str())) {}
  ~AppConnection() { PQfinish(conn_); }
  PGconn* get() const { return conn_; }
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }
  // Runs `sql`; whether it succeeded.
  bool Run(const char* sql) {
    PGresult* r = PQexec(conn_, sql);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
                    PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
  }

 private:
  PGconn* conn_;
};

TEST_F(PostgresBackendTest, AJobEnqueuedInACommittedTransactionExists) {
  const std::string schema = FreshSchema("in_tx");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("BEGIN"));
  JobOptions options;
  options.id = "order-42";
  options.delay = absl::Seconds(30);
  options.ttr = absl::Seconds(7);
  options.priority = -2;
  options.max_attempts = 5;
  options.backoff = Backoff::Fixed(absl::Seconds(3)).WithJitter(0.25);
  options.expire_after = absl::Minutes(5);
  options.discard_expired = true;
  options.unique_for = absl::Minutes(1);
  options.keep_for = absl::Minutes(2);
  options.keep_at_most = 7;
  ASSERT_OK_AND_ASSIGN(
      std::string id,
      EnqueueInTransaction(app.get(), schema, "orders", std::string("p\0q", 3),
                           options, kT0));
  EXPECT_EQ(id, "order-42");
  // Not there for anyone else until the commit.
  EXPECT_THAT(backend->Get(id), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_TRUE(app.Run("COMMIT"));
  ASSERT_OK_AND_ASSIGN(Job job, backend->Get(id));
  EXPECT_EQ(job.topic, "orders");
  EXPECT_EQ(job.payload, std::string("p\0q", 3));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.run_at, kT0 + absl::Seconds(30));
  EXPECT_EQ(job.enqueued_at, kT0);
  EXPECT_EQ(job.ttr, absl::Seconds(7));
  EXPECT_EQ(job.priority, -2);
  EXPECT_EQ(job.max_attempts, 5);
  EXPECT_EQ(job.backoff, options.backoff);
  EXPECT_EQ(job.expire_at, kT0 + absl::Minutes(5));
  EXPECT_TRUE(job.discard_expired);
  EXPECT_EQ(job.unique_for, absl::Minutes(1));
  EXPECT_EQ(job.keep_for, absl::Minutes(2));
  EXPECT_EQ(job.keep_at_most, 7);
  // Counted like any other enqueue.
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 1);
}

TEST_F(PostgresBackendTest, AJobEnqueuedInARolledBackTransactionDoesNot) {
  const std::string schema = FreshSchema("rolled_back");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("BEGIN"));
  ASSERT_OK_AND_ASSIGN(std::string id,
                       EnqueueInTransaction(app.get(), schema, "orders", "p",
                                            JobOptions(), kT0));
  EXPECT_FALSE(id.empty()) << "a generated id";
  ASSERT_TRUE(app.Run("ROLLBACK"));
  EXPECT_THAT(backend->Get(id), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("orders"));
  EXPECT_EQ(stats, TopicStats());
}

TEST_F(PostgresBackendTest, ARefusedEnqueueLeavesTheTransactionUsable) {
  const std::string schema = FreshSchema("refused");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("taken", "t", kT0)}, kT0));
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  JobOptions options;
  options.id = "taken";
  // No transaction open.
  EXPECT_THAT(
      EnqueueInTransaction(app.get(), schema, "t", "p", options, kT0).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_TRUE(app.Run("BEGIN"));
  EXPECT_THAT(
      EnqueueInTransaction(app.get(), schema, "t", "p", options, kT0).status(),
      StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(EnqueueInTransaction(app.get(), schema, "bad topic!", "p",
                                   JobOptions(), kT0)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options.id = "fresh";
  EXPECT_OK(
      EnqueueInTransaction(app.get(), schema, "t", "p", options, kT0).status());
  ASSERT_TRUE(app.Run("COMMIT"));
  EXPECT_OK(backend->Get("fresh").status());
}

}  // namespace
}  // namespace delayq
