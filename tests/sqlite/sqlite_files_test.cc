// Copyright delayq authors.
//
// Opening the SQLite backend on files and paths that are not a healthy
// delayq database: each is refused with a clear status naming the path, and
// a file that is not delayq's is left byte-for-byte as it was.

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/sqlite_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/files.h"
#include "tests/testing/migrated_waiters.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

// The schema version a file opened by this build has.
constexpr int64_t kLatestVersion = 18;

// Takes a file back to before a batch's jobs left it with the batch
// (schema version 18).
#define DQ_WITHOUT_BATCH_MEMBERSHIP                  \
  "DROP TRIGGER batch_jobs_leave_with_their_batch; " \
  "DROP INDEX batch_jobs_batch;"

// Takes a file back to before the lists of what jobs wait for (schema
// version 17), and so before version 18.
#define DQ_WITHOUT_DEPENDENCY_LISTS                                    \
  DQ_WITHOUT_BATCH_MEMBERSHIP                                          \
  "DROP TRIGGER job_after_leaves_with_its_job; DROP TABLE job_after; " \
  "ALTER TABLE jobs DROP COLUMN after_count;"

// Takes a file back to before topic_counts (schema version 16), and so
// before the lists of what jobs wait for: the job counts per state in
// counts and the recent minutes in transitions_recent, each a table of its
// own, kept by the triggers of version 3.
#define DQ_WITHOUT_TOPIC_COUNTS                                              \
  DQ_WITHOUT_DEPENDENCY_LISTS                                                \
  "CREATE TABLE counts (topic TEXT NOT NULL, state INTEGER NOT NULL, "       \
  "  n INTEGER NOT NULL, PRIMARY KEY (topic, state)) WITHOUT ROWID;"         \
  "INSERT INTO counts SELECT topic, state, n FROM topic_counts "             \
  "  WHERE minute_us = -1;"                                                  \
  "CREATE TABLE transitions_recent (minute_us INTEGER NOT NULL, "            \
  "  topic TEXT NOT NULL, enqueued INTEGER NOT NULL, done INTEGER NOT NULL," \
  "  failed INTEGER NOT NULL, retried INTEGER NOT NULL, "                    \
  "  expired INTEGER NOT NULL, dead INTEGER NOT NULL, "                      \
  "  lapsed INTEGER NOT NULL, late0 INTEGER NOT NULL, "                      \
  "  late1 INTEGER NOT NULL, late2 INTEGER NOT NULL, "                       \
  "  late3 INTEGER NOT NULL, late4 INTEGER NOT NULL, "                       \
  "  late5 INTEGER NOT NULL, PRIMARY KEY (minute_us, topic)) WITHOUT ROWID;" \
  "INSERT INTO transitions_recent SELECT minute_us, topic, enqueued, done, " \
  "  failed, retried, expired, dead, lapsed, late0, late1, late2, late3, "   \
  "  late4, late5 FROM topic_counts WHERE state = -1;"                       \
  "DROP TRIGGER jobs_count_insert; DROP TRIGGER jobs_count_delete; "         \
  "DROP TRIGGER jobs_count_update; DROP TABLE topic_counts;"                 \
  "CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN "             \
  "  INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1) " \
  "    ON CONFLICT (topic, state) DO UPDATE SET n = n + 1; "                 \
  "END;"                                                                     \
  "CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN "             \
  "  UPDATE counts SET n = n - 1 "                                           \
  "    WHERE topic = OLD.topic AND state = OLD.state; "                      \
  "  DELETE FROM counts "                                                    \
  "    WHERE topic = OLD.topic AND state = OLD.state AND n = 0; "            \
  "END;"                                                                     \
  "CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs "          \
  "  WHEN OLD.state <> NEW.state BEGIN "                                     \
  "  UPDATE counts SET n = n - 1 "                                           \
  "    WHERE topic = OLD.topic AND state = OLD.state; "                      \
  "  DELETE FROM counts "                                                    \
  "    WHERE topic = OLD.topic AND state = OLD.state AND n = 0; "            \
  "  INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1) " \
  "    ON CONFLICT (topic, state) DO UPDATE SET n = n + 1; "                 \
  "END;"

