// Copyright delayq authors.

#include "backends/sqlite/internal/schema.h"

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/statements.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {
namespace {

// Schema version 1.
//
// jobs.seq (the rowid) is the enqueue order. due_us is the time at which the
// job next needs the store's attention: run_at for a delayed job, the lease
// deadline for a reserved one, NULL otherwise; one partial index on it serves
// NextDue() and PromoteDue(), another the per-topic promotion in Reserve().
// Partial indexes keep each state's index holding only that state's rows.
//
// counts holds the number of jobs per (topic, state), kept by triggers in the
// same transaction as the change, so Stats() and Topics() never count rows.
// counter issues the death order: it only grows. Fencing tokens are random
// (src/common/lease_token.h), so that no client can work out another's: two
// reservations of one job share a token with probability 2^-52.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE jobs (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  state INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  ttr_us INTEGER NOT NULL,
  backoff_kind INTEGER NOT NULL,
  backoff_base_us INTEGER NOT NULL,
  backoff_max_us INTEGER NOT NULL,
  enqueued_at_us INTEGER NOT NULL,
  run_at_us INTEGER NOT NULL,
  due_us INTEGER,
  token INTEGER,
  dead_order INTEGER,
  last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_ready ON jobs (topic, priority, run_at_us, seq)
  WHERE state = 1;
CREATE INDEX jobs_due ON jobs (due_us) WHERE due_us IS NOT NULL;
CREATE INDEX jobs_topic_due ON jobs (topic, state, due_us, seq)
  WHERE due_us IS NOT NULL;
CREATE INDEX jobs_dead ON jobs (topic, dead_order) WHERE state = 3;

CREATE TABLE counts (
  topic TEXT NOT NULL,
  state INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (topic, state)
) WITHOUT ROWID;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1)
    ON CONFLICT (topic, state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
  UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
END;
CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
  WHEN OLD.state <> NEW.state BEGIN
  UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
  INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1)
    ON CONFLICT (topic, state) DO UPDATE SET n = n + 1;
END;

CREATE TABLE counter (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  value INTEGER NOT NULL
);
INSERT INTO counter (id, value) VALUES (1, 0);
)sql";

// Version 2: news_horizon holds the latest due time announced to the
// processes that subscribe to news (see news.h), NULL before the first.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE news_horizon (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  at_us INTEGER
);
INSERT INTO news_horizon (id, at_us) VALUES (1, NULL);
)sql";

// Version 3: a counts row goes when its count reaches 0, so topics that
// come and go (one per order, per player) leave nothing behind.
constexpr char kSchemaV3[] = R"sql(
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_count_update;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
  UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
  DELETE FROM counts WHERE topic = OLD.topic AND state = OLD.state AND n = 0;
END;
CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
  WHEN OLD.state <> NEW.state BEGIN
  UPDATE counts SET n = n - 1 WHERE topic = OLD.topic AND state = OLD.state;
  DELETE FROM counts WHERE topic = OLD.topic AND state = OLD.state AND n = 0;
  INSERT INTO counts (topic, state, n) VALUES (NEW.topic, NEW.state, 1)
    ON CONFLICT (topic, state) DO UPDATE SET n = n + 1;
END;
DELETE FROM counts WHERE n = 0;
)sql";

// Version 4: the indexes no longer list seq. seq is the rowid, which every
// index already ends with, so ordering by it still comes from the index;
// naming it stored it twice in every entry (3-4 bytes per pending job).
constexpr char kSchemaV4[] = R"sql(
DROP INDEX jobs_ready;
CREATE INDEX jobs_ready ON jobs (topic, priority, run_at_us) WHERE state = 1;
DROP INDEX jobs_topic_due;
CREATE INDEX jobs_topic_due ON jobs (topic, state, due_us)
  WHERE due_us IS NOT NULL;
)sql";

// Version 5: the paused topics (Backend::SetPaused()).
constexpr char kSchemaV5[] = R"sql(
CREATE TABLE paused (topic TEXT PRIMARY KEY) WITHOUT ROWID;
)sql";

