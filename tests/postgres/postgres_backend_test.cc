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
#include "absl/time/clock.h"
#include "backends/postgres/internal/insert_chunks.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/loopback_port.h"
#include "tests/testing/migrated_waiters.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::AddWaitersBeforeTheLists;
using ::delayq::testing::ExpectMigratedWaiters;
using ::delayq::testing::IsOkAndHolds;
using ::delayq::testing::PostgresServer;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TestJob;
using ::testing::ElementsAre;
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

// SQL that takes `schema` back to before the leaner indexes, counts and
// plain paths (schema version 9).
std::string WithoutLessWal(const std::string& schema) {
  std::string sql = absl::StrCat(
      "DROP INDEX ", schema, ".events_job; CREATE INDEX events_job ON ", schema,
      ".events (job_id, seq); CREATE INDEX jobs_topic_state ON ", schema,
      ".jobs (topic, state); CREATE INDEX transitions_recent_minute ON ",
      schema, ".transitions_recent (minute_us); ALTER TABLE ", schema,
      ".transitions_recent ");
  const char* columns[] = {"enqueued", "done",   "failed", "retried", "expired",
                           "dead",     "lapsed", "late0",  "late1",   "late2",
                           "late3",    "late4",  "late5"};
  bool first = true;
  for (const char* c : columns) {
    absl::StrAppend(&sql, first ? "" : ", ", "ALTER COLUMN ", c,
                    " TYPE bigint");
    first = false;
  }
  return absl::StrCat(sql, "; ALTER FUNCTION ", schema,
                      ".reserve_plain RESET ALL; ALTER FUNCTION ", schema,
                      ".ack_plain RESET ALL; ");
}

// SQL that takes `schema` back to before a batch's jobs left it with the
// batch (schema version 8).
std::string WithoutBatchMembership(const std::string& schema) {
  return absl::StrCat(WithoutLessWal(schema), "ALTER TABLE ", schema,
                      ".batch_jobs DROP CONSTRAINT batch_jobs_batch_fkey; "
                      "DROP INDEX ",
                      schema, ".batch_jobs_batch; ");
}

// SQL that takes `schema` back to before the plain paths (schema version
// 7), and what came after them.
std::string WithoutPlainPaths(const std::string& schema) {
  return absl::StrCat(WithoutBatchMembership(schema), "DROP FUNCTION ", schema,
                      ".ack_and_reserve_plain; DROP FUNCTION ", schema,
                      ".reserve_plain; DROP FUNCTION ", schema, ".ack_plain; ");
}

// SQL that takes `schema` back to before the lists of what jobs wait for
// (schema version 6), and what came after them.
std::string WithoutDependencyLists(const std::string& schema) {
  return absl::StrCat(
      WithoutPlainPaths(schema),
      "DROP TRIGGER job_after_leaves_with_its_job ON ", schema,
      ".jobs; DROP FUNCTION ", schema, ".job_after_leaves; DROP TABLE ", schema,
      ".job_after; ALTER TABLE ", schema, ".jobs DROP COLUMN after_count; ");
}

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
                       "timeout_ms=2500&answer_timeout_ms=7000&"
                       "max_idle_connections=3&counts=off"));
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
  EXPECT_EQ(options.answer_timeout, absl::Seconds(7));
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
           "postgres://u:Zq9secret@h/db?answer_timeout_ms=5",
           "postgres://u:Zq9secret",
           "postgres://u:Zq9?secret@h/db",
           "mysql://u:Zq9secret@h/db",
           // libpq takes C strings: a NUL would cut the value short.
           "postgres://u:Zq9%00junk@h/db",
           "postgres://u:Zq9secret@h/db%00other",
           "postgres://u:Zq9secret@h/db?sslmode=disable%00require",
           // Given before the '?' and after it: which would libpq take?
           "postgres://u:Zq9secret@h/db?dbname=other",
           "postgres://u:Zq9secret@h:5433/db?port=1",
           "postgres://u:Zq9secret@h/db?host=127.0.0.2",
           "postgres://u:Zq9secret@h/db?password=Zq9other",
           "postgres://u:Zq9secret@h/db?user=root",
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

TEST(InsertChunkEndsTest, SplitsPayloadsByTheirHexSize) {
  using postgres_internal::InsertChunkEnds;
  EXPECT_THAT(InsertChunkEnds({}, 100), ElementsAre());
  // A payload of n bytes takes 2n + 8 as hex in the array.
  EXPECT_THAT(InsertChunkEnds({10, 10, 10}, 100), ElementsAre(3u));
  EXPECT_THAT(InsertChunkEnds({20, 20, 20}, 100), ElementsAre(2u, 3u));
  // One payload over the bound goes alone.
  EXPECT_THAT(InsertChunkEnds({1, 500, 1}, 100), ElementsAre(1u, 2u, 3u));
}

// A batch whose payloads, as hex, are more than one statement carries is
// stored whole, in one transaction (PostgreSQL takes no value over 1 GiB,
// so 520 payloads of 1 MiB in one statement would be refused).
TEST_F(PostgresBackendTest, ABatchLargerThanOneStatementIsStoredWhole) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("big_batch"));
  ASSERT_NE(backend, nullptr);
  const size_t mib = size_t{1} << 20;
  const int n = static_cast<int>(postgres_internal::kInsertHexBytes / mib);
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back(TestJob(absl::StrCat("j", i), "t", kT0));
    jobs.back().payload = std::string(mib, static_cast<char>('a' + i % 26));
  }
  ASSERT_OK(backend->Add(jobs, kT0));
  for (int i : {0, n / 2, n - 1}) {
    ASSERT_OK_AND_ASSIGN(Job job, backend->Get(absl::StrCat("j", i)));
    EXPECT_EQ(job.payload, jobs[i].payload) << i;
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, n);
}

