// Copyright delayq authors.
//
// SQLite-specific behaviour beyond the conformance suite: URL parsing, query
// plans, lock timeouts, tokens across connections, durability across
// reopening, the per-topic counters.

#include "delayq/sqlite_backend.h"

#include <sqlite3.h>

#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/statements.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshDbPath;
using ::delayq::testing::IsOkAndHolds;
using ::delayq::testing::StatusIs;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

NewJob MakeJob(const std::string& id, const std::string& topic,
               absl::Time run_at = kNow) {
  NewJob job = testing::PlainJob(id, topic, run_at);
  job.payload = "p-" + id;
  return job;
}

std::unique_ptr<Backend> MustOpen(const std::string& path,
                                  absl::Duration busy = absl::Seconds(5)) {
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = busy;
  auto backend = OpenSqliteBackend(options);
  EXPECT_OK(backend);
  return backend.ok() ? *std::move(backend) : nullptr;
}

TEST(ParseSqliteUrlTest, AcceptsPathAndParameters) {
  ASSERT_OK_AND_ASSIGN(SqliteOptions o, ParseSqliteUrl("sqlite:jobs.db"));
  EXPECT_EQ(o.path, "jobs.db");
  EXPECT_EQ(o.durability, SqliteOptions::Durability::kNormal);
  EXPECT_EQ(o.busy_timeout, absl::Seconds(5));

  ASSERT_OK_AND_ASSIGN(
      o, ParseSqliteUrl("sqlite:/var/x/j.db?sync=full&busy_timeout_ms=250"));
  EXPECT_EQ(o.path, "/var/x/j.db");
  EXPECT_EQ(o.durability, SqliteOptions::Durability::kFull);
  EXPECT_EQ(o.busy_timeout, absl::Milliseconds(250));

  ASSERT_OK_AND_ASSIGN(o, ParseSqliteUrl("sqlite:a.db?busy_timeout_ms=0"));
  EXPECT_EQ(o.busy_timeout, absl::ZeroDuration());
  ASSERT_OK_AND_ASSIGN(o, ParseSqliteUrl("sqlite:a.db?sync=normal"));
  EXPECT_EQ(o.durability, SqliteOptions::Durability::kNormal);
  EXPECT_EQ(o.page_size, 1024);
  ASSERT_OK_AND_ASSIGN(o, ParseSqliteUrl("sqlite:a.db?page_size=65536"));
  EXPECT_EQ(o.page_size, 65536);
  ASSERT_OK_AND_ASSIGN(o,
                       ParseSqliteUrl("sqlite:a.db?page_size=512&sync=full"));
  EXPECT_EQ(o.page_size, 512);
  EXPECT_EQ(o.durability, SqliteOptions::Durability::kFull);
}