// Takes a file back to before batches (schema version 15), and so before
// topic_counts.
#define DQ_WITHOUT_BATCHES                              \
  DQ_WITHOUT_TOPIC_COUNTS                               \
  "DROP TRIGGER batch_leaves_with_its_completion_job; " \
  "DROP TABLE batch_jobs; DROP TABLE batches;"

// Takes a file back to before lease holders (schema version 14), and so
// before batches.
#define DQ_WITHOUT_HOLDERS               \
  DQ_WITHOUT_BATCHES                     \
  "ALTER TABLE jobs DROP COLUMN holder;" \
  "ALTER TABLE jobs DROP COLUMN reserved_at_us;"

// Takes a file back to before dependencies (schema version 13), and so
// before lease holders.
#define DQ_WITHOUT_DEPENDENCIES                                  \
  DQ_WITHOUT_HOLDERS                                             \
  "DROP INDEX dependencies_dependant; DROP TABLE dependencies; " \
  "DROP INDEX jobs_waiting; "                                    \
  "ALTER TABLE jobs DROP COLUMN dep_policy;"

// Takes a file back to before the event log (schema version 12), and so
// before dependencies.
#define DQ_WITHOUT_EVENT_LOG \
  DQ_WITHOUT_DEPENDENCIES "DROP INDEX events_job; DROP TABLE events;"

// Takes a file's jobs table back to before done jobs (schema version 11),
// and so before the event log.
constexpr char kWithoutDoneJobs[] = DQ_WITHOUT_EVENT_LOG R"sql(
    DROP INDEX jobs_done;
    DROP INDEX jobs_leaving;
    ALTER TABLE jobs DROP COLUMN result;
    ALTER TABLE jobs DROP COLUMN finished_at_us;
    ALTER TABLE jobs DROP COLUMN keep_for_us;
    ALTER TABLE jobs DROP COLUMN keep_at_most;
)sql";

using ::delayq::testing::AddWaitersBeforeTheLists;
using ::delayq::testing::ExpectMigratedWaiters;
using ::delayq::testing::FreshDbPath;
using ::delayq::testing::ReadFile;
using ::delayq::testing::StatusIs;
using ::delayq::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

absl::StatusOr<std::unique_ptr<Backend>> Open(const std::string& path) {
  SqliteOptions options;
  options.path = path;
  return OpenSqliteBackend(options);
}

NewJob Job1() {
  NewJob job;
  job.id = "a";
  job.topic = "t";
  job.run_at = kNow;
  return job;
}

// The page size recorded in a database file's header (bytes 16-17, big
// endian; 1 stands for 65536).
size_t PageSizeOf(const std::string& data) {
  if (data.size() < 18) return 0;
  const size_t v = (static_cast<unsigned char>(data[16]) << 8) |
                   static_cast<unsigned char>(data[17]);
  return v == 1 ? 65536 : v;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Runs `sql` on `path` with a plain SQLite connection.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// The first column of the first row of `sql`, -1 if there is none.
int64_t RawQueryInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t value = -1;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

// A delayq file with `n` jobs, closed (so its WAL is checkpointed away).
std::string MakeDelayqFile(int n) {
  const std::string path = FreshDbPath("files");
  auto backend = Open(path);
  EXPECT_OK(backend);
  std::vector<NewJob> jobs(n);
  for (int i = 0; i < n; ++i) {
    jobs[i].id = absl::StrCat("job-", i);
    jobs[i].topic = "t";
    jobs[i].payload = std::string(200, 'x');
    jobs[i].run_at = kNow;
  }
  EXPECT_OK((*backend)->Add(jobs, kNow));
  return path;
}

TEST(SqliteFilesTest, CreatesNewFileAndReopensIt) {
  const std::string path = MakeDelayqFile(3);
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 3);
}

TEST(SqliteFilesTest, InitialisesAnEmptyFile) {
  const std::string path = FreshDbPath("empty");
  WriteFile(path, "");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_OK(backend->Add({Job1()}, kNow));
}