// An add sends its counts, its news and COMMIT right behind its INSERT, in
// one round trip. When the server refuses the insert, they go with it:
// nothing is added or counted, and the connection serves the next call.
TEST_F(PostgresBackendTest, AnAddWhoseInsertIsRefusedLeavesNothing) {
  const std::string schema = FreshSchema("refused_insert");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("before", "t", kT0)}, kT0));
  ASSERT_OK(server_->Psql(absl::StrCat(
      "CREATE FUNCTION ", schema,
      ".refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = "
      "'refused' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN "
      "NEW; END $$; CREATE TRIGGER refuse BEFORE INSERT ON ",
      schema, ".jobs FOR EACH ROW EXECUTE FUNCTION ", schema, ".refuse()")));

  const absl::Status refused =
      backend->Add({TestJob("refused", "t", kT0)}, kT0);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()), HasSubstr("refused by the test"));
  EXPECT_THAT(backend->Get("refused").status(),
              StatusIs(absl::StatusCode::kNotFound));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(backend->Add({TestJob(absl::StrCat("after", i), "t", kT0)}, kT0));
  }
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 4);
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 4);
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

// PostgreSQL's text is UTF-8: an id that is not names no job here, and is
// refused with a message that quotes no statement; an error that is not is
// kept with U+FFFD in place of its bad bytes, so the failure still counts.
TEST_F(PostgresBackendTest, TextThatIsNotUtf8IsRefusedOrMadeValid) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("utf8"));
  ASSERT_NE(backend, nullptr);
  const std::string bad_id = "job\xff";
  for (const absl::Status& s :
       {backend->Get(bad_id).status(), backend->Cancel(bad_id, kT0),
        backend->Add({TestJob(bad_id, "t", kT0)}, kT0)}) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(s.message()), HasSubstr("not UTF-8"));
    EXPECT_THAT(std::string(s.message()), Not(HasSubstr("SELECT")));
  }
  ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(
      backend->Fail("a", leases[0].token, "bad \xff byte", kT0, kT0).status());
  ASSERT_OK_AND_ASSIGN(Job job, backend->Get("a"));
  EXPECT_EQ(job.last_error, "bad \xEF\xBF\xBD byte");
}

// Settings a database or a role may carry (here through the URL's
// `options`, as `ALTER DATABASE ... SET` would give them) change nothing
// the store reads or does: bytea comes back in hex whatever
// bytea_output says, and transactions run READ COMMITTED whatever the
// default isolation is, so enqueues side by side all go in.
TEST_F(PostgresBackendTest, ADatabasesOwnSettingsChangeNothingTheStoreReads) {
  const std::string url =
      absl::StrCat(Url(FreshSchema("settings")),
                   "&options=-c%20bytea_output%3Descape%20"
                   "-c%20default_transaction_isolation%3Dserializable");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(url));
  const std::string bytes("bin\0ary\xff\x01", 9);
  NewJob job = TestJob("kept", "t", kT0);
  job.payload = bytes;
  job.keep_for = absl::Hours(1);
  job.keep_at_most = 10;
  ASSERT_OK(backend->Add({job}, kT0));
  ASSERT_OK_AND_ASSIGN(Job stored, backend->Get("kept"));
  EXPECT_EQ(stored.payload, bytes);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.payload, bytes);
  ASSERT_OK(backend->Ack("kept", leases[0].token, bytes, kT0));
  ASSERT_OK_AND_ASSIGN(Job done, backend->Get("kept"));
  EXPECT_EQ(done.result, bytes);

  std::vector<std::thread> producers;
  std::atomic<int> refused{0};
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < 100; ++i) {
        if (!backend
                 ->Add({TestJob(absl::StrCat("p", p, "-", i), "side", kT0)},
                       kT0)
                 .ok()) {
          ++refused;
        }
      }
    });
  }
  for (std::thread& t : producers) t.join();
  EXPECT_EQ(refused.load(), 0);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("side"));
  EXPECT_EQ(stats.ready, 400);
}

// A program that only reads (create_schema = false) finds no store where
// there is none, and leaves nothing behind.
TEST_F(PostgresBackendTest, AReaderCreatesNoSchema) {
  const std::string schema = FreshSchema("reader");
  ASSERT_OK_AND_ASSIGN(PostgresOptions options,
                       ParsePostgresUrl(server_->Url(schema)));
  options.create_schema = false;
  absl::StatusOr<std::unique_ptr<Backend>> missing =
      OpenPostgresBackend(options);
  EXPECT_THAT(missing.status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(schema));
  // Still none (had the first made it, this one would open it).
  EXPECT_THAT(OpenPostgresBackend(options).status(),
              StatusIs(absl::StatusCode::kNotFound));
  // Opening it to write creates it; then a reader opens it.
  options.create_schema = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> writer,
                       OpenPostgresBackend(options));
  ASSERT_OK(writer->Add({TestJob("a", "t", kT0)}, kT0));
  options.create_schema = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> reader,
                       OpenPostgresBackend(options));
  EXPECT_OK(reader->Get("a").status());
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

// A database that takes no writes (a standby, or read-only by its
// settings, given here through the URL's `options` as ALTER DATABASE or
// ALTER ROLE would give them) is the store not there for writes: the
// call is not at fault.
TEST_F(PostgresBackendTest, AReadOnlyDatabaseIsUnavailableForWrites) {
  const std::string schema = FreshSchema("read_only");
  ASSERT_NE(Open(schema), nullptr);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> backend,
      OpenBackend(absl::StrCat(
          Url(schema), "&options=-c%20default_transaction_read_only%3Don")));
  absl::Status status = backend->Add({TestJob("a", "t", kT0)}, kT0);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(status.message()), HasSubstr("read-only"));
  EXPECT_THAT(std::string(status.message()),
              Not(HasSubstr(PostgresServer::password())));
  EXPECT_THAT(backend->Get("a"), StatusIs(absl::StatusCode::kNotFound));
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

// Several idle connections, all ended by one restart: the call that finds
// the first one lost does not try the next idle one, which is lost too.
TEST_F(PostgresBackendTest, IdleConnectionsLostInARestartAreAllReplaced) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("idle_many"));
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("a", "t", kT0)}, kT0));
  // Calls at the same moment leave several connections idle in the pool.
  std::vector<std::thread> readers;
  for (int r = 0; r < 8; ++r) {
    readers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) backend->Get("a").IgnoreError();
    });
  }
  for (std::thread& t : readers) t.join();
  ASSERT_OK(server_->Restart());
  for (int i = 0; i < 4; ++i) {
    EXPECT_OK(backend->Add({TestJob(absl::StrCat("w", i), "t", kT0)}, kT0));
  }
  ASSERT_OK(server_->Restart());
  for (int i = 0; i < 4; ++i) EXPECT_OK(backend->Get("a").status());
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