// Version 6: expiry and dedup windows. A job may carry expire_at_us (NULL:
// never), discard_expired and unique_for_us (0: none); due_us now also
// holds the expiry where it applies: for a delayed job the earlier of
// run_at and expire_at, for a ready one its expire_at (NULL when it has
// none), so the indexes on due_us find lapsing jobs as they find due ones.
// held_ids keeps the ids of jobs that left while their dedup window lasts.
constexpr char kSchemaV6[] = R"sql(
ALTER TABLE jobs ADD COLUMN expire_at_us INTEGER;
ALTER TABLE jobs ADD COLUMN discard_expired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN unique_for_us INTEGER NOT NULL DEFAULT 0;
CREATE TABLE held_ids (
  id TEXT PRIMARY KEY,
  until_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX held_ids_until ON held_ids (until_us);
)sql";

// Version 7: topic limits (Backend::SetLimit()): the limit and its token
// bucket's theoretical arrival time (NULL for a fresh bucket), see
// src/common/limit_gate.h.
constexpr char kSchemaV7[] = R"sql(
CREATE TABLE limits (
  topic TEXT PRIMARY KEY,
  rate INTEGER NOT NULL,
  period_us INTEGER NOT NULL,
  burst INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  tat_us INTEGER
) WITHOUT ROWID;
)sql";

// Version 8: periodic schedules (Backend::PutSchedule()). Durations and
// times in µs; missed_kind 0 skip, 1 once, 2 all (up to missed_max).
constexpr char kSchemaV8[] = R"sql(
CREATE TABLE schedules (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  priority INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  ttr_us INTEGER NOT NULL,
  backoff_kind INTEGER NOT NULL,
  backoff_base_us INTEGER NOT NULL,
  backoff_max_us INTEGER NOT NULL,
  missed_kind INTEGER NOT NULL,
  missed_max INTEGER NOT NULL,
  jitter_us INTEGER NOT NULL,
  done_through_us INTEGER NOT NULL,
  revision INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

// Version 9: what the store counts (Backend::Counts()): per minute (its
// start in µs) and topic, the transitions of that minute, written in the
// transaction that makes them; minute_us -1 holds each topic's totals. The
// key leads with the minute, so a window's rows, and the old minutes that
// leave it, are one range.
constexpr char kSchemaV9[] = R"sql(
CREATE TABLE transitions (
  minute_us INTEGER NOT NULL,
  topic TEXT NOT NULL,
  enqueued INTEGER NOT NULL,
  done INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  retried INTEGER NOT NULL,
  expired INTEGER NOT NULL,
  dead INTEGER NOT NULL,
  lapsed INTEGER NOT NULL,
  late0 INTEGER NOT NULL,
  late1 INTEGER NOT NULL,
  late2 INTEGER NOT NULL,
  late3 INTEGER NOT NULL,
  late4 INTEGER NOT NULL,
  late5 INTEGER NOT NULL,
  PRIMARY KEY (minute_us, topic)
) WITHOUT ROWID;
)sql";

// Version 10: a write transaction adds its counts to its minute's row in
// transitions_recent only (one row per topic, in a table of a minute or
// two); once a minute a connection folds the recent minutes before its own
// into transitions, each into its minute's row and its topic's totals
// (minute -1), and deletes them here. A minute's counts are its rows in
// both tables; a topic's totals its -1 row plus its recent rows. Nothing is
// folded twice: a folded row leaves this table in the same transaction,
// and a write whose clock is behind a fold starts a new recent row.
constexpr char kSchemaV10[] = R"sql(
CREATE TABLE transitions_recent (
  minute_us INTEGER NOT NULL,
  topic TEXT NOT NULL,
  enqueued INTEGER NOT NULL,
  done INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  retried INTEGER NOT NULL,
  expired INTEGER NOT NULL,
  dead INTEGER NOT NULL,
  lapsed INTEGER NOT NULL,
  late0 INTEGER NOT NULL,
  late1 INTEGER NOT NULL,
  late2 INTEGER NOT NULL,
  late3 INTEGER NOT NULL,
  late4 INTEGER NOT NULL,
  late5 INTEGER NOT NULL,
  PRIMARY KEY (minute_us, topic)
) WITHOUT ROWID;
)sql";