TEST(SqliteFilesTest, InitialisesAnEmptySqliteDatabase) {
  const std::string path = FreshDbPath("empty-db");
  // A valid database file with no tables left in it.
  RawExec(path, "CREATE TABLE x (a); DROP TABLE x;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_OK(backend->Add({Job1()}, kNow));
}

TEST(SqliteFilesTest, RefusesAFileThatIsNotSqlite) {
  const std::string path = FreshDbPath("text");
  const std::string text(5000, 'z');
  WriteFile(path, text);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
  EXPECT_THAT(backend.status().message(), HasSubstr("not a SQLite database"));
  EXPECT_EQ(ReadFile(path), text);
  EXPECT_FALSE(Exists(path + "-wal"));
}

TEST(SqliteFilesTest, RefusesSomeoneElsesDatabaseWithoutTouchingIt) {
  const std::string path = FreshDbPath("other");
  RawExec(path,
          "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ann');");
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
  EXPECT_THAT(backend.status().message(), HasSubstr("not a delayq database"));
  EXPECT_EQ(ReadFile(path), before);
  EXPECT_FALSE(Exists(path + "-wal"));
}

TEST(SqliteFilesTest, RefusesANewerSchemaWithoutTouchingIt) {
  const std::string path = MakeDelayqFile(2);
  RawExec(path, "PRAGMA user_version = 99;");
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
  EXPECT_THAT(backend.status().message(), HasSubstr("newer"));
  EXPECT_EQ(ReadFile(path), before);
}

// A file written by the first release (schema version 1: no news horizon,
// counts rows kept at 0, indexes that name seq, no paused topics, no
// expiry, dedup windows, limits, schedules, transition counts or done
// jobs) opens, keeps its jobs and is brought up to date.
TEST(SqliteFilesTest, MigratesAFileOfTheFirstVersion) {
  const std::string path = MakeDelayqFile(2);
  RawExec(path, absl::StrCat(kWithoutDoneJobs, R"sql(
    DROP TABLE transitions_recent;
    DROP TABLE transitions;
    DROP TABLE schedules;
    DROP TABLE limits;
    DROP TABLE held_ids;
    ALTER TABLE jobs DROP COLUMN expire_at_us;
    ALTER TABLE jobs DROP COLUMN discard_expired;
    ALTER TABLE jobs DROP COLUMN unique_for_us;
    DROP TABLE paused;
    DROP INDEX jobs_ready;
    CREATE INDEX jobs_ready ON jobs (topic, priority, run_at_us, seq)
      WHERE state = 1;
    DROP INDEX jobs_topic_due;
    CREATE INDEX jobs_topic_due ON jobs (topic, state, due_us, seq)
      WHERE due_us IS NOT NULL;
    DROP TABLE news_horizon;
    DROP TRIGGER jobs_count_delete;
    DROP TRIGGER jobs_count_update;
    CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
      UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
    END;
    CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
      WHEN OLD.state <> NEW.state BEGIN
      UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
      INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1)
        ON CONFLICT (topic, state) DO UPDATE SET n = n + 1;
    END;
    INSERT INTO counts (topic, state, n) VALUES ('gone', 1, 0);
    PRAGMA user_version = 1;
  )sql"));
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend->Topics());
  ASSERT_EQ(topics.size(), 1u);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats(topics[0]));
  EXPECT_EQ(stats.total(), 2);
  ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve(topics[0], 2, kNow));
  ASSERT_EQ(leases.size(), 2u);
  for (const Lease& l : leases)
    ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", kNow));
  backend.reset();
  // Nothing left: no counts row, and the schema is the current one.
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT count(*) FROM topic_counts "
                        "WHERE minute_us = -1"),
            0);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM news_horizon"), 1);
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  // The jobs worked since are counted (in their minute, not yet folded).
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT sum(done) FROM (SELECT done FROM transitions "
                        "WHERE minute_us = -1 UNION ALL SELECT done FROM "
                        "topic_counts WHERE state = -1)"),
            2);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM paused"), 0);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM held_ids"), 0);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM limits"), 0);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM schedules"), 0);
  // Version 4's indexes no longer name seq, the rowid every index ends with.
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT count(*) FROM sqlite_master WHERE type = "
                        "'index' AND name LIKE 'jobs_%' AND sql LIKE '%seq%'"),
            0);
}