TEST(ParseSqliteUrlTest, RejectsMalformedUrlsNamingTheProblem) {
  const struct {
    const char* url;
    const char* says;
  } cases[] = {
      {"memory:", "sqlite:"},
      {"sqlite", "sqlite:"},
      {"sqlite:", "empty path"},
      {"sqlite:?sync=full", "empty path"},
      {"sqlite:a.db?", "empty query"},
      {"sqlite:a.db?sync", "'sync' has no value"},
      {"sqlite:a.db?sync=fast", "'fast'"},
      {"sqlite:a.db?sync=full&sync=full", "twice"},
      {"sqlite:a.db?busy_timeout_ms=-1", "busy_timeout_ms"},
      {"sqlite:a.db?busy_timeout_ms=1s", "busy_timeout_ms"},
      {"sqlite:a.db?busy_timeout_ms=", "busy_timeout_ms"},
      {"sqlite:a.db?busy_timeout_ms=99999999999", "busy_timeout_ms"},
      {"sqlite:a.db?page_size=1000", "page_size"},
      {"sqlite:a.db?page_size=131072", "page_size"},
      {"sqlite:a.db?page_size=99999999999", "page_size"},
      {"sqlite:a.db?page_size=+1024", "page_size"},
      {"sqlite:a.db?page_size=", "page_size"},
      {"sqlite:a.db?page_size=1024&page_size=1024", "twice"},
      {"sqlite:a.db?timeout=5", "unknown parameter 'timeout'"},
      {"sqlite:a.db?sync=full&", "'' has no value"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<SqliteOptions> o = ParseSqliteUrl(c.url);
    EXPECT_THAT(o, StatusIs(absl::StatusCode::kInvalidArgument)) << c.url;
    EXPECT_THAT(o.status().message(), HasSubstr(c.says)) << c.url;
  }
}

TEST(StatusFromSqliteTest, MapsResultCodesToTheMostSpecificStatus) {
  using sqlite_internal::StatusFromSqlite;
  const struct {
    int rc;
    absl::StatusCode code;
  } cases[] = {
      {SQLITE_BUSY, absl::StatusCode::kUnavailable},
      {SQLITE_BUSY_SNAPSHOT, absl::StatusCode::kUnavailable},
      {SQLITE_LOCKED, absl::StatusCode::kUnavailable},
      {SQLITE_CANTOPEN, absl::StatusCode::kUnavailable},
      {SQLITE_IOERR_WRITE, absl::StatusCode::kUnavailable},
      {SQLITE_FULL, absl::StatusCode::kResourceExhausted},
      {SQLITE_NOMEM, absl::StatusCode::kResourceExhausted},
      {SQLITE_CORRUPT, absl::StatusCode::kDataLoss},
      {SQLITE_NOTADB, absl::StatusCode::kDataLoss},
      {SQLITE_READONLY, absl::StatusCode::kFailedPrecondition},
      {SQLITE_CONSTRAINT_UNIQUE, absl::StatusCode::kAlreadyExists},
      {SQLITE_MISUSE, absl::StatusCode::kInternal},
  };
  for (const auto& c : cases) {
    const absl::Status status =
        StatusFromSqlite(c.rc, sqlite3_errstr(c.rc), "/x/jobs.db", "step");
    EXPECT_EQ(status.code(), c.code) << c.rc;
    EXPECT_THAT(status.message(), HasSubstr("/x/jobs.db")) << c.rc;
  }
}

// Every statement the backend runs uses an index or a primary key: none
// scans the jobs table or sorts in a temporary b-tree.
TEST(SqliteQueryPlanTest, NoStatementScansJobs) {
  const std::string path = FreshDbPath("plan");
  MustOpen(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  using Sql = sqlite_internal::Sql;
  for (const char* sql : {Sql::kInsert,         Sql::kCounterGet,
                          Sql::kCounterSet,     Sql::kTopicDue,
                          Sql::kAllDue,         Sql::kNextDue,
                          Sql::kMakeReady,      Sql::kMakeDead,
                          Sql::kReserveOne,     Sql::kAck,
                          Sql::kLease,          Sql::kRetry,
                          Sql::kRelease,        Sql::kTouch,
                          Sql::kCancel,         Sql::kGet,
                          Sql::kListReady,      Sql::kListTimed,
                          Sql::kListDead,       Sql::kStats,
                          Sql::kDeadOfTopic,    Sql::kKick,
                          Sql::kStateOf,        Sql::kReplace,
                          Sql::kDiscard,        Sql::kDropHolds,
                          Sql::kIsHeld,         Sql::kHold,
                          Sql::kLimitGet,       Sql::kLimitSet,
                          Sql::kLimitTat,       Sql::kLimitClear,
                          Sql::kLimits,         Sql::kStateCount,
                          Sql::kScheduleGet,    Sql::kSchedulePut,
                          Sql::kScheduleRemove, Sql::kScheduleList,
                          Sql::kScheduleFire,   Sql::kCounterBump,
                          Sql::kKeep,           Sql::kDropLeftOfTopic,
                          Sql::kDropLeft,       Sql::kDropSoonest,
                          Sql::kListDone,       Sql::kAckedTopic,
                          Sql::kAfterAdd,       Sql::kAfterOf}) {
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db, absl::StrCat("EXPLAIN QUERY PLAN ", sql).c_str(),
                           -1, &stmt, nullptr),
        SQLITE_OK)
        << sql;
    std::string plan;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      absl::StrAppend(
          &plan, reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)),
          "; ");
    }
    sqlite3_finalize(stmt);
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("SCAN jobs"))) << sql;
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("TEMP B-TREE"))) << sql;
  }
  sqlite3_close(db);
}

