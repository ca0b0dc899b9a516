// Copyright delayq authors.

#include "backends/postgres/internal/schema.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {
namespace {

// Schema version 1: the tables of the SQLite store's version 11, in
// PostgreSQL's types (times and durations in integer µs).
//
// jobs.seq is the enqueue order. due_us is when the job next needs the
// store's attention: for a delayed job the earlier of run_at and expiry,
// for a ready one its expiry, for a reserved one its lease deadline, NULL
// otherwise; partial indexes serve NextDue()/PromoteDue() and a topic's
// promotion in Reserve(). jobs_topic_state serves Stats() and the bounded
// counts that news and limits need: no count table is kept, since one row
// per (topic, state) that every transition updates would serialise the
// store's writers on it. job_order issues the order of deaths and of done
// jobs. news_horizon holds the latest due time announced (see news.h).
// held_ids keeps the ids of jobs that left while their dedup window lasts;
// limits the topics' limits and token buckets.
//
// Counts: a write transaction appends its counts per topic to
// transitions_recent, a row of its own that no other transaction waits
// for (one row per (minute, topic) that every transaction added to would
// queue the store's writers behind each other's commits). Once a minute a
// process folds the recent rows of the minutes before its own into
// transitions, one row per (minute, topic), and into each topic's totals
// (minute_us -1), deleting them from transitions_recent in the same
// statement, so that each is folded once. A minute's counts are its rows in
// both tables; a topic's totals its -1 row plus its recent rows.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE {s}.jobs (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE,
  topic text NOT NULL,
  payload bytea NOT NULL,
  state integer NOT NULL,
  priority integer NOT NULL,
  attempts integer NOT NULL,
  max_attempts integer NOT NULL,
  ttr_us bigint NOT NULL,
  backoff_kind bigint NOT NULL,
  backoff_base_us bigint NOT NULL,
  backoff_max_us bigint NOT NULL,
  enqueued_at_us bigint NOT NULL,
  run_at_us bigint NOT NULL,
  due_us bigint,
  token bigint,
  dead_order bigint,
  last_error text NOT NULL DEFAULT '',
  expire_at_us bigint,
  discard_expired integer NOT NULL DEFAULT 0,
  unique_for_us bigint NOT NULL DEFAULT 0,
  result bytea,
  finished_at_us bigint,
  keep_for_us bigint NOT NULL DEFAULT 0,
  keep_at_most integer NOT NULL DEFAULT 0
);
CREATE INDEX jobs_ready ON {s}.jobs (topic, priority, run_at_us, seq)
  WHERE state = 1;
CREATE INDEX jobs_due ON {s}.jobs (due_us, seq) WHERE due_us IS NOT NULL;
CREATE INDEX jobs_topic_due ON {s}.jobs (topic, due_us, seq)
  WHERE due_us IS NOT NULL;
CREATE INDEX jobs_dead ON {s}.jobs (topic, dead_order) WHERE state = 3;
CREATE INDEX jobs_done ON {s}.jobs (topic, (finished_at_us + keep_for_us),
  dead_order) WHERE state = 4;
CREATE INDEX jobs_leaving ON {s}.jobs ((finished_at_us + keep_for_us))
  WHERE state = 4;
CREATE INDEX jobs_topic_state ON {s}.jobs (topic, state);
CREATE SEQUENCE {s}.job_order;

CREATE TABLE {s}.news_horizon (
  id integer PRIMARY KEY CHECK (id = 1),
  at_us bigint
);
INSERT INTO {s}.news_horizon (id, at_us) VALUES (1, NULL);

CREATE TABLE {s}.paused (topic text PRIMARY KEY);

CREATE TABLE {s}.held_ids (
  id text PRIMARY KEY,
  until_us bigint NOT NULL
);
CREATE INDEX held_ids_until ON {s}.held_ids (until_us);

CREATE TABLE {s}.limits (
  topic text PRIMARY KEY,
  rate bigint NOT NULL,
  period_us bigint NOT NULL,
  burst bigint NOT NULL,
  concurrency bigint NOT NULL,
  tat_us bigint
);

CREATE TABLE {s}.schedules (
  name text PRIMARY KEY,
  spec text NOT NULL,
  time_zone text NOT NULL,
  topic text NOT NULL,
  payload bytea NOT NULL,
  priority integer NOT NULL,
  max_attempts integer NOT NULL,
  ttr_us bigint NOT NULL,
  backoff_kind bigint NOT NULL,
  backoff_base_us bigint NOT NULL,
  backoff_max_us bigint NOT NULL,
  missed_kind integer NOT NULL,
  missed_max integer NOT NULL,
  jitter_us bigint NOT NULL,
  done_through_us bigint NOT NULL,
  revision bigint NOT NULL
);

CREATE TABLE {s}.transitions (
  minute_us bigint NOT NULL,
  topic text NOT NULL,
  enqueued bigint NOT NULL,
  done bigint NOT NULL,
  failed bigint NOT NULL,
  retried bigint NOT NULL,
  expired bigint NOT NULL,
  dead bigint NOT NULL,
  lapsed bigint NOT NULL,
  late0 bigint NOT NULL,
  late1 bigint NOT NULL,
  late2 bigint NOT NULL,
  late3 bigint NOT NULL,
  late4 bigint NOT NULL,
  late5 bigint NOT NULL,
  PRIMARY KEY (minute_us, topic)
);
CREATE TABLE {s}.transitions_recent (
  minute_us bigint NOT NULL,
  topic text NOT NULL,
  enqueued bigint NOT NULL,
  done bigint NOT NULL,
  failed bigint NOT NULL,
  retried bigint NOT NULL,
  expired bigint NOT NULL,
  dead bigint NOT NULL,
  lapsed bigint NOT NULL,
  late0 bigint NOT NULL,
  late1 bigint NOT NULL,
  late2 bigint NOT NULL,
  late3 bigint NOT NULL,
  late4 bigint NOT NULL,
  late5 bigint NOT NULL
);
CREATE INDEX transitions_recent_minute ON {s}.transitions_recent (minute_us);