// A schema of version 1 (no dependencies, no SQL function, no lease
// holders) opens with its jobs, migrated, and its jobs may then wait for
// others.
TEST_F(PostgresBackendTest, ASchemaOfVersion1IsMigrated) {
  const std::string schema = FreshSchema("v1");
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    ASSERT_OK(backend->Add({TestJob("old", "t", kT0)}, kT0));
  }
  ASSERT_OK(server_->Psql(absl::StrCat(
      WithoutDependencyLists(schema), "DROP TABLE ", schema, ".batch_jobs, ",
      schema, ".batches; ALTER TABLE ", schema, ".jobs DROP COLUMN holder, ",
      "DROP COLUMN reserved_at_us; DROP FUNCTION ", schema,
      ".enqueue; DROP TABLE ", schema, ".sql_id_prefix; DROP SEQUENCE ", schema,
      ".sql_id_serial; DROP TABLE ", schema, ".dependencies; DROP INDEX ",
      schema, ".jobs_waiting; ALTER TABLE ", schema,
      ".jobs DROP COLUMN dep_policy; UPDATE ", schema,
      ".schema_version SET version = 1")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  NewJob waiter = TestJob("waiter", "t", kT0);
  waiter.after = {"old"};
  ASSERT_OK(backend->Add({waiter}, kT0));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.waiting, 1);
}

// A schema of version 6 (no plain paths) is migrated with its jobs: a
// lease made before is acknowledged, the next job reserved and
// acknowledged, and the counts of both versions add up.
TEST_F(PostgresBackendTest, ASchemaOfVersion6GetsThePlainPaths) {
  const std::string schema = FreshSchema("v6");
  Lease before;
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    ASSERT_OK(backend->Add({TestJob("old", "t", kT0)}, kT0));
    ASSERT_OK(backend->Add({TestJob("next", "t", kT0)}, kT0));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("t", 1, kT0));
    ASSERT_EQ(leases.size(), 1u);
    before = leases[0];
  }
  ASSERT_OK(
      server_->Psql(absl::StrCat(WithoutPlainPaths(schema), "UPDATE ", schema,
                                 ".schema_version SET version = 6")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  const absl::Time later = kT0 + absl::Seconds(1);
  EXPECT_OK(backend->Ack(before.job.id, before.token, "", later));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 1, later));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "next");
  EXPECT_OK(backend->Ack(leases[0].job.id, leases[0].token, "", later));
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 2);
  EXPECT_EQ(totals[0].counts.delivered(), 2);
  EXPECT_EQ(totals[0].counts.done, 2);
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT version FROM ", schema,
      ".schema_version) <> 10 OR to_regproc('", schema,
      ".ack_plain') IS NULL OR to_regproc('", schema,
      ".reserve_plain') IS NULL OR to_regproc('", schema,
      ".ack_and_reserve_plain') IS NULL THEN RAISE 'not migrated'; END IF; "
      "END $$")));
}

// A schema of version 8 is migrated with its jobs, its unfolded counts and
// its event log: its states and topics read the same through the partial
// indexes, the counts of both versions add up, a job's events of both
// versions are found in order, and the plain paths keep their plans.
TEST_F(PostgresBackendTest, ASchemaOfVersion8IsMigratedToLeanerIndexes) {
  const std::string schema = FreshSchema("v7");
  const absl::Time later = kT0 + absl::Seconds(1);
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    NewJob last = TestJob("last", "a", kT0);
    last.max_attempts = 1;
    ASSERT_OK(backend->Add({last, TestJob("leased", "a", kT0)}, kT0));
    ASSERT_OK(backend->Add({TestJob("ready", "a", kT0),
                            TestJob("later", "b", kT0 + absl::Hours(1))},
                           kT0));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("a", 2, kT0));
    ASSERT_EQ(leases.size(), 2u);
    ASSERT_EQ(leases[0].job.id, "last");
    ASSERT_OK(
        backend->Fail("last", leases[0].token, "no", later, kT0).status());
    LoggedEvent event;
    event.type = EventType::kDead;
    event.id = "last";
    event.topic = "a";
    event.error = "no";
    ASSERT_OK(backend->AppendEvents({event}));
  }
  ASSERT_OK(
      server_->Psql(absl::StrCat(WithoutLessWal(schema), "UPDATE ", schema,
                                 ".schema_version SET version = 8")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK_AND_ASSIGN(TopicStats a, backend->Stats("a"));
  EXPECT_EQ(a.ready, 1);
  EXPECT_EQ(a.reserved, 1);
  EXPECT_EQ(a.dead, 1);
  EXPECT_EQ(a.delayed, 0);
  ASSERT_OK_AND_ASSIGN(TopicStats b, backend->Stats("b"));
  EXPECT_EQ(b.delayed, 1);
  EXPECT_EQ(b.ready, 0);
  EXPECT_THAT(backend->Topics(), IsOkAndHolds(ElementsAre("a", "b")));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("a", 1, later));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "ready");
  EXPECT_OK(backend->Ack("ready", leases[0].token, "", later));
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[0].counts.enqueued, 3);
  EXPECT_EQ(totals[0].counts.delivered(), 3);
  EXPECT_EQ(totals[0].counts.done, 1);
  EXPECT_EQ(totals[0].counts.dead, 1);
  EXPECT_EQ(totals[1].counts.enqueued, 1);
  LoggedEvent event;
  event.type = EventType::kSucceeded;
  event.id = "last";
  event.topic = "a";
  ASSERT_OK(backend->AppendEvents({event}));
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> events,
                       backend->JobEvents("last", 10));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, EventType::kDead);
  EXPECT_EQ(events[0].error, "no");
  EXPECT_EQ(events[1].type, EventType::kSucceeded);
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT version FROM ", schema,
      ".schema_version) <> 10 OR to_regclass('", schema,
      ".jobs_topic_state') IS NOT NULL OR to_regclass('", schema,
      ".transitions_recent_minute') IS NOT NULL OR (SELECT count(*) FROM "
      "information_schema.columns WHERE table_schema = '",
      schema,
      "' AND table_name = 'transitions_recent' AND data_type = 'integer') "
      "<> 13 OR (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = "
      "c.relam WHERE c.oid = to_regclass('",
      schema,
      ".events_job')) IS DISTINCT FROM 'hash' OR (SELECT proconfig FROM "
      "pg_proc WHERE oid = to_regproc('",
      schema,
      ".reserve_plain')) IS NULL OR (SELECT proconfig FROM pg_proc "
      "WHERE oid = to_regproc('",
      schema,
      ".ack_plain')) IS NULL THEN RAISE 'not migrated'; "
      "END IF; END $$")));
}