// The statements of the busy paths and of done jobs each use the partial
// index made for them: the indexes of done jobs (schema version 11) take
// none of the others' work.
TEST(SqliteQueryPlanTest, StatementsUseTheirIndexes) {
  const std::string path = FreshDbPath("plan");
  MustOpen(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  using Sql = sqlite_internal::Sql;
  const std::pair<const char*, const char*> expected[] = {
      {Sql::kReserveOne, "USING INDEX jobs_ready"},
      {Sql::kTopicDue, "USING INDEX jobs_topic_due"},
      {Sql::kAllDue, "USING INDEX jobs_due"},
      {Sql::kNextDue, "USING COVERING INDEX jobs_due"},
      {Sql::kListReady, "USING INDEX jobs_ready"},
      {Sql::kListDead, "USING INDEX jobs_dead"},
      {Sql::kAck, "USING INDEX sqlite_autoindex_jobs_1 (id=?)"},
      {Sql::kKeep, "USING INDEX sqlite_autoindex_jobs_1 (id=?)"},
      {Sql::kDropLeftOfTopic, "USING INDEX jobs_done (topic=? AND <expr><?)"},
      {Sql::kDropLeft, "USING INDEX jobs_leaving (<expr><?)"},
      {Sql::kDropSoonest, "USING INDEX jobs_done (topic=?)"},
      {Sql::kListDone, "USING INDEX jobs_done (topic=?)"},
  };
  for (const auto& [sql, index] : expected) {
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db, absl::StrCat("EXPLAIN QUERY PLAN ", sql).c_str(),
                           -1, &stmt, nullptr),
        SQLITE_OK)
        << sql;
    std::string plan;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      absl::StrAppend(
          &plan, reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3)),
          "; ");
    }
    sqlite3_finalize(stmt);
    EXPECT_THAT(plan, HasSubstr(index)) << sql;
  }
  sqlite3_close(db);
}

// Dedup windows, limits and their buckets live in the file: another
// connection sees them, and so does the next process.
TEST(SqliteBackendTest, WindowsAndLimitsSurviveReopening) {
  const std::string path = FreshDbPath("kept");
  {
    auto backend = MustOpen(path);
    NewJob job = MakeJob("charge-1", "payments");
    job.unique_for = absl::Minutes(10);
    ASSERT_OK(backend->Add({job}, kNow));
    ASSERT_OK(backend->Cancel("charge-1", kNow));
    TopicLimit limit;
    limit.rate = 1;
    limit.period = absl::Minutes(1);
    ASSERT_OK(backend->SetLimit("payments", limit, kNow));
    ASSERT_OK(backend->Add({MakeJob("a", "payments"), MakeJob("b", "payments")},
                           kNow));
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("payments", 5, kNow));
    ASSERT_EQ(leases.size(), 1u);
  }
  auto reopened = MustOpen(path);
  EXPECT_THAT(
      reopened->Add({MakeJob("charge-1", "payments")}, kNow + absl::Minutes(5)),
      StatusIs(absl::StatusCode::kAlreadyExists));
  ReserveReport report;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      reopened->Reserve("payments", 5, kNow + absl::Seconds(30), &report));
  EXPECT_TRUE(leases.empty());
  EXPECT_EQ(report.limited_until, kNow + absl::Minutes(1));
  EXPECT_OK(reopened->Add({MakeJob("charge-1", "payments")},
                          kNow + absl::Minutes(10)));
}