// Version 11: done jobs (NewJob::keep_for). A job acknowledged with a
// keep_for stays as state 4 with its result and finished_at_us (also set
// for dead jobs: when they died), no token and no due_us, so the indexes on
// due_us and the ready index never hold it; the count triggers count it
// like any state. It leaves at finished_at_us + keep_for_us; ties leave in
// the order they were kept, which dead_order holds for a done job (the
// counter's next value, as for a death). jobs_done serves a topic's done
// jobs in the order they leave, jobs_leaving the store's.
constexpr char kSchemaV11[] = R"sql(
ALTER TABLE jobs ADD COLUMN result BLOB;
ALTER TABLE jobs ADD COLUMN finished_at_us INTEGER;
ALTER TABLE jobs ADD COLUMN keep_for_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN keep_at_most INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_done ON jobs (topic, finished_at_us + keep_for_us,
  dead_order) WHERE state = 4;
CREATE INDEX jobs_leaving ON jobs (finished_at_us + keep_for_us)
  WHERE state = 4;
)sql";

// Version 12: the event log (delayq/event_log.h, Backend::AppendEvents()):
// one row per event in the order appended (seq, the rowid); the oldest are
// deleted as new ones come in, so the newest EventLogOptions::max_events
// stay. events_job serves one job's history.
constexpr char kSchemaV12[] = R"sql(
CREATE TABLE events (
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  type TEXT NOT NULL,
  at_us INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  error TEXT NOT NULL,
  who TEXT NOT NULL
);
CREATE INDEX events_job ON events (job_id, seq);
)sql";

// Version 13: jobs that wait for others (NewJob::after). A row of
// dependencies says that `dependant` (a job in state 5, waiting, with no
// due_us) still waits for `dependency`; the row goes in the transaction in
// which the dependency is acknowledged, dies or leaves, and a dependant
// with no row left is released in that same transaction. jobs.dep_policy
// is the dependant's DependencyFailure (0 fail, 1 cancel, 2 run).
// dependencies_dependant serves Cancel() of a waiting job and the check
// that a dependant waits for nothing more; jobs_waiting, List(kWaiting).
// Self-contained: it touches no other version's tables but the column it adds
// to jobs.
constexpr char kSchemaDependencies[] = R"sql(
ALTER TABLE jobs ADD COLUMN dep_policy INTEGER NOT NULL DEFAULT 0;
CREATE TABLE dependencies (
  dependency TEXT NOT NULL,
  dependant TEXT NOT NULL,
  PRIMARY KEY (dependency, dependant)
) WITHOUT ROWID;
CREATE INDEX dependencies_dependant ON dependencies (dependant);
CREATE INDEX jobs_waiting ON jobs (topic) WHERE state = 5;
)sql";

// Version 14: who holds each lease (Job::holder) and since when, written
// by the reservation and read while the job is reserved; older leases have
// neither (NULL).
constexpr char kSchemaLeaseHolders[] = R"sql(
ALTER TABLE jobs ADD COLUMN holder TEXT;
ALTER TABLE jobs ADD COLUMN reserved_at_us INTEGER;
)sql";