// The plain paths keep a reservation's counts, its lease deadline news and
// its tokens as the general path does: two leases of one call have
// consecutive tokens in the ready order, and a late delivery is counted in
// its lateness bucket.
TEST_F(PostgresBackendTest, APlainReservationCountsAndOrdersAsTheGeneralOne) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("plain"));
  ASSERT_NE(backend, nullptr);
  NewJob first = TestJob("first", "t", kT0);
  first.priority = 0;
  NewJob second = TestJob("second", "t", kT0);
  second.priority = 1;
  ASSERT_OK(backend->Add({second, first}, kT0));
  // Add() folded the counts of the minute: the calls of the minute that
  // follow may be plain.
  const absl::Time late = kT0 + absl::Seconds(2);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 2, late));
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].job.id, "first");
  EXPECT_EQ(leases[1].job.id, "second");
  EXPECT_EQ(leases[1].token, leases[0].token + 1);
  EXPECT_EQ(leases[0].deadline, late + first.ttr);
  ASSERT_OK_AND_ASSIGN(Job got, backend->Get("first"));
  EXPECT_EQ(got.state, JobState::kReserved);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_THAT(backend->Ack("first", leases[0].token + 7, "", late),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_OK(backend->Ack("first", leases[0].token, "", late));
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.done, 1);
  EXPECT_EQ(totals[0].counts.lateness[LatenessBucket(2'000'000)], 2);
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend->NextDue());
  EXPECT_EQ(next, late + second.ttr);
}

// Waits until the server's statistics hold what the store's closed
// connections did to `schema`.jobs and .events (a connection reports them
// when it ends, shortly after the store closed it): `check` is a condition
// of SQL on the tables' rows j and e of pg_stat_user_tables.
absl::Status AwaitTableStats(const PostgresServer& server,
                             const std::string& schema,
                             const std::string& check) {
  absl::Status status;
  testing::Eventually(absl::Seconds(10), [&] {
    status = server.Psql(absl::StrCat(
        "DO $$ BEGIN IF NOT (SELECT ", check,
        " FROM pg_stat_user_tables j, pg_stat_user_tables e WHERE "
        "j.schemaname = '",
        schema, "' AND j.relname = 'jobs' AND e.schemaname = '", schema,
        "' AND e.relname = 'events') THEN RAISE 'not yet'; END IF; END $$"));
    return status.ok();
  });
  return status;
}

// Rows read from `schema`'s table `table`, by scans of the table and of
// its indexes, as an SQL expression.
std::string RowsRead(const std::string& schema, const std::string& table) {
  return absl::StrCat(
      "(SELECT t.seq_tup_read + coalesce((SELECT sum(i.idx_tup_read) FROM "
      "pg_stat_user_indexes i WHERE i.relid = t.relid), 0) FROM "
      "pg_stat_user_tables t WHERE t.schemaname = '",
      schema, "' AND t.relname = '", table, "')");
}

// OK when the rows of `schema`.jobs read so far, by scans of the table and
// of its indexes, are at most `bound`.
absl::Status JobRowsReadAtMost(const PostgresServer& server,
                               const std::string& schema, int64_t bound) {
  return server.Psql(
      absl::StrCat("DO $$ DECLARE jobs bigint; BEGIN SELECT ",
                   RowsRead(schema, "jobs"), " INTO jobs; IF jobs > ", bound,
                   " THEN RAISE 'rows of jobs read: %', jobs; END IF; END $$"));
}

// A store of thousands of jobs and events still reserves, acknowledges and
// logs by reading a few rows per call: the plans the server keeps for the
// store's statements use the keys, whatever the tables' statistics say. (A
// reservation once looked through every job of its topic, and the log
// read all of its rows on every append, through plans made for any value.)
TEST_F(PostgresBackendTest, ABigStoreReservesAcksAndLogsReadingFewRows) {
  const std::string schema = FreshSchema("big");
  constexpr int kJobs = 30000, kEvents = 30000, kCalls = 25;
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    for (int first = 0; first < kJobs; first += 500) {
      std::vector<NewJob> jobs;
      for (int i = first; i < first + 500; ++i) {
        jobs.push_back(TestJob(absl::StrCat("j", i), "t", kT0));
      }
      ASSERT_OK(backend->Add(jobs, kT0));
    }
    for (int first = 0; first < kEvents; first += 1000) {
      std::vector<LoggedEvent> events(1000);
      for (int i = 0; i < 1000; ++i) {
        events[i].type = EventType::kEnqueued;
        events[i].id = absl::StrCat("j", (first + i) % kJobs);
        events[i].topic = "t";
        events[i].at = kT0;
      }
      ASSERT_OK(backend->AppendEvents(events));
    }
  }
  ASSERT_OK(AwaitTableStats(
      *server_, schema,
      absl::StrCat("j.n_tup_ins >= ", kJobs, " AND e.n_tup_ins >= ", kEvents)));
  // The calls read a few rows each, not thousands, with the statistics of
  // tables that just grew (a queue's tables grow and shrink faster than the
  // server's analysis follows them), and with fresh ones.
  const std::string read = absl::StrCat("public.", schema, "_read");
  auto call_and_count = [&](int round) {
    ASSERT_OK(server_->Psql(
        absl::StrCat("DROP TABLE IF EXISTS ", read, "; CREATE TABLE ", read,
                     " AS SELECT ", RowsRead(schema, "jobs"), " AS jobs, ",
                     RowsRead(schema, "events"), " AS events")));
    {
      std::unique_ptr<Backend> backend = Open(schema);
      ASSERT_NE(backend, nullptr);
      const absl::Time now = kT0 + absl::Seconds(1);
      for (int i = 0; i < kCalls; ++i) {
        ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                             backend->Reserve("t", 1, now));
        ASSERT_EQ(leases.size(), 1u);
        ASSERT_OK(backend->Ack(leases[0].job.id, leases[0].token, "", now));
        LoggedEvent event;
        event.type = EventType::kSucceeded;
        event.id = leases[0].job.id;
        event.topic = "t";
        event.at = now;
        ASSERT_OK(backend->AppendEvents({event}));
      }
    }
    ASSERT_OK(AwaitTableStats(
        *server_, schema,
        absl::StrCat("j.n_tup_del >= ", kCalls * round,
                     " AND e.n_tup_ins >= ", kEvents + kCalls * round)));
    ASSERT_OK(server_->Psql(absl::StrCat(
        "DO $$ DECLARE jobs bigint; events bigint; BEGIN SELECT ",
        RowsRead(schema, "jobs"), " - b.jobs, ", RowsRead(schema, "events"),
        " - b.events INTO jobs, events FROM ", read, " b; IF jobs > 200 * ",
        kCalls, " OR events > 20 * ", kCalls, " THEN RAISE 'round ", round,
        ": rows read: % of jobs, % of events', jobs, events; END IF; END $$")));
  };
  call_and_count(1);
  ASSERT_OK(server_->Psql(
      absl::StrCat("ANALYZE ", schema, ".jobs; ANALYZE ", schema, ".events")));
  call_and_count(2);
}