// A done job and its result live in the file: the next process reads them.
// What another connection's Ack() keeps, and the done jobs it or its
// PromoteDue() lets go, are what this one reads.
TEST(SqliteBackendTest, DoneJobsLiveInTheFileForEveryConnection) {
  const std::string path = FreshDbPath("done");
  const std::string result("answer\0with a zero byte", 24);
  auto kept = [](const std::string& id) {
    NewJob job = MakeJob(id, "t");
    job.keep_for = absl::Hours(1);
    job.keep_at_most = 1;
    return job;
  };
  {
    auto backend = MustOpen(path);
    ASSERT_OK(backend->Add({kept("a")}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_OK(
        backend->Ack("a", leases[0].token, result, kNow + absl::Seconds(1)));
  }
  auto first = MustOpen(path);
  ASSERT_OK_AND_ASSIGN(Job a, first->Get("a"));
  EXPECT_EQ(a.state, JobState::kDone);
  EXPECT_EQ(a.result, result);
  EXPECT_EQ(a.finished_at, kNow + absl::Seconds(1));
  EXPECT_EQ(a.keep_for, absl::Hours(1));
  EXPECT_EQ(a.keep_at_most, 1);
  EXPECT_EQ(a.payload, "p-a");
  EXPECT_THAT(first->Add({MakeJob("a", "t")}, kNow + absl::Seconds(2)),
              StatusIs(absl::StatusCode::kAlreadyExists));

  // Another connection keeps a job of the topic, which keeps at most one.
  auto second = MustOpen(path);
  ASSERT_OK(second->Add({kept("b")}, kNow + absl::Seconds(2)));
  ASSERT_OK_AND_ASSIGN(auto leases,
                       second->Reserve("t", 1, kNow + absl::Seconds(2)));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(
      second->Ack("b", leases[0].token, "second", kNow + absl::Seconds(3)));
  EXPECT_THAT(first->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(std::vector<Job> done,
                       first->List("t", JobState::kDone, 10));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, "b");
  EXPECT_EQ(done[0].result, "second");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, first->Stats("t"));
  EXPECT_EQ(stats.done, 1);

  // Its time up, the other connection's PromoteDue() lets it go.
  ASSERT_OK(second->PromoteDue(kNow + absl::Seconds(3) + absl::Hours(1), 10)
                .status());
  EXPECT_THAT(first->Get("b"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(stats, first->Stats("t"));
  EXPECT_EQ(stats.done, 0);
  EXPECT_THAT(first->Topics(), IsOkAndHolds(::testing::IsEmpty()));
}

TEST(SqliteBackendTest, WriteLockHeldTooLongIsUnavailable) {
  const std::string path = FreshDbPath("busy");
  auto backend = MustOpen(path, absl::Milliseconds(50));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr),
            SQLITE_OK);
  const absl::Status status = backend->Add({MakeJob("a", "t")}, kNow);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(status.message(), HasSubstr(path));
  // Reads go on in WAL mode while another connection writes.
  EXPECT_THAT(backend->Get("a"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_OK(backend->Add({MakeJob("a", "t")}, kNow));
}

TEST(SqliteBackendTest, TokensAreUniqueAcrossConnections) {
  const std::string path = FreshDbPath("tokens");
  auto a = MustOpen(path);
  auto b = MustOpen(path);
  std::vector<NewJob> jobs;
  for (int i = 0; i < 50; ++i) {
    jobs.push_back(MakeJob(absl::StrCat(i), "t"));
    jobs.back().max_attempts = 10;
  }
  ASSERT_OK(a->Add(jobs, kNow));
  std::set<uint64_t> tokens;
  absl::Time now = kNow;
  // Each job is reserved, expires and is reserved again, alternately through
  // the two connections.
  for (int round = 0; round < 4; ++round) {
    Backend* backend = round % 2 == 0 ? a.get() : b.get();
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend->Reserve("t", 100, now));
    ASSERT_EQ(leases.size(), 50u);
    for (const Lease& l : leases) {
      EXPECT_TRUE(tokens.insert(l.token).second) << l.token;
    }
    now += absl::Seconds(61);
  }
  // The re-added job with a reused id never gets an old token.
  ASSERT_OK(a->Cancel("0", now));
  ASSERT_OK(b->Add({MakeJob("0", "u", now)}, now));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> again, a->Reserve("u", 1, now));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(tokens.insert(again[0].token).second);
}

TEST(SqliteBackendTest, JobsSurviveReopeningAndLeasesExpireAfterTtr) {
  const std::string path = FreshDbPath("reopen");
  uint64_t token;
  {
    auto backend = MustOpen(path);
    NewJob job = MakeJob("a", "t");
    job.ttr = absl::Seconds(30);
    job.priority = 7;
    job.backoff = Backoff::Fixed(absl::Seconds(3));
    ASSERT_OK(
        backend->Add({job, MakeJob("b", "t", kNow + absl::Hours(1))}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
    ASSERT_EQ(leases.size(), 1u);
    token = leases[0].token;
  }
  auto backend = MustOpen(path);
  ASSERT_OK_AND_ASSIGN(Job a, backend->Get("a"));
  EXPECT_EQ(a.state, JobState::kReserved);
  EXPECT_EQ(a.priority, 7);
  EXPECT_EQ(a.payload, "p-a");
  EXPECT_EQ(a.backoff, Backoff::Fixed(absl::Seconds(3)));
  EXPECT_EQ(a.deadline, kNow + absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend->NextDue());
  EXPECT_EQ(next, kNow + absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(auto none, backend->Reserve("t", 1, kNow));
  EXPECT_TRUE(none.empty());
  ASSERT_OK_AND_ASSIGN(auto later,
                       backend->Reserve("t", 1, kNow + absl::Seconds(30)));
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].job.id, "a");
  EXPECT_EQ(later[0].job.attempts, 2);
  EXPECT_NE(later[0].token, token);
}

TEST(SqliteBackendTest, FullDurabilityWorks) {
  SqliteOptions options;
  options.path = FreshDbPath("full");
  options.durability = SqliteOptions::Durability::kFull;
  ASSERT_OK_AND_ASSIGN(auto backend, OpenSqliteBackend(options));
  ASSERT_OK(backend->Add({MakeJob("a", "t")}, kNow));
  ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 1, kNow));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_OK(backend->Ack("a", leases[0].token, /*result=*/"", kNow));
}