// Version 15: batches (delayq/batch.h). A batch's row holds its counts; a
// row of batch_jobs names the batch of each job of one that has not
// finished yet, and goes when the job finishes, so a job is counted once.
// A batch leaves with its completion job, whose id is the batch's: the
// trigger says so once for every way a job leaves the table.
constexpr char kSchemaBatches[] = R"sql(
CREATE TABLE batches (
  id TEXT PRIMARY KEY,
  closed INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL DEFAULT 0,
  done INTEGER NOT NULL DEFAULT 0,
  dead INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE batch_jobs (
  job TEXT PRIMARY KEY,
  batch TEXT NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER batch_leaves_with_its_completion_job AFTER DELETE ON jobs
BEGIN
  DELETE FROM batches WHERE id = OLD.id;
END;
)sql";

// Version 16: a topic's counts share one table, and so the pages of one
// b-tree: the number of its jobs in each state (rows of minute_us -1, kept
// by the triggers) and its transitions of the recent minutes (rows of state
// -1, what transitions_recent held). Every counted transition changes a
// job's state, whose row the triggers write anyway, so its count now lands
// in a page the transaction already writes rather than in a table of its
// own: one page, one WAL frame, less per write transaction.
constexpr char kSchemaTopicCounts[] = R"sql(
CREATE TABLE topic_counts (
  topic TEXT NOT NULL,
  state INTEGER NOT NULL,
  minute_us INTEGER NOT NULL,
  n INTEGER NOT NULL DEFAULT 0,
  enqueued INTEGER NOT NULL DEFAULT 0,
  done INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  retried INTEGER NOT NULL DEFAULT 0,
  expired INTEGER NOT NULL DEFAULT 0,
  dead INTEGER NOT NULL DEFAULT 0,
  lapsed INTEGER NOT NULL DEFAULT 0,
  late0 INTEGER NOT NULL DEFAULT 0,
  late1 INTEGER NOT NULL DEFAULT 0,
  late2 INTEGER NOT NULL DEFAULT 0,
  late3 INTEGER NOT NULL DEFAULT 0,
  late4 INTEGER NOT NULL DEFAULT 0,
  late5 INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (topic, state, minute_us)
) WITHOUT ROWID;
INSERT INTO topic_counts (topic, state, minute_us, n)
  SELECT topic, state, -1, n FROM counts;
INSERT INTO topic_counts (topic, state, minute_us, enqueued, done, failed,
    retried, expired, dead, lapsed, late0, late1, late2, late3, late4, late5)
  SELECT topic, -1, minute_us, enqueued, done, failed, retried, expired,
    dead, lapsed, late0, late1, late2, late3, late4, late5
  FROM transitions_recent;
DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_count_update;
DROP TABLE counts;
DROP TABLE transitions_recent;
CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO topic_counts (topic, state, minute_us, n)
    VALUES (NEW.topic, NEW.state, -1, 1)
    ON CONFLICT (topic, state, minute_us) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
  UPDATE topic_counts SET n = n - 1
    WHERE topic = OLD.topic AND state = OLD.state AND minute_us = -1;
  DELETE FROM topic_counts
    WHERE topic = OLD.topic AND state = OLD.state AND minute_us = -1
      AND n = 0;
END;
CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs
  WHEN OLD.state <> NEW.state BEGIN
  UPDATE topic_counts SET n = n - 1
    WHERE topic = OLD.topic AND state = OLD.state AND minute_us = -1;
  DELETE FROM topic_counts
    WHERE topic = OLD.topic AND state = OLD.state AND minute_us = -1
      AND n = 0;
  INSERT INTO topic_counts (topic, state, minute_us, n)
    VALUES (NEW.topic, NEW.state, -1, 1)
    ON CONFLICT (topic, state, minute_us) DO UPDATE SET n = n + 1;
END;
)sql";

// Version 17: what a job waits for, for the job's whole life (Job::after,
// and the results Lease::dependency_results hands on). A row of job_after
// per id of the job's JobOptions::after, at its position; jobs.after_count
// says how many, so that reading a job (a reservation above all) looks at
// job_after only for a job that has some, and the trigger that takes the
// rows along when the job leaves runs only for such a job. A job that
// waits when its file is migrated gets the dependencies it still waits for
// (the met ones were not kept), in id order.
constexpr char kSchemaDependencyLists[] = R"sql(
ALTER TABLE jobs ADD COLUMN after_count INTEGER NOT NULL DEFAULT 0;
CREATE TABLE job_after (
  job TEXT NOT NULL,
  pos INTEGER NOT NULL,
  dependency TEXT NOT NULL,
  PRIMARY KEY (job, pos)
) WITHOUT ROWID;
INSERT INTO job_after (job, pos, dependency)
  SELECT dependant,
    row_number() OVER (PARTITION BY dependant ORDER BY dependency) - 1,
    dependency
  FROM dependencies;