// A producer that starts on an empty store keeps adding by reading a few
// rows per job as the store grows: the plans its connection keeps were
// made when the tables were empty, and must still look jobs up by key.
// (The check for ids in use once scanned every job on each add.)
TEST_F(PostgresBackendTest, AProducerOfAGrowingStoreReadsFewRowsPerAdd) {
  const std::string schema = FreshSchema("growing");
  constexpr int kJobs = 2000;
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    for (int i = 0; i < kJobs; ++i) {
      ASSERT_OK(backend->Add({TestJob(absl::StrCat("j", i), "t", kT0)}, kT0));
    }
  }
  ASSERT_OK(AwaitTableStats(*server_, schema,
                            absl::StrCat("j.n_tup_ins >= ", kJobs)));
  ASSERT_OK(JobRowsReadAtMost(*server_, schema, 10 * kJobs));
}

// A worker that started on an empty store, and took its first jobs one at
// a time (its connections' plans made then), still reserves and
// acknowledges by key once a backlog has grown: a few rows read per call,
// not the whole backlog. On the plain paths, and on the general ones (a
// limited topic takes them).
class WorkerFirstTest : public PostgresBackendTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(WorkerFirstTest, AWorkerThatStartedOnAnEmptyStoreReadsFewRows) {
  const std::string schema = FreshSchema("worker_first");
  constexpr int kJobs = 3000, kCalls = 25;
  std::unique_ptr<Backend> worker = Open(schema);
  ASSERT_NE(worker, nullptr);
  // The server last saw the table empty (autovacuum analyzes a drained
  // queue).
  ASSERT_OK(server_->Psql(absl::StrCat("VACUUM ANALYZE ", schema, ".jobs")));
  if (GetParam()) {
    TopicLimit limit;
    limit.concurrency = 1000;
    ASSERT_OK(worker->SetLimit("t", limit, kT0));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> none, worker->Reserve("t", 1, kT0));
  ASSERT_TRUE(none.empty());
  {
    std::unique_ptr<Backend> producer = Open(schema);
    ASSERT_NE(producer, nullptr);
    // The first jobs come one at a time, and the worker takes each.
    for (int i = 0; i < 3; ++i) {
      const std::string id = absl::StrCat("early", i);
      ASSERT_OK(producer->Add({TestJob(id, "t", kT0)}, kT0));
      ASSERT_OK_AND_ASSIGN(std::vector<Lease> one,
                           worker->Reserve("t", 1, kT0));
      ASSERT_EQ(one.size(), 1u);
      ASSERT_OK(worker->Ack(id, one[0].token, "", kT0));
    }
    for (int first = 0; first < kJobs; first += 500) {
      std::vector<NewJob> jobs;
      for (int i = first; i < first + 500; ++i) {
        jobs.push_back(TestJob(absl::StrCat("j", i), "t", kT0));
      }
      ASSERT_OK(producer->Add(jobs, kT0));
    }
  }
  ASSERT_OK(AwaitTableStats(*server_, schema,
                            absl::StrCat("j.n_tup_ins >= ", kJobs)));
  const std::string read = absl::StrCat("public.", schema, "_read");
  ASSERT_OK(server_->Psql(absl::StrCat("CREATE TABLE ", read, " AS SELECT ",
                                       RowsRead(schema, "jobs"), " AS jobs")));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         worker->Reserve("t", 1, kT0));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_OK(worker->Ack(leases[0].job.id, leases[0].token, "", kT0));
  }
  worker.reset();
  ASSERT_OK(AwaitTableStats(*server_, schema,
                            absl::StrCat("j.n_tup_del >= ", kCalls + 3)));
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ DECLARE jobs bigint; BEGIN SELECT ", RowsRead(schema, "jobs"),
      " - b.jobs INTO jobs FROM ", read, " b; IF jobs > 200 * ", kCalls,
      " THEN RAISE 'rows of jobs read: %', jobs; END IF; END $$")));
}

INSTANTIATE_TEST_SUITE_P(PlainAndGeneral, WorkerFirstTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Limited" : "Plain";
                         });