// A file of version 9 kept each topic's totals (minute -1) beside its
// minutes, both written by every transaction. Version 10 writes the minute
// only and folds it into the totals later: the counts of version 9 read as
// they were, and the work done since adds to them.
TEST(SqliteFilesTest, MigratesTheCountsOfVersion9) {
  const std::string path = MakeDelayqFile(2);
  const int64_t minute_us = absl::ToUnixMicros(MinuteOf(kNow)) - 60'000'000;
  RawExec(path, absl::StrCat(kWithoutDoneJobs, R"sql(
    DROP TABLE transitions_recent;
    DELETE FROM transitions;
    INSERT INTO transitions VALUES ()sql",
                             minute_us, R"sql(, 't', 7, 4, 0, 0, 0, 0, 0,
                                    4, 0, 0, 0, 0, 0);
    INSERT INTO transitions VALUES (-1, 't', 9, 5, 1, 1, 0, 0, 0,
                                    6, 0, 0, 0, 0, 0);
    PRAGMA user_version = 9;
  )sql"));
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 9);
  EXPECT_EQ(totals[0].counts.done, 5);
  ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 2, kNow));
  ASSERT_EQ(leases.size(), 2u);
  for (const Lease& l : leases)
    ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", kNow));
  // A minute later a write folds kNow's minute into the totals.
  ASSERT_OK(backend->Add({Job1()}, kNow + absl::Minutes(1)));
  ASSERT_OK_AND_ASSIGN(totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 10);
  EXPECT_EQ(totals[0].counts.done, 7);
  EXPECT_EQ(totals[0].counts.lateness[0], 8);
  ASSERT_OK_AND_ASSIGN(std::vector<TopicMinute> minutes,
                       backend->Counts(kNow - absl::Minutes(5), kNow));
  ASSERT_EQ(minutes.size(), 2u);
  EXPECT_EQ(minutes[0].minute, absl::FromUnixMicros(minute_us));
  EXPECT_EQ(minutes[0].counts.done, 4);
  EXPECT_EQ(minutes[1].minute, MinuteOf(kNow));
  EXPECT_EQ(minutes[1].counts.done, 2);
  backend.reset();
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  EXPECT_EQ(
      RawQueryInt(path, "SELECT done FROM transitions WHERE minute_us = -1"),
      7);
  EXPECT_EQ(
      RawQueryInt(path, "SELECT count(*) FROM topic_counts WHERE state = -1"),
      1);
}

// A file of version 10 (no done jobs, dead jobs without the time they died)
// opens with its jobs as they were: a dead job has no finished_at, and
// jobs enqueued before keep nothing. Jobs enqueued since keep.
TEST(SqliteFilesTest, MigratesAFileOfVersion10) {
  const std::string path = FreshDbPath("v10");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    NewJob once = Job1();
    once.id = "dies";
    once.max_attempts = 1;
    NewJob old = Job1();
    old.id = "old";
    ASSERT_OK(backend->Add({once, old}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 2, kNow));
    ASSERT_EQ(leases.size(), 2u);
    ASSERT_OK(backend
                  ->Fail("dies",
                         leases[0].job.id == "dies" ? leases[0].token
                                                    : leases[1].token,
                         "boom", kNow, kNow)
                  .status());
  }
  RawExec(path, absl::StrCat(kWithoutDoneJobs, "PRAGMA user_version = 10;"));
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  ASSERT_OK_AND_ASSIGN(Job dead, backend->Get("dies"));
  EXPECT_EQ(dead.state, JobState::kDead);
  EXPECT_EQ(dead.finished_at, absl::InfinitePast());
  ASSERT_OK_AND_ASSIGN(Job old, backend->Get("old"));
  EXPECT_EQ(old.state, JobState::kReserved);
  EXPECT_EQ(old.keep_for, absl::ZeroDuration());

  NewJob kept = Job1();
  kept.id = "kept";
  kept.keep_for = absl::Minutes(5);
  kept.keep_at_most = 10;
  ASSERT_OK(backend->Add({kept}, kNow));
  ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(leases[0].job.id, "kept");
  ASSERT_OK(backend->Ack("kept", leases[0].token, "r", kNow));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.done, 1);
  EXPECT_EQ(stats.dead, 1);
  EXPECT_EQ(stats.reserved, 1);
  // The indexes of done jobs were made.
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT count(*) FROM sqlite_master WHERE type = "
                        "'index' AND name IN ('jobs_done', 'jobs_leaving')"),
            2);
}