UPDATE jobs SET after_count =
  (SELECT count(*) FROM job_after WHERE job_after.job = jobs.id)
  WHERE id IN (SELECT job FROM job_after);
CREATE TRIGGER job_after_leaves_with_its_job AFTER DELETE ON jobs
  WHEN OLD.after_count > 0 BEGIN
  DELETE FROM job_after WHERE job = OLD.id;
END;
)sql";

// Version 18: a batch's jobs leave it with the batch. A batch dropped with
// its completion job (cancelled while waiting) takes its rows of
// batch_jobs along, so that a later batch of the same id counts only the
// jobs that joined it. The trigger runs only when a batch leaves, never
// for a plain job; the index lets it find the rows. Rows a file kept of
// batches already gone are deleted (those of a batch whose id was opened
// again since cannot be told from the new batch's, and stay).
constexpr char kSchemaBatchMembership[] = R"sql(
DELETE FROM batch_jobs WHERE batch NOT IN (SELECT id FROM batches);
CREATE INDEX batch_jobs_batch ON batch_jobs (batch);
CREATE TRIGGER batch_jobs_leave_with_their_batch AFTER DELETE ON batches
BEGIN
  DELETE FROM batch_jobs WHERE batch = OLD.id;
END;
)sql";

// kMigrations[v] turns a schema of version v into version v + 1. Version 0
// is an empty database. A new version appends its step here and bumps
// kSchemaVersion; steps never change once released.
constexpr const char* kMigrations[] = {kSchemaV1,
                                       kSchemaV2,
                                       kSchemaV3,
                                       kSchemaV4,
                                       kSchemaV5,
                                       kSchemaV6,
                                       kSchemaV7,
                                       kSchemaV8,
                                       kSchemaV9,
                                       kSchemaV10,
                                       kSchemaV11,
                                       kSchemaV12,
                                       kSchemaDependencies,
                                       kSchemaLeaseHolders,
                                       kSchemaBatches,
                                       kSchemaTopicCounts,
                                       kSchemaDependencyLists,
                                       kSchemaBatchMembership};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion,
              "one migration per schema version");

absl::StatusOr<int64_t> QueryInt(Connection* conn, absl::string_view sql) {
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Statement> stmt, conn->Prepare(sql));
  DQ_ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return conn->Error(SQLITE_INTERNAL, absl::StrCat(sql, ": no row"));
  return stmt->Int64(0);
}

// The schema version of the file behind `conn`, 0 for an empty database;
// refuses a file that is not delayq's or is of a newer schema. Reads only.
absl::StatusOr<int64_t> CheckedVersion(Connection* conn) {
  DQ_ASSIGN_OR_RETURN(int64_t app_id, QueryInt(conn, "PRAGMA application_id"));
  DQ_ASSIGN_OR_RETURN(int64_t version, QueryInt(conn, "PRAGMA user_version"));
  DQ_ASSIGN_OR_RETURN(int64_t objects,
                      QueryInt(conn, "SELECT count(*) FROM sqlite_schema"));
  const std::string& path = conn->path();
  if (app_id == kApplicationId) {
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "sqlite ", path, ": written by a newer delayq (schema version ",
          version, "; this build reads up to ", kSchemaVersion,
          "); left untouched"));
    }
    if (version < 1) {
      return absl::DataLossError(absl::StrCat(
          "sqlite ", path, ": delayq database with invalid schema version ",
          version));
    }
    return version;
  }
  if (app_id == 0 && objects == 0 && version == 0) {
    return 0;  // an empty database: ours to initialise
  }
  return absl::FailedPreconditionError(
      absl::StrCat("sqlite ", path, ": not a delayq database (application_id ",
                   app_id, ", ", objects, " schema objects); left untouched"));
}