// An application's session that calls enqueue() from the start of a store
// keeps reading a few rows per job as the store grows (its plans were made
// on the empty table, which the server had last seen empty: autovacuum
// analyzes a drained queue).
TEST_F(PostgresBackendTest, TheSqlFunctionReadsFewRowsAsTheStoreGrows) {
  const std::string schema = FreshSchema("sql_growing");
  constexpr int kJobs = 3000;
  ASSERT_NE(Open(schema), nullptr);
  ASSERT_OK(server_->Psql(absl::StrCat("VACUUM ANALYZE ", schema, ".jobs")));
  ASSERT_OK(server_->Psql(absl::StrCat("SELECT ", schema,
                                       ".enqueue('t', 'x'::bytea) FROM "
                                       "generate_series(1, ",
                                       kJobs, ")")));
  ASSERT_OK(AwaitTableStats(*server_, schema,
                            absl::StrCat("j.n_tup_ins >= ", kJobs)));
  ASSERT_OK(JobRowsReadAtMost(*server_, schema, 10 * kJobs));
  // With sequential scans off, a statement whose scan has no index (the
  // one-row table of the id prefix) is costed so high that the server
  // would compile it to machine code on every call; JIT is off too.
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF NOT (SELECT proconfig @> "
      "'{enable_seqscan=off,jit=off}' FROM pg_proc WHERE proname = "
      "'enqueue' AND pronamespace = '",
      schema,
      "'::regnamespace) THEN RAISE 'enqueue() may JIT'; END IF; "
      "END $$")));
}

// A process that reserves warms each connection up before its first use:
// the hot functions run once in a transaction rolled back, so a worker's
// first jobs do not wait for the server to compile and plan them. The
// warm-up keeps nothing; a process that only adds never runs it. (The
// session's function counts, kept by the server when the connection's
// own settings ask for them, show what ran.)
TEST_F(PostgresBackendTest, AWorkersConnectionIsWarmedUpAndKeepsNothing) {
  const std::string schema = FreshSchema("warm");
  const std::string url =
      absl::StrCat(Url(schema), "&options=-c%20track_functions%3Dpl");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> producer, OpenBackend(url));
    ASSERT_OK(producer->Add({TestJob("j", "t", kT0)}, kT0));
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> worker, OpenBackend(url));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         worker->Reserve("t", 1, kT0));
    ASSERT_EQ(leases.size(), 1u);
  }
  // Only the warm-up calls enqueue() and ack_and_reserve_plain() here:
  // the producer adds with statements of its own, and the worker never
  // acknowledged. One connection, warmed once.
  absl::Status status;
  testing::Eventually(absl::Seconds(10), [&] {
    status = server_->Psql(absl::StrCat(
        "DO $$ BEGIN IF (SELECT count(*) FROM pg_stat_user_functions WHERE "
        "schemaname = '",
        schema,
        "' AND funcname = 'ack_and_reserve_plain') = 0 THEN RAISE 'not yet'; "
        "END IF; END $$"));
    return status.ok();
  });
  ASSERT_OK(status);
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ DECLARE f record; BEGIN FOR f IN SELECT funcname, calls FROM "
      "pg_stat_user_functions WHERE schemaname = '",
      schema,
      "' AND funcname IN ('enqueue', 'ack_and_reserve_plain') LOOP IF "
      "f.calls <> 1 THEN RAISE '% ran % times', f.funcname, f.calls; END IF; "
      "END LOOP; END $$")));
  // Nothing of it stayed: one job, the one reserved; no count or event of
  // another topic.
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT count(*) FROM ", schema,
      ".jobs) <> 1 OR EXISTS (SELECT 1 FROM ", schema,
      ".jobs WHERE id <> 'j' OR state <> 2) OR EXISTS (SELECT 1 FROM ", schema,
      ".events WHERE topic <> 't') OR EXISTS (SELECT 1 FROM ", schema,
      ".transitions_recent WHERE topic <> 't') THEN RAISE 'the warm-up left "
      "rows'; END IF; END $$")));
}

// A plain reservation promotes the topic's delayed jobs whose run_at came
// and reports them; a worker's ack and next reservation go in one call,
// and a lease of a job that waits for others still hands on the results
// of its dependencies.
TEST_F(PostgresBackendTest, APlainAckAndReservePromotesAndHandsResultsOn) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("plainnext"));
  ASSERT_NE(backend, nullptr);
  NewJob kept = TestJob("kept", "t", kT0);
  kept.keep_for = absl::Minutes(5);
  kept.keep_at_most = 10;
  ASSERT_OK(backend->Add({TestJob("now", "t", kT0), kept}, kT0));
  ASSERT_OK(backend->Add({TestJob("soon", "t", kT0 + absl::Seconds(1))}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> first, backend->Reserve("t", 2, kT0));
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(first[1].job.id, "kept");
  ASSERT_OK(backend->Ack("kept", first[1].token, "result", kT0));
  NewJob waiter = TestJob("waiter", "t", kT0 + absl::Seconds(2));
  waiter.after = {"kept"};
  ASSERT_OK(backend->Add({waiter}, kT0));

  const absl::Time t1 = kT0 + absl::Seconds(1);
  ReserveReport report;
  AckReserved next =
      backend->AckAndReserve("now", first[0].token, "", "t", 1, t1, &report);
  EXPECT_OK(next.acked);
  ASSERT_OK(next.leases.status());
  ASSERT_EQ(next.leases->size(), 1u);
  EXPECT_EQ((*next.leases)[0].job.id, "soon");
  ASSERT_EQ(report.moved.size(), 1u);
  EXPECT_EQ(report.moved[0].id, "soon");
  EXPECT_EQ(report.moved[0].kind, Transition::Kind::kPromoted);
  EXPECT_THAT(backend->Get("now").status(),
              StatusIs(absl::StatusCode::kNotFound));

  const absl::Time t2 = kT0 + absl::Seconds(2);
  next = backend->AckAndReserve("soon", (*next.leases)[0].token, "", "t", 1, t2,
                                nullptr);
  EXPECT_OK(next.acked);
  ASSERT_OK(next.leases.status());
  ASSERT_EQ(next.leases->size(), 1u);
  EXPECT_EQ((*next.leases)[0].job.id, "waiter");
  EXPECT_EQ((*next.leases)[0].dependency_results.at("kept"), "result");
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.done, 3);
  EXPECT_EQ(totals[0].counts.delivered(), 4);
}