// A file of version 11 that lacks a column of done jobs (altered by hand)
// is refused as damaged, and left as it was.
// A file of version 11 (no event log) opens with its jobs, and gets one.
TEST(SqliteFilesTest, MigratesAFileOfVersion11) {
  const std::string path = MakeDelayqFile(2);
  RawExec(path, DQ_WITHOUT_EVENT_LOG "PRAGMA user_version = 11;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 2);
  LoggedEvent e;
  e.id = "job-0";
  e.topic = "t";
  e.who = "migrated";
  ASSERT_OK(backend->AppendEvents({e}));
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> events,
                       backend->JobEvents("job-0", 10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].who, "migrated");
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
}

// A file of version 12 (no dependencies) opens with its jobs, and its jobs
// may then wait for others.
TEST(SqliteFilesTest, MigratesAFileOfVersion12) {
  const std::string path = MakeDelayqFile(2);
  RawExec(path, DQ_WITHOUT_DEPENDENCIES "PRAGMA user_version = 12;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 2);
  backend.reset();
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM dependencies"), 0);
  EXPECT_EQ(RawQueryInt(path, "SELECT sum(dep_policy) FROM jobs"), 0);
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT count(*) FROM sqlite_master WHERE type = "
                        "'index' AND name = 'dependencies_dependant'"),
            1);
}