// The counters kept by triggers agree with the rows after a mix of
// operations on several topics.
TEST(SqliteBackendTest, CountersMatchRows) {
  const std::string path = FreshDbPath("counts");
  auto backend = MustOpen(path);
  absl::Time now = kNow;
  for (int i = 0; i < 300; ++i) {
    const std::string topic = absl::StrCat("t", i % 3);
    NewJob job = MakeJob(absl::StrCat(i), topic,
                         now + absl::Seconds(i % 5 == 0 ? 10 : 0));
    job.max_attempts = 1 + i % 2;
    ASSERT_OK(backend->Add({job}, now));
  }
  for (int round = 0; round < 3; ++round) {
    for (const char* topic : {"t0", "t1", "t2"}) {
      ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve(topic, 40, now));
      for (size_t i = 0; i < leases.size(); ++i) {
        const Lease& l = leases[i];
        if (i % 4 == 0) {
          ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", now));
        } else if (i % 4 == 1) {
          ASSERT_OK(backend->Fail(l.job.id, l.token, "x", now, now).status());
        } else if (i % 4 == 2) {
          ASSERT_OK(backend->Release(l.job.id, l.token, now, now));
        }
      }
    }
    now += absl::Seconds(70);
    ASSERT_OK(backend->PromoteDue(now, 1000).status());
  }
  ASSERT_OK(backend->Kick("t1", 5, now).status());
  ASSERT_OK(backend->Add({MakeJob("extra", "t2")}, now));
  ASSERT_OK(backend->Cancel("extra", now));

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  for (const char* topic : {"t0", "t1", "t2"}) {
    ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats(topic));
    int64_t counted[4] = {0, 0, 0, 0};
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db,
                           "SELECT state, count(*) FROM jobs WHERE topic = ?1 "
                           "GROUP BY state",
                           -1, &stmt, nullptr),
        SQLITE_OK);
    sqlite3_bind_text(stmt, 1, topic, -1, SQLITE_STATIC);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      counted[sqlite3_column_int(stmt, 0)] = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    EXPECT_EQ(stats.delayed, counted[0]) << topic;
    EXPECT_EQ(stats.ready, counted[1]) << topic;
    EXPECT_EQ(stats.reserved, counted[2]) << topic;
    EXPECT_EQ(stats.dead, counted[3]) << topic;
    EXPECT_GT(stats.total(), 0);
  }
  sqlite3_close(db);
}

// Topics that come and go (one per order) leave no counts behind.
TEST(SqliteBackendTest, ATopicWithNoJobsLeftKeepsNoCounts) {
  const std::string path = FreshDbPath("counts-go");
  auto backend = MustOpen(path);
  for (int i = 0; i < 50; ++i) {
    const std::string topic = absl::StrCat("order-", i);
    ASSERT_OK(backend->Add({MakeJob(absl::StrCat(i), topic)}, kNow));
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve(topic, 1, kNow));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_OK(
        backend->Ack(leases[0].job.id, leases[0].token, /*result=*/"", kNow));
  }
  ASSERT_OK(backend->Add({MakeJob("stays", "kept")}, kNow));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT topic, state, n FROM topic_counts "
                               "WHERE minute_us = -1",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  std::vector<std::string> rows;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    rows.push_back(absl::StrCat(
        reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), ":",
        sqlite3_column_int(stmt, 1), ":", sqlite3_column_int64(stmt, 2)));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_THAT(rows, ::testing::ElementsAre("kept:1:1"));
}

// Many threads share one Backend object (one connection behind a mutex).
TEST(SqliteBackendTest, ThreadsShareOneBackend) {
  auto backend = MustOpen(FreshDbPath("threads"));
  constexpr int kThreads = 4, kPerThread = 100;
  std::vector<std::thread> threads;
  std::atomic<int> acked{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_OK(backend->Add({MakeJob(absl::StrCat(t, "-", i), "t")}, kNow));
        auto leases = backend->Reserve("t", 2, kNow);
        EXPECT_OK(leases);
        if (!leases.ok()) continue;
        for (const Lease& l : *leases) {
          EXPECT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", kNow));
          acked.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto leases, backend->Reserve("t", 100, kNow));
    if (leases.empty()) break;
    for (const Lease& l : leases) {
      ASSERT_OK(backend->Ack(l.job.id, l.token, /*result=*/"", kNow));
      acked.fetch_add(1);
    }
  }
  EXPECT_EQ(acked.load(), kThreads * kPerThread);
  ASSERT_OK_AND_ASSIGN(auto topics, backend->Topics());
  EXPECT_TRUE(topics.empty());
}

}  // namespace
}  // namespace delayq