// Two transactions that ack a job's last two dependencies at once release
// it exactly once: neither may leave it waiting for the other's row, nor
// both release it.
TEST_F(PostgresBackendTest, DependenciesAckedAtOnceReleaseTheirDependantOnce) {
  std::unique_ptr<Backend> backend = Open(FreshSchema("flows"));
  ASSERT_NE(backend, nullptr);
  for (int round = 0; round < 20; ++round) {
    const std::string a = absl::StrCat("a", round);
    const std::string b = absl::StrCat("b", round);
    const std::string parent = absl::StrCat("parent", round);
    NewJob waiter = TestJob(parent, "parents", kT0);
    waiter.after = {a, b};
    ASSERT_OK(backend->Add(
        {TestJob(a, "children", kT0), TestJob(b, "children", kT0), waiter},
        kT0));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("children", 2, kT0));
    ASSERT_EQ(leases.size(), 2u);
    std::vector<std::thread> ackers;
    std::vector<absl::Status> acked(2);
    for (int i = 0; i < 2; ++i) {
      ackers.emplace_back([&, i] {
        acked[i] = backend->Ack(leases[i].job.id, leases[i].token, "", kT0);
      });
    }
    for (std::thread& t : ackers) t.join();
    for (const absl::Status& s : acked) ASSERT_OK(s);
    ASSERT_OK_AND_ASSIGN(Job job, backend->Get(parent));
    EXPECT_EQ(job.state, JobState::kReady) << "round " << round;
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> parents,
                         backend->Reserve("parents", 10, kT0));
    EXPECT_EQ(parents.size(), 1u) << "round " << round;
    for (const Lease& l : parents) {
      ASSERT_OK(backend->Ack(l.job.id, l.token, "", kT0));
    }
  }
}

// A schema of version 2 (before the SQL function) gets it on the next open.
TEST_F(PostgresBackendTest, ASchemaOfVersion2GetsTheSqlFunction) {
  const std::string schema = FreshSchema("v2");
  ASSERT_NE(Open(schema), nullptr);
  ASSERT_OK(server_->Psql(absl::StrCat(
      WithoutDependencyLists(schema), "DROP TABLE ", schema, ".batch_jobs, ",
      schema, ".batches; ALTER TABLE ", schema, ".jobs DROP COLUMN holder, ",
      "DROP COLUMN reserved_at_us; DROP FUNCTION ", schema,
      ".enqueue; DROP TABLE ", schema, ".sql_id_prefix; DROP SEQUENCE ", schema,
      ".sql_id_serial; UPDATE ", schema, ".schema_version SET version = 2")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(server_->Psql(absl::StrCat(
      "SELECT ", schema, ".enqueue('t', 'p'::bytea, id => 'after')")));
  EXPECT_OK(backend->Get("after").status());
}

// A schema of version 3 (no lease holders) is migrated with its jobs: a
// lease made before shows no holder; the next one has its holder and time.
TEST_F(PostgresBackendTest, ASchemaOfVersion3GetsLeaseHolders) {
  const std::string schema = FreshSchema("v3");
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
  ASSERT_OK(server_->Psql(absl::StrCat(
      WithoutDependencyLists(schema), "DROP TABLE ", schema, ".batch_jobs, ",
      schema, ".batches; ALTER TABLE ", schema, ".jobs DROP COLUMN holder, ",
      "DROP COLUMN reserved_at_us; UPDATE ", schema,
      ".schema_version SET version = 3")));
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

// A schema of version 5 kept only the dependencies still pending. Its
// waiting jobs open with those (the met ones are not known), in id order,
// are released as before and hand the results of those on; a job added
// since names all of its own, and takes them along when it leaves.
TEST_F(PostgresBackendTest, TheWaitingJobsOfASchemaOfVersion5AreMigrated) {
  const std::string schema = FreshSchema("v5");
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    ASSERT_NO_FATAL_FAILURE(AddWaitersBeforeTheLists(*backend, kT0));
  }
  ASSERT_OK(
      server_->Psql(absl::StrCat(WithoutDependencyLists(schema), "UPDATE ",
                                 schema, ".schema_version SET version = 5")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_NO_FATAL_FAILURE(
      ExpectMigratedWaiters(*backend, kT0 + absl::Seconds(1)));
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT count(*) FROM ", schema,
      ".job_after) <> 0 THEN RAISE 'job_after kept rows'; END IF; END $$")));
}

// A schema of version 7 kept the rows of batch_jobs of a batch dropped
// with its completion job. Version 8 deletes them, and from then on a batch
// takes its rows along when it leaves: a batch opened again under the id
// counts only its own jobs.
TEST_F(PostgresBackendTest, TheBatchMembersOfASchemaOfVersion7AreMigrated) {
  const std::string schema = FreshSchema("v7");
  NewJob member = TestJob("a", "t", kT0);
  member.batch = "batch";
  {
    std::unique_ptr<Backend> backend = Open(schema);
    ASSERT_NE(backend, nullptr);
    ASSERT_OK(backend->OpenBatch(TestJob("batch", "after", kT0), kT0));
    ASSERT_OK(backend->Add({member}, kT0));
  }
  // Dropped as by a cancel of version 7, which left the row of "a".
  ASSERT_OK(
      server_->Psql(absl::StrCat(WithoutBatchMembership(schema), "DELETE FROM ",
                                 schema, ".jobs WHERE id = 'batch'; UPDATE ",
                                 schema, ".schema_version SET version = 7")));
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT version FROM ", schema,
      ".schema_version) <> 10 OR (SELECT count(*) FROM ", schema,
      ".batch_jobs) <> 0 THEN RAISE 'not migrated'; END IF; END $$")));

  ASSERT_OK(backend->OpenBatch(TestJob("batch", "after", kT0), kT0));
  member.id = "b";
  ASSERT_OK(backend->Add({member}, kT0));
  ASSERT_OK(backend->Cancel("a", kT0));
  ASSERT_OK_AND_ASSIGN(Batch batch, backend->GetBatch("batch"));
  EXPECT_EQ(batch.total, 1);
  EXPECT_EQ(batch.cancelled, 0);
  ASSERT_OK(backend->Cancel("batch", kT0));
  ASSERT_OK(server_->Psql(absl::StrCat(
      "DO $$ BEGIN IF (SELECT count(*) FROM ", schema,
      ".batch_jobs) <> 0 THEN RAISE 'batch_jobs kept rows'; END IF; END $$")));
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
  bool Run(const std::string& sql) { return Run(sql.c_str()); }
  // The one value `sql` returns, or "error <SQLSTATE>".
  std::string Value(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    std::string value;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      value = PQgetvalue(r, 0, 0);
    } else {
      const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      value = absl::StrCat("error ", state != nullptr ? state : "");
    }
    PQclear(r);
    return value;
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