// A file of version 13 (no lease holders) opens with its jobs: a lease
// made before shows no holder; the next one has its holder and time.
TEST(SqliteFilesTest, MigratesAFileOfVersion13) {
  const std::string path = FreshDbPath("v13");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    NewJob old = Job1();
    old.id = "old";
    NewJob next = Job1();
    next.id = "next";
    ASSERT_OK(backend->Add({old, next}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_EQ(leases[0].job.id, "old");
  }
  RawExec(path, DQ_WITHOUT_HOLDERS "PRAGMA user_version = 13;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  ASSERT_OK_AND_ASSIGN(Job old, backend->Get("old"));
  EXPECT_EQ(old.state, JobState::kReserved);
  EXPECT_EQ(old.holder, "");
  EXPECT_EQ(old.reserved_at, absl::InfinitePast());
  ReserveReport report;
  report.holder = "migrated:1";
  ASSERT_OK_AND_ASSIGN(
      auto leases, backend->Reserve("t", 1, kNow + absl::Seconds(1), &report));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Job next, backend->Get("next"));
  EXPECT_EQ(next.holder, "migrated:1");
  EXPECT_EQ(next.reserved_at, kNow + absl::Seconds(1));
}

TEST(SqliteFilesTest, RefusesAVersion11FileWithoutTheColumnsOfDoneJobs) {
  const std::string path = MakeDelayqFile(1);
  RawExec(path, R"sql(
    DROP INDEX jobs_done;
    DROP INDEX jobs_leaving;
    ALTER TABLE jobs DROP COLUMN keep_at_most;
  )sql");
  const std::string before = ReadFile(path);
  EXPECT_THAT(Open(path), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_EQ(ReadFile(path), before);
}

// Payloads are nobody else's business: a new file and its -wal and -shm
// files are 0600 whatever the usual umask (022) would allow.
TEST(SqliteFilesTest, NewFilesAreReadableByTheirOwnerOnly) {
  const mode_t old_umask = umask(022);
  const std::string path = FreshDbPath("private");
  {
    auto backend = Open(path);
    ASSERT_OK(backend);
    ASSERT_OK((*backend)->Add({Job1()}, kNow));
    for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
      struct stat st;
      ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    }
  }
  umask(old_umask);
}

// SQLite would take "file:..." as a URI with options of its own, and open
// another file than the one delayq checked.
TEST(SqliteFilesTest, SqliteUrisAreRefused) {
  ASSERT_OK_AND_ASSIGN(SqliteOptions options,
                       ParseSqliteUrl("sqlite:file:jobs.db"));
  auto backend = OpenSqliteBackend(options);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(backend.status().message(), HasSubstr("URI"));
}

TEST(SqliteFilesTest, ReportsATruncatedHeaderAsDataLoss) {
  const std::string path = MakeDelayqFile(2);
  WriteFile(path, ReadFile(path).substr(0, 50));
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
}

// Opening a damaged file, or reading all its jobs, reports DataLoss.
absl::Status OpenAndReadAll(const std::string& path) {
  auto backend = Open(path);
  if (!backend.ok()) return backend.status();
  absl::StatusOr<std::vector<Job>> all =
      (*backend)->List("t", JobState::kReady, 1 << 30);
  if (!all.ok()) return all.status();
  absl::StatusOr<Job> last = (*backend)->Get("job-999");
  return last.status();
}

TEST(SqliteFilesTest, ReportsATruncatedFileAsDataLoss) {
  const std::string path = MakeDelayqFile(1000);
  const std::string data = ReadFile(path);
  ASSERT_GT(data.size(), 100'000u);
  WriteFile(path, data.substr(0, data.size() / 2));
  const absl::Status status = OpenAndReadAll(path);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(SqliteFilesTest, ReportsACorruptedFileAsDataLoss) {
  const std::string path = MakeDelayqFile(1000);
  std::string data = ReadFile(path);
  // Overwrite every page but the first (the header and schema) with junk.
  const size_t page = PageSizeOf(data);
  for (size_t i = page; i < data.size(); ++i) data[i] = static_cast<char>(0xA5);
  WriteFile(path, data);
  const absl::Status status = OpenAndReadAll(path);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(status.message(), HasSubstr(path));
}

TEST(SqliteFilesTest, RefusesAMissingDirectory) {
  const std::string path =
      absl::StrCat(testing::TempDir(), "/no-such-dir/sub/jobs.db");
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
  EXPECT_THAT(backend.status().message(), HasSubstr("does not exist"));
}

TEST(SqliteFilesTest, RefusesADirectory) {
  auto backend = Open(testing::TempDir());
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(backend.status().message(), HasSubstr("directory"));
}

TEST(SqliteFilesTest, RefusesAReadOnlyLocation) {
  std::string path;
  if (geteuid() == 0) {
    // Permissions do not stop root; sysfs refuses new files even to root.
    path = "/sys/delayq-test.db";
  } else {
    const std::string dir = absl::StrCat(testing::TempDir(), "/readonly");
    ASSERT_EQ(mkdir(dir.c_str(), 0555), 0);
    path = dir + "/jobs.db";
  }
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend.status().message(), HasSubstr(path));
}

TEST(SqliteFilesTest, ANewFileGetsThePageSizeAskedFor) {
  const std::string small = MakeDelayqFile(3);
  EXPECT_EQ(PageSizeOf(ReadFile(small)), 1024u);

  SqliteOptions options;
  options.path = FreshDbPath("page");
  options.page_size = 8192;
  {
    ASSERT_OK_AND_ASSIGN(auto backend, OpenSqliteBackend(options));
    EXPECT_OK(backend->Add({Job1()}, kNow));
  }
  EXPECT_EQ(PageSizeOf(ReadFile(options.path)), 8192u);
}

TEST(SqliteFilesTest, AnExistingFileKeepsItsPageSize) {
  const std::string path = MakeDelayqFile(3);
  SqliteOptions options;
  options.path = path;
  options.page_size = 4096;
  {
    ASSERT_OK_AND_ASSIGN(auto backend, OpenSqliteBackend(options));
    ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
    EXPECT_EQ(stats.ready, 3);
    EXPECT_OK(backend->Add({Job1()}, kNow));
  }
  EXPECT_EQ(PageSizeOf(ReadFile(path)), 1024u);
}

// A file of version 14 (no batches) opens with its jobs, and may then
// keep batches; a job deleted from it takes no batch along.
TEST(SqliteFilesTest, MigratesAFileOfVersion14) {
  const std::string path = FreshDbPath("v14");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_OK(backend->Add({Job1()}, kNow));
  }
  RawExec(path, DQ_WITHOUT_BATCHES "PRAGMA user_version = 14;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  NewJob completion = Job1();
  completion.id = "batch";
  ASSERT_OK(backend->OpenBatch(completion, kNow));
  ASSERT_OK(backend->Cancel("a", kNow));
  ASSERT_OK_AND_ASSIGN(Batch batch, backend->GetBatch("batch"));
  EXPECT_EQ(batch.total, 0);
}

// A file of version 15 kept its job counts and its recent minutes in two
// tables. Version 16 keeps both in topic_counts: the counts read as they
// were, and the work done since adds to them.
TEST(SqliteFilesTest, MigratesTheCountsOfVersion15) {
  const std::string path = FreshDbPath("v15");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    NewJob second = Job1();
    second.id = "b";
    ASSERT_OK(backend->Add({Job1(), second}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_OK(backend->Ack(leases[0].job.id, leases[0].token, "", kNow));
  }
  RawExec(path, DQ_WITHOUT_TOPIC_COUNTS "PRAGMA user_version = 15;");
  ASSERT_EQ(RawQueryInt(path, "SELECT sum(n) FROM counts"), 1);
  ASSERT_EQ(RawQueryInt(path, "SELECT sum(done) FROM transitions_recent"), 1);
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats.ready, 1);
  EXPECT_EQ(stats.total(), 1);
  ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(backend->Ack(leases[0].job.id, leases[0].token, "", kNow));
  ASSERT_OK_AND_ASSIGN(std::vector<TopicTotals> totals, backend->CountTotals());
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].counts.enqueued, 2);
  EXPECT_EQ(totals[0].counts.done, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<TopicMinute> minutes,
                       backend->Counts(kNow - absl::Minutes(1), kNow));
  ASSERT_EQ(minutes.size(), 1u);
  EXPECT_EQ(minutes[0].counts.done, 2);
  ASSERT_OK_AND_ASSIGN(stats, backend->Stats("t"));
  EXPECT_EQ(stats.total(), 0);
  EXPECT_EQ(RawQueryInt(path,
                        "SELECT count(*) FROM sqlite_master WHERE "
                        "name IN ('counts', 'transitions_recent')"),
            0);
}