CREATE TABLE {s}.events (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id text NOT NULL,
  topic text NOT NULL,
  type text NOT NULL,
  at_us bigint NOT NULL,
  attempts integer NOT NULL,
  error text NOT NULL,
  who text NOT NULL
);
CREATE INDEX events_job ON {s}.events (job_id, seq);
)sql";

// Schema version 2: who holds each lease (Job::holder) and since when,
// written by the reservation and read while the job is reserved; leases
// made before have neither (NULL). As the SQLite store's version 13.
constexpr char kSchemaV2[] = R"sql(
ALTER TABLE {s}.jobs ADD COLUMN holder text,
  ADD COLUMN reserved_at_us bigint;
)sql";

// kMigrations[v] turns a schema of version v into version v + 1. Version 0
// is an empty schema. A new version appends its step here and bumps
// kSchemaVersion; steps never change once released.
constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion,
              "one migration per schema version");

// The schema's version, 0 for a schema without delayq's tables; refuses a
// newer one, and a schema that holds other tables.
absl::StatusOr<int64_t> VersionOf(Connection* conn, absl::string_view schema) {
  DQ_ASSIGN_OR_RETURN(
      Result tables,
      conn->Exec("SELECT count(*), count(*) FILTER (WHERE c.relname = "
                 "'schema_version') FROM pg_class c JOIN pg_namespace n "
                 "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND "
                 "c.relkind IN ('r', 'p')",
                 Params().Text(schema)));
  const int64_t all = tables.Int(0, 0), versioned = tables.Int(0, 1);
  if (versioned == 0) {
    if (all == 0) return 0;
    return absl::FailedPreconditionError(absl::StrCat(
        conn->where(), ": schema \"", schema, "\" holds ", all,
        " tables that are not delayq's; give delayq a schema of its own "
        "(?schema=NAME); left untouched"));
  }
  DQ_ASSIGN_OR_RETURN(
      Result version,
      conn->Exec(WithSchema("SELECT version FROM {s}.schema_version", schema)));
  if (version.rows() != 1) {
    return absl::DataLossError(absl::StrCat(conn->where(), ": schema \"",
                                            schema, "\" has no version row"));
  }
  const int64_t v = version.Int(0, 0);
  if (v > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        conn->where(), ": schema \"", schema,
        "\" was written by a newer delayq (schema version ", v,
        "; this build reads up to ", kSchemaVersion, "); left untouched"));
  }
  return v;
}

absl::Status MigrateInTransaction(Connection* conn, absl::string_view schema) {
  // Two processes opening a new store at once: the second waits here, then
  // finds the tables made.
  DQ_RETURN_IF_ERROR(conn->Run(
      "SELECT pg_advisory_xact_lock(hashtext('delayq schema ' || $1))",
      Params().Text(schema)));
  DQ_ASSIGN_OR_RETURN(
      Result exists, conn->Exec("SELECT 1 FROM pg_namespace WHERE nspname = $1",
                                Params().Text(schema)));
  if (exists.rows() == 0) {
    DQ_RETURN_IF_ERROR(conn->Run(WithSchema("CREATE SCHEMA {s}", schema)));
  }
  DQ_ASSIGN_OR_RETURN(int64_t version, VersionOf(conn, schema));
  if (version == kSchemaVersion) return absl::OkStatus();
  if (version == 0) {
    DQ_RETURN_IF_ERROR(conn->RunScript(
        WithSchema("CREATE TABLE {s}.schema_version (id integer PRIMARY KEY "
                   "CHECK (id = 1), version integer NOT NULL); "
                   "INSERT INTO {s}.schema_version (id, version) VALUES (1, 0)",
                   schema)));
  }
  for (int64_t v = version; v < kSchemaVersion; ++v) {
    DQ_RETURN_IF_ERROR(conn->RunScript(WithSchema(kMigrations[v], schema)));
  }
  return conn->Run(
      WithSchema("UPDATE {s}.schema_version SET version = $1", schema),
      Params().Int(kSchemaVersion));
}

}  // namespace

bool ValidSchemaName(absl::string_view name) {
  if (name.empty() || name.size() > 63 || absl::ascii_isdigit(name[0])) {
    return false;
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

std::string WithSchema(absl::string_view sql, absl::string_view schema) {
  return absl::StrReplaceAll(sql, {{"{s}", absl::StrCat("\"", schema, "\"")}});
}

std::string NewsChannel(absl::string_view schema) {
  // Channels are a namespace of their own, per database.
  return std::string(schema);
}

absl::Status PrepareSchema(Connection* conn, absl::string_view schema) {
  DQ_RETURN_IF_ERROR(conn->Run("BEGIN"));
  absl::Status status = MigrateInTransaction(conn, schema);
  if (status.ok()) status = conn->Run("COMMIT");
  if (!status.ok() && conn->InTransaction())
    conn->Run("ROLLBACK").IgnoreError();
  return status;
}

}  // namespace postgres_internal
}  // namespace delayq