// Reads the root page of every table and index of the current schema, so
// that a damaged file is reported at open rather than at the first job.
absl::Status TouchTables(Connection* conn) {
  return conn->Exec(
      "SELECT max(seq) FROM jobs; SELECT count(*) FROM topic_counts;"
      "SELECT value FROM counter; SELECT at_us FROM news_horizon;"
      "SELECT count(*) FROM held_ids;"
      "SELECT count(*) FROM schedules;"
      "SELECT count(*) FROM transitions;"
      "SELECT max(seq) FROM events;"
      "SELECT count(*) FROM dependencies;"
      "SELECT count(*) FROM job_after;"
      "SELECT due_us FROM jobs WHERE due_us IS NOT NULL ORDER BY due_us "
      "LIMIT 1;"
      "SELECT finished_at_us + keep_for_us FROM jobs WHERE state = 4 "
      "ORDER BY finished_at_us + keep_for_us LIMIT 1",
      "read schema");
}

// Names every column delayq's statements use, so that a file whose version
// is delayq's but whose tables are not (damaged, or altered by hand) is
// refused before a migration is committed to it.
absl::Status ProbeColumns(Connection* conn) {
  return conn->Exec(
      "SELECT " DQ_JOB_COLUMNS
      ", dead_order, dep_policy FROM jobs WHERE 0;"
      "SELECT dependency, dependant FROM dependencies WHERE 0;"
      "SELECT job, pos, dependency FROM job_after WHERE 0;"
      "SELECT topic, state, minute_us, n, " DQ_COUNT_COLUMNS
      " FROM topic_counts WHERE 0;"
      "SELECT value FROM counter WHERE 0;"
      "SELECT at_us FROM news_horizon WHERE 0;"
      "SELECT topic FROM paused WHERE 0;"
      "SELECT id, until_us FROM held_ids WHERE 0;"
      "SELECT topic, rate, period_us, burst, concurrency, tat_us FROM limits "
      "WHERE 0;"
      "SELECT " DQ_SCHEDULE_COLUMNS
      " FROM schedules WHERE 0;"
      "SELECT minute_us, topic, " DQ_COUNT_COLUMNS
      " FROM transitions WHERE 0;"
      "SELECT seq, job_id, topic, type, at_us, attempts, error, who "
      "FROM events WHERE 0",
      "check the migrated tables");
}

// SQLite's quick_check of the whole file: a file about to be initialised or
// migrated must be sound first, or the writes would change a file that is
// then refused.
absl::Status CheckIntact(Connection* conn) {
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Statement> check,
                      conn->Prepare("PRAGMA quick_check(1)"));
  DQ_ASSIGN_OR_RETURN(bool row, check->Step());
  const std::string result = row ? check->Text(0) : "";
  if (result == "ok") return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("sqlite ", conn->path(),
                                          ": damaged file (", result,
                                          "); left untouched"));
}

// Checks the file in a read transaction: what a refused file must be
// refused for is found before anything is written. (Even a write
// transaction that changes nothing can rewrite a damaged file's header.)
// Gives the file's schema version.
absl::StatusOr<int64_t> CheckBeforeWriting(
    Connection* conn, absl::FunctionRef<absl::Status(Connection*)> compile) {
  DQ_RETURN_IF_ERROR(conn->Exec("BEGIN", "begin schema check"));
  absl::StatusOr<int64_t> version = CheckedVersion(conn);
  if (version.ok()) {
    absl::Status sound =
        *version == kSchemaVersion ? TouchTables(conn) : CheckIntact(conn);
    if (sound.ok() && *version == kSchemaVersion) sound = compile(conn);
    if (!sound.ok()) version = sound;
  }
  conn->Rollback();
  return version;
}

// A migration's constraint error (AlreadyExists): the rows of the file
// collide in the new tables, which no file delayq wrote can do (each step
// copies rows whose keys it knows to be distinct). The file is damaged, or
// was changed by hand; it is not an id the caller reused.
absl::Status RowsOfTheFile(absl::Status status) {
  if (!absl::IsAlreadyExists(status)) return status;
  return absl::DataLossError(
      absl::StrCat(status.message(), "; the file's rows are not delayq's"));
}