// A version 15 file whose rows no delayq wrote, though each table's own
// constraints hold: a count of state -1 in counts and a recent minute -1 in
// transitions_recent become the same topic_counts row. The migration's
// constraint error is the file's damage, not an id the caller reused
// (AlreadyExists), and the file is left as it was.
TEST(SqliteFilesTest, RefusesAVersion15FileWhoseRowsCollideInTheMigration) {
  const std::string path = FreshDbPath("v15_collide");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_OK(backend->Add({Job1()}, kNow));
  }
  RawExec(path, DQ_WITHOUT_TOPIC_COUNTS
          "PRAGMA user_version = 15;"
          "INSERT INTO counts VALUES ('t', -1, 1);"
          "INSERT INTO transitions_recent VALUES "
          "  (-1, 't', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);");
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(backend.status().message(), HasSubstr("not delayq's"));
  EXPECT_EQ(ReadFile(path), before);
}

// A trigger no delayq wrote, whose body names a column jobs does not have:
// every statement that deletes a job fails to compile. Such a file is
// refused before anything is written to it, whether it is to be upgraded
// (the check runs in the upgrade's transaction, before it commits) or is
// of this version (before the switch to WAL mode, which rewrites the
// header of a file in rollback mode).
constexpr char kForeignTrigger[] =
    "CREATE TRIGGER not_delayqs AFTER DELETE ON jobs BEGIN "
    "  SELECT OLD.no_such_column; "
    "END;";

TEST(SqliteFilesTest, RefusesAnOlderFileWhoseTriggerNamesAMissingColumn) {
  const std::string path = FreshDbPath("foreign_trigger_v17");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_OK(backend->Add({Job1()}, kNow));
  }
  RawExec(path, absl::StrCat(DQ_WITHOUT_BATCH_MEMBERSHIP, kForeignTrigger,
                             "PRAGMA user_version = 17;"));
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(backend.status().message(), HasSubstr("no_such_column"));
  EXPECT_EQ(ReadFile(path), before);
}

TEST(SqliteFilesTest,
     RefusesAFileOfThisVersionWhoseTriggerNamesAMissingColumn) {
  const std::string path = FreshDbPath("foreign_trigger");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_OK(backend->Add({Job1()}, kNow));
  }
  RawExec(path, absl::StrCat(kForeignTrigger, "PRAGMA journal_mode = DELETE;"));
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(backend.status().message(), HasSubstr("no_such_column"));
  EXPECT_EQ(ReadFile(path), before);
}