// The SQL function {schema}.enqueue(), called as code that does not link
// delayq would call it: the same job as EnqueueInTransaction() makes.
TEST_F(PostgresBackendTest, TheSqlFunctionStoresWhatTheLibraryStores) {
  const std::string schema = FreshSchema("sql_fn");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  JobOptions options;
  options.id = "lib-1";
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
  ASSERT_TRUE(app.Run("BEGIN"));
  ASSERT_OK(
      EnqueueInTransaction(app.get(), schema, "orders", "pq", options, kT0)
          .status());
  EXPECT_EQ(app.Value(absl::StrCat(
                "SELECT ", schema,
                ".enqueue('orders', 'pq'::bytea, id => 'sql-1', delay => "
                "'30 s', ttr => '7 s', priority => -2, max_attempts => 5, "
                "backoff => 'fixed', backoff_base => '3 s', backoff_jitter => "
                "0.25, expire_after => '5 min', discard_expired => true, "
                "unique_for => '1 min', keep_for => '2 min', keep_at_most => "
                "7, now_at => to_timestamp(1700000000))")),
            "sql-1");
  EXPECT_THAT(backend->Get("sql-1"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_TRUE(app.Run("COMMIT"));
  ASSERT_OK_AND_ASSIGN(Job from_library, backend->Get("lib-1"));
  ASSERT_OK_AND_ASSIGN(Job from_sql, backend->Get("sql-1"));
  EXPECT_EQ(from_sql.topic, from_library.topic);
  EXPECT_EQ(from_sql.payload, from_library.payload);
  EXPECT_EQ(from_sql.state, from_library.state);
  EXPECT_EQ(from_sql.run_at, from_library.run_at);
  EXPECT_EQ(from_sql.enqueued_at, from_library.enqueued_at);
  EXPECT_EQ(from_sql.ttr, from_library.ttr);
  EXPECT_EQ(from_sql.priority, from_library.priority);
  EXPECT_EQ(from_sql.max_attempts, from_library.max_attempts);
  EXPECT_EQ(from_sql.backoff, from_library.backoff);
  EXPECT_EQ(from_sql.expire_at, from_library.expire_at);
  EXPECT_EQ(from_sql.discard_expired, from_library.discard_expired);
  EXPECT_EQ(from_sql.unique_for, from_library.unique_for);
  EXPECT_EQ(from_sql.keep_for, from_library.keep_for);
  EXPECT_EQ(from_sql.keep_at_most, from_library.keep_at_most);
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 2);
}

TEST_F(PostgresBackendTest, TheSqlFunctionsDefaultsAreJobOptionsDefaults) {
  const std::string schema = FreshSchema("sql_defaults");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("BEGIN"));
  const std::string id =
      app.Value(absl::StrCat("SELECT ", schema, ".enqueue('t', 'p'::bytea)"));
  const std::string second = app.Value(
      absl::StrCat("SELECT ", schema, ".enqueue('t', 'p'::bytea, id => '')"));
  ASSERT_TRUE(app.Run("COMMIT"));
  // The library's form of a generated id: one prefix, serials from 1.
  EXPECT_THAT(id, ::testing::MatchesRegex("[0-9a-f]{12}-1"));
  EXPECT_EQ(second, absl::StrCat(id.substr(0, 12), "-2"));
  // A worker reserves it at once, with JobOptions' defaults.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 2, absl::Now()));
  ASSERT_EQ(leases.size(), 2u);
  const Job& job = leases[0].job;
  EXPECT_EQ(job.id, id);
  EXPECT_EQ(job.payload, "p");
  const JobOptions defaults;
  EXPECT_EQ(job.ttr, defaults.ttr);
  EXPECT_EQ(job.priority, defaults.priority);
  EXPECT_EQ(job.max_attempts, defaults.max_attempts);
  EXPECT_EQ(job.backoff, defaults.backoff);
  EXPECT_EQ(job.expire_at, absl::InfiniteFuture());
  EXPECT_EQ(job.keep_for, absl::ZeroDuration());
  EXPECT_LT(absl::Now() - job.enqueued_at, absl::Minutes(1));
}

TEST_F(PostgresBackendTest, TheSqlFunctionRollsBackAndRefusesBadInput) {
  const std::string schema = FreshSchema("sql_refusals");
  std::unique_ptr<Backend> backend = Open(schema);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({TestJob("taken", "t", kT0)}, kT0));
  AppConnection app(*server_);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(app.Run("BEGIN"));
  EXPECT_EQ(app.Value(absl::StrCat("SELECT ", schema,
                                   ".enqueue('t', 'p'::bytea, id => 'gone')")),
            "gone");
  ASSERT_TRUE(app.Run("ROLLBACK"));
  EXPECT_THAT(backend->Get("gone"), StatusIs(absl::StatusCode::kNotFound));
  const std::string f = absl::StrCat("SELECT ", schema, ".enqueue(");
  for (const char* bad :
       {"'bad topic!', 'p'::bytea", "'t', 'p'::bytea, ttr => '0 s'",
        "'t', 'p'::bytea, max_attempts => 0",
        "'t', 'p'::bytea, delay => '-1 s'",
        "'t', 'p'::bytea, backoff => 'linear'",
        "'t', 'p'::bytea, expire_after => '0 s'"}) {
    EXPECT_EQ(app.Value(absl::StrCat(f, bad, ")")), "error 22023") << bad;
  }
  EXPECT_EQ(app.Value(absl::StrCat(f, "'t', 'p'::bytea, id => 'taken')")),
            "error 23505");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 1);
}

}  // namespace
}  // namespace delayq