// Initialises or migrates the file to kSchemaVersion in one write
// transaction. BEGIN IMMEDIATE: two processes opening a new file at once
// initialise it once; the second sees the first's schema.
absl::Status Migrate(Connection* conn,
                     absl::FunctionRef<absl::Status(Connection*)> compile) {
  DQ_RETURN_IF_ERROR(conn->Exec("BEGIN IMMEDIATE", "begin schema migration"));
  absl::Status status = [&]() -> absl::Status {
    DQ_ASSIGN_OR_RETURN(int64_t version, CheckedVersion(conn));
    for (int64_t v = version; v < kSchemaVersion; ++v) {
      DQ_RETURN_IF_ERROR(RowsOfTheFile(conn->Exec(
          kMigrations[v], absl::StrCat("migrate schema to version ", v + 1))));
    }
    if (version == kSchemaVersion) return absl::OkStatus();
    DQ_RETURN_IF_ERROR(ProbeColumns(conn));
    // A file this transaction initialised holds delayq's own schema only;
    // compiling every statement here would only hold the write lock longer
    // while other processes wait to open the same new file.
    if (version > 0) DQ_RETURN_IF_ERROR(compile(conn));
    return conn->Exec(absl::StrCat("PRAGMA application_id = ", kApplicationId,
                                   "; PRAGMA user_version = ", kSchemaVersion),
                      "set schema version");
  }();
  if (status.ok()) status = conn->Exec("COMMIT", "commit schema");
  if (!status.ok()) conn->Rollback();
  return status;
}

}  // namespace

bool ValidPageSize(int bytes) {
  return bytes >= 512 && bytes <= 65536 && (bytes & (bytes - 1)) == 0;
}

absl::Status PrepareSchema(
    Connection* conn, int page_size,
    absl::FunctionRef<absl::Status(Connection*)> compile) {
  // Takes effect only while the file is still empty; a file that has tables
  // keeps its page size.
  DQ_RETURN_IF_ERROR(conn->Exec(absl::StrCat("PRAGMA page_size = ", page_size),
                                "set page size"));
  DQ_ASSIGN_OR_RETURN(int64_t version, CheckBeforeWriting(conn, compile));
  if (version != kSchemaVersion) DQ_RETURN_IF_ERROR(Migrate(conn, compile));
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Statement> wal,
                      conn->Prepare("PRAGMA journal_mode = WAL"));
  DQ_ASSIGN_OR_RETURN(bool row, wal->Step());
  const std::string mode = row ? wal->Text(0) : "";
  if (mode != "wal") {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite ", conn->path(),
        ": cannot switch to WAL mode (journal_mode is '", mode, "')"));
  }
  // The tables were read (or, for a migrated file, the whole file checked)
  // before anything was written: nothing is left to read here.
  return absl::OkStatus();
}

absl::Status CheckSchemaForTransaction(Connection* conn) {
  DQ_ASSIGN_OR_RETURN(int64_t app_id, QueryInt(conn, "PRAGMA application_id"));
  DQ_ASSIGN_OR_RETURN(int64_t version, QueryInt(conn, "PRAGMA user_version"));
  const std::string& path = conn->path();
  if (app_id != kApplicationId) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite ", path,
        ": the file has no delayq schema; open it once with "
        "OpenSqliteBackend() (or any delayq program on sqlite:PATH) before "
        "the application's transaction, to create it"));
  }
  if (version < kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite ", path, ": delayq schema version ", version,
        ", this build writes ", kSchemaVersion,
        "; open the file once with this build's OpenSqliteBackend(), which "
        "upgrades it"));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite ", path, ": written by a newer delayq (schema version ",
        version, "; this build writes ", kSchemaVersion,
        "); enqueue with that delayq"));
  }
  DQ_ASSIGN_OR_RETURN(std::unique_ptr<Statement> mode,
                      conn->Prepare("PRAGMA main.journal_mode"));
  DQ_ASSIGN_OR_RETURN(bool row, mode->Step());
  if (!row || mode->Text(0) != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite ", path, ": the connection's journal_mode is '",
                     row ? mode->Text(0) : "",
                     "', not 'wal' as delayq leaves the file; "
                     "news of the commit needs WAL mode: do not change it"));
  }
  return absl::OkStatus();
}

}  // namespace sqlite_internal
}  // namespace delayq