// delayq's statements and temporary tables are UTF-8, which SQLite will
// not run beside a UTF-16 main database: such a file (an application's,
// or a damaged header) is refused as it is.
TEST(SqliteFilesTest, RefusesADatabaseInUtf16) {
  const std::string path = FreshDbPath("utf16");
  RawExec(path, "PRAGMA encoding = 'UTF-16le'; CREATE TABLE app (x);");
  const std::string before = ReadFile(path);
  auto backend = Open(path);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend.status().message(), HasSubstr("UTF-16le"));
  EXPECT_EQ(ReadFile(path), before);
}

// A file of version 16 kept only the dependencies still pending. Its
// waiting jobs open with those (the met ones are not known), in id order,
// are released as before and hand the results of those on; a job added
// since names all of its own, and takes them along when it leaves.
TEST(SqliteFilesTest, MigratesTheWaitingJobsOfVersion16) {
  const std::string path = FreshDbPath("v16");
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_NO_FATAL_FAILURE(AddWaitersBeforeTheLists(*backend, kNow));
  }
  RawExec(path, DQ_WITHOUT_DEPENDENCY_LISTS "PRAGMA user_version = 16;");
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  ASSERT_NO_FATAL_FAILURE(
      ExpectMigratedWaiters(*backend, kNow + absl::Seconds(1)));
  backend.reset();
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM job_after"), 0);
}

// A file of version 17 kept the rows of batch_jobs of a batch dropped with
// its completion job. Version 18 deletes them, and from then on a batch
// takes its rows along when it leaves: a batch opened again under the id
// counts only its own jobs.
TEST(SqliteFilesTest, MigratesTheBatchMembersOfVersion17) {
  const std::string path = FreshDbPath("v17");
  NewJob completion = Job1();
  completion.id = "batch";
  NewJob member = Job1();
  member.batch = "batch";
  {
    ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
    ASSERT_OK(backend->OpenBatch(completion, kNow));
    ASSERT_OK(backend->Add({member}, kNow));
  }
  // Dropped as by a cancel of version 17, which left the row of "a".
  RawExec(path, DQ_WITHOUT_BATCH_MEMBERSHIP
          "PRAGMA user_version = 17; DELETE FROM jobs WHERE id = 'batch';");
  ASSERT_EQ(RawQueryInt(path, "SELECT count(*) FROM batch_jobs"), 1);
  ASSERT_OK_AND_ASSIGN(auto backend, Open(path));
  EXPECT_EQ(RawQueryInt(path, "PRAGMA user_version"), kLatestVersion);
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM batch_jobs"), 0);

  ASSERT_OK(backend->OpenBatch(completion, kNow));
  member.id = "b";
  ASSERT_OK(backend->Add({member}, kNow));
  ASSERT_OK(backend->Cancel("a", kNow));
  ASSERT_OK_AND_ASSIGN(Batch batch, backend->GetBatch("batch"));
  EXPECT_EQ(batch.total, 1);
  EXPECT_EQ(batch.cancelled, 0);
  ASSERT_OK(backend->Cancel("batch", kNow));
  backend.reset();
  EXPECT_EQ(RawQueryInt(path, "SELECT count(*) FROM batch_jobs"), 0);
}

TEST(SqliteFilesTest, RejectsABadPageSizeWithoutCreatingAFile) {
  for (int bytes : {0, -1024, 256, 1000, 3072, 131072}) {
    SqliteOptions options;
    options.path = FreshDbPath("badpage");
    options.page_size = bytes;
    auto backend = OpenSqliteBackend(options);
    EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument)) << bytes;
    EXPECT_THAT(backend.status().message(), HasSubstr("page_size")) << bytes;
    EXPECT_FALSE(Exists(options.path)) << bytes;
  }
}

TEST(SqliteFilesTest, RejectsEmptyPathAndNegativeTimeout) {
  EXPECT_THAT(Open(""), StatusIs(absl::StatusCode::kInvalidArgument));
  SqliteOptions options;
  options.path = FreshDbPath();
  options.busy_timeout = absl::Seconds(-1);
  EXPECT_THAT(OpenSqliteBackend(options),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace delayq
