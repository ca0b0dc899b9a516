// Copyright delayq authors.
//
// statements.h — the SQL of every PostgreSQL Backend operation. "{s}" is
// the store's schema (WithSchema()). Every query walks an index of
// schema.cc; the ones that take jobs to change them lock them with
// FOR UPDATE SKIP LOCKED, so that callers of several processes take
// different jobs rather than wait for each other's.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_STATEMENTS_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_STATEMENTS_H_

namespace delayq {
namespace postgres_internal {

// The columns ReadJob() decodes, in its order.
#define DQ_PG_JOB_COLUMNS                                                   \
  "seq, id, topic, payload, state, priority, attempts, max_attempts, "      \
  "ttr_us, backoff_kind, backoff_base_us, backoff_max_us, enqueued_at_us, " \
  "run_at_us, due_us, token, last_error, expire_at_us, discard_expired, "   \
  "unique_for_us, result, finished_at_us, keep_for_us, keep_at_most, "      \
  "holder, reserved_at_us, after_count"
// How many columns DQ_PG_JOB_COLUMNS names.
inline constexpr int kJobColumnCount = 27;
// Where after_count is among them: how many ids job_after holds of the job.
inline constexpr int kAfterCountColumn = 26;

// due_us of a job that waits in state `state` (0 delayed, 1 ready) for
// `run_at`: a ready job is due when it expires, a delayed one at the
// earlier of its run_at and its expiry.
#define DQ_PG_WAITING_DUE(state, run_at)                         \
  "CASE WHEN " state " = 1 THEN expire_at_us ELSE LEAST(" run_at \
  ", coalesce(expire_at_us, " run_at ")) END"

// The jobs in each state, in words that name the partial index of
// schema.cc that holds them with their topic first: jobs_topic_due for the
// delayed and reserved jobs, which always have a due time; jobs_ready,
// jobs_dead, jobs_done and jobs_waiting for the others.
#define DQ_PG_DELAYED "state = 0 AND due_us IS NOT NULL"
#define DQ_PG_READY "state = 1"
#define DQ_PG_RESERVED "state = 2 AND due_us IS NOT NULL"
#define DQ_PG_DEAD "state = 3"
#define DQ_PG_DONE "state = 4"
#define DQ_PG_WAITING "state = 5"

// When a done job leaves the store, as jobs_done and jobs_leaving index it.
#define DQ_PG_LEAVE_AT "(finished_at_us + keep_for_us)"

// The columns ReadSchedule() decodes, in its order.
#define DQ_PG_SCHEDULE_COLUMNS                                              \
  "name, spec, time_zone, topic, payload, priority, max_attempts, ttr_us, " \
  "backoff_kind, backoff_base_us, backoff_max_us, missed_kind, "            \
  "missed_max, jitter_us, done_through_us, revision"

// The count columns of the transitions table, in JobCounts order.
#define DQ_PG_COUNT_COLUMNS                                                \
  "enqueued, done, failed, retried, expired, dead, lapsed, late0, late1, " \
  "late2, late3, late4, late5"
#define DQ_PG_COUNT_SUMS                                                     \
  "sum(enqueued), sum(done), sum(failed), sum(retried), sum(expired), "      \
  "sum(dead), sum(lapsed), sum(late0), sum(late1), sum(late2), sum(late3), " \
  "sum(late4), sum(late5)"
#define DQ_PG_COUNT_ADDS                                                    \
  "enqueued = t.enqueued + excluded.enqueued, "                             \
  "done = t.done + excluded.done, failed = t.failed + excluded.failed, "    \
  "retried = t.retried + excluded.retried, "                                \
  "expired = t.expired + excluded.expired, dead = t.dead + excluded.dead, " \
  "lapsed = t.lapsed + excluded.lapsed, late0 = t.late0 + excluded.late0, " \
  "late1 = t.late1 + excluded.late1, late2 = t.late2 + excluded.late2, "    \
  "late3 = t.late3 + excluded.late3, late4 = t.late4 + excluded.late4, "    \
  "late5 = t.late5 + excluded.late5"

struct Sql {
  // Add(): a batch in one statement, the jobs in the order of the arrays
  // (so their seqs, the enqueue order, follow it); enqueued at $1.
  // The event log (events.cc): a batch in one statement, then the oldest
  // beyond the bound go.
  static constexpr const char* kEventsInsert =
      "INSERT INTO {s}.events (job_id, topic, type, at_us, attempts, error, "
      "who) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], "
      "$4::bigint[], $5::bigint[], $6::text[], $7::text[])";
  // Bounded on both sides, so that even a plan made for any $1 reads the
  // oldest rows through the key (with one bound the planner guesses a third
  // of the table and reads all of it, on every append).
  static constexpr const char* kEventsTrim =
      "DELETE FROM {s}.events WHERE seq >= (SELECT min(seq) FROM {s}.events) "
      "AND seq <= (SELECT max(seq) FROM {s}.events) - $1";
  static constexpr const char* kEventsOfJob =
      "SELECT type, topic, at_us, attempts, error, who FROM (SELECT * FROM "
      "{s}.events WHERE job_id = $1 ORDER BY seq DESC LIMIT $2) e ORDER BY seq";

  static constexpr const char* kInsert =
      "INSERT INTO {s}.jobs (id, topic, payload, state, priority, attempts, "
      "max_attempts, ttr_us, backoff_kind, backoff_base_us, backoff_max_us, "
      "enqueued_at_us, run_at_us, due_us, expire_at_us, discard_expired, "
      "unique_for_us, keep_for_us, keep_at_most, after_count) "
      "SELECT id, topic, payload, state, priority, 0, max_attempts, ttr_us, "
      "backoff_kind, backoff_base_us, backoff_max_us, $1, run_at_us, due_us, "
      "expire_at_us, discard_expired, unique_for_us, keep_for_us, "
      "keep_at_most, after_count FROM unnest($2::text[], $3::text[], "
      "$4::bytea[], $5::int[], $6::int[], $7::int[], $8::bigint[], "
      "$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], "
      "$13::bigint[], $14::bigint[], $15::int[], $16::bigint[], "
      "$17::bigint[], $18::int[], $19::int[]) "
      "WITH ORDINALITY AS j(id, topic, payload, state, priority, "
      "max_attempts, ttr_us, backoff_kind, backoff_base_us, backoff_max_us, "
      "run_at_us, due_us, expire_at_us, discard_expired, unique_for_us, "
      "keep_for_us, keep_at_most, after_count, n) ORDER BY n";
  // The ids of $1 that a live job or a dedup window (at $2) holds. One
  // look by key per id (LATERAL ... LIMIT 1): the plan a producer keeps,
  // made when the table was empty, would otherwise scan the whole table
  // on every enqueue as it grows.
  static constexpr const char* kTakenIds =
      "SELECT u.id FROM unnest($1::text[]) AS u(id), LATERAL (SELECT 1 "
      "FROM {s}.jobs j WHERE j.id = u.id LIMIT 1) AS live UNION ALL "
      "SELECT u.id FROM unnest($1::text[]) AS u(id), LATERAL (SELECT 1 "
      "FROM {s}.held_ids h WHERE h.id = u.id AND h.until_us > $2 LIMIT 1) "
      "AS held";

  // Dedup windows: ids held until a time; the ones that passed go with
  // the once-a-minute fold of the counts.
  static constexpr const char* kDropHolds =
      "DELETE FROM {s}.held_ids WHERE until_us <= $1";
  static constexpr const char* kHold =
      "INSERT INTO {s}.held_ids (id, until_us) VALUES ($1, $2) "
      "ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us";

  // Moving due jobs, in one statement: delayed jobs with run_at <= $2 and
  // reservations with deadline <= $2 become ready (kind 0 promoted, 2
  // expired), or dead ("lease expired", kind 1); jobs whose expiry came
  // lapse: dead ("expired", kind 3) or deleted with their ids held (kind
  // 4). Up to $4 of the due jobs, earliest first, are moved; `found` counts
  // up to $3 (= $4 + 1), so that more than $4 says more remain. Jobs
  // another transaction holds are passed over. $5 and $6 are the dead
  // jobs' last errors.
#define DQ_PG_MOVE_DUE(where)                                                 \
  "WITH candidates AS (SELECT seq, id, topic, state, attempts, "              \
  "max_attempts, expire_at_us, discard_expired, unique_for_us, due_us "       \
  "FROM {s}.jobs WHERE " where                                                \
  " AND due_us IS NOT NULL AND due_us <= $2 "                                 \
  "ORDER BY due_us, seq LIMIT $3 FOR UPDATE SKIP LOCKED), "                   \
  "due AS (SELECT *, CASE WHEN state = 2 AND attempts >= max_attempts "       \
  "THEN 1 WHEN expire_at_us IS NOT NULL AND expire_at_us <= $2 THEN "         \
  "CASE WHEN discard_expired <> 0 THEN 4 ELSE 3 END WHEN state = 0 THEN 0 "   \
  "ELSE 2 END AS kind FROM candidates ORDER BY due_us, seq LIMIT $4), "       \
  "readied AS (UPDATE {s}.jobs j SET state = 1, due_us = j.expire_at_us, "    \
  "token = NULL FROM due WHERE j.seq = due.seq AND due.kind IN (0, 2)), "     \
  "killed AS (UPDATE {s}.jobs j SET state = 3, due_us = NULL, token = NULL, " \
  "dead_order = nextval('{s}.job_order'), last_error = CASE WHEN "            \
  "due.kind = 1 THEN $5 ELSE $6 END, finished_at_us = $2 FROM due "           \
  "WHERE j.seq = due.seq AND due.kind IN (1, 3)), "                           \
  "dropped AS (DELETE FROM {s}.jobs j USING due WHERE j.seq = due.seq "       \
  "AND due.kind = 4), "                                                       \
  "held AS (INSERT INTO {s}.held_ids (id, until_us) SELECT id, "              \
  "$2 + unique_for_us FROM due WHERE kind = 4 AND unique_for_us > 0 "         \
  "ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us)"

  // PromoteDue(): the due jobs of every topic (jobs_due); $1 is NULL, the
  // topic the statements share a numbering with. Rows: id, topic,
  // attempts, kind, found.
  static constexpr const char* kMoveDue =
      DQ_PG_MOVE_DUE("$1::text IS NULL")
      " SELECT d.id, d.topic, d.attempts, d.kind, "
      "(SELECT count(*) FROM candidates) FROM due d ORDER BY d.due_us, d.seq";
  // Reserve()'s first step: the due jobs of topic $1 (jobs_topic_due), and
  // in the same round trip whether the topic is paused and its limit,
  // locked, so that reservations under one limit take turns and each sees
  // the bucket and the reserved jobs the one before left. Rows: paused,
  // rate, period_us, burst, concurrency, tat_us (NULLs: no limit), then
  // id, topic, attempts, kind, found of a moved job (NULLs when none
  // moved: the one row then only says the rest).
  static constexpr const char* kMoveDueOfTopic =
      DQ_PG_MOVE_DUE("topic = $1 AND state IN (0, 1, 2)")
      ", gate AS (SELECT EXISTS (SELECT 1 FROM {s}.paused WHERE topic = $1) "
      "AS paused, l.rate, l.period_us, l.burst, l.concurrency, l.tat_us "
      "FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT rate, period_us, "
      "burst, concurrency, tat_us FROM {s}.limits WHERE topic = $1 "
      "FOR UPDATE) AS l ON true) "
      "SELECT g.paused, g.rate, g.period_us, g.burst, g.concurrency, "
      "g.tat_us, d.id, d.topic, d.attempts, d.kind, "
      "(SELECT count(*) FROM candidates) FROM gate g LEFT JOIN due d ON true "
      "ORDER BY d.due_us, d.seq";
  // Fail() on the last attempt ($2 the error); PurgeDead() of one job.
  static constexpr const char* kMakeDead =
      "UPDATE {s}.jobs SET state = 3, due_us = NULL, token = NULL, "
      "dead_order = nextval('{s}.job_order'), last_error = $2, "
      "finished_at_us = $3 WHERE seq = $1";
  static constexpr const char* kDiscard = "DELETE FROM {s}.jobs WHERE seq = $1";

  static constexpr const char* kNextDue =
      "SELECT due_us FROM {s}.jobs WHERE due_us IS NOT NULL "
      "ORDER BY due_us LIMIT 1";

  // Reserve(): the first $2 ready jobs of a topic (jobs_ready), leased in
  // one statement. Jobs another transaction holds are passed over; the
  // tokens follow the ready order from $4; each lease runs ttr from now,
  // or from run_at when the caller's clock is behind it.
  static constexpr const char* kReserve =
      "WITH taken AS (SELECT seq, priority, run_at_us FROM {s}.jobs "
      "WHERE topic = $1 AND state = 1 ORDER BY priority, run_at_us, seq "
      "LIMIT $2 FOR UPDATE SKIP LOCKED), "
      "ranked AS (SELECT seq AS taken_seq, row_number() OVER "
      "(ORDER BY priority, run_at_us, seq) - 1 AS k FROM taken) "
      "UPDATE {s}.jobs j SET state = 2, attempts = j.attempts + 1, "
      "due_us = GREATEST($3, j.run_at_us) + j.ttr_us, token = $4 + ranked.k, "
      "holder = $5, reserved_at_us = $3 "
      "FROM ranked WHERE j.seq = ranked.taken_seq RETURNING " DQ_PG_JOB_COLUMNS;

  // The plain paths (schema.cc, version 7): a reservation ($7 the
  // minute of its counts or NULL, $8 the lateness bounds, $9 the news
  // channel) and an acknowledgement ($4 the minute or NULL), each with all
  // it writes in one statement.
  static constexpr const char* kReservePlain =
      "SELECT " DQ_PG_JOB_COLUMNS
      " FROM {s}.reserve_plain($1, $2, $3, $4, $5, $6, $7, $8, $9)";
  static constexpr const char* kAckPlain =
      "SELECT {s}.ack_plain($1, $2, $3, $4)";
  // ack_plain($1, $2) and then reserve_plain($3...) in one statement.
  static constexpr const char* kAckAndReservePlain =
      "SELECT " DQ_PG_JOB_COLUMNS
      " FROM {s}.ack_and_reserve_plain($1, $2, "
      "$3, $4, $5, $6, $7, $8, $9, $10, $11)";

  // Ack() of a job without keep_for, and of one with it: kept done (state
  // 4) with its result, its order of keeping from job_order.
  // The first also lets the topic's done jobs whose time is up at $3 go,
  // and reads the topic's concurrency cap (NULL: no limit), all in one
  // round trip.
  static constexpr const char* kAck =
      "WITH acked AS (DELETE FROM {s}.jobs j WHERE j.id = $1 AND j.state = 2 "
      "AND j.token = $2 AND j.keep_for_us = 0 "
      "RETURNING j.unique_for_us, j.topic), "
      "gone AS (DELETE FROM {s}.jobs d USING acked WHERE d.topic = acked.topic "
      "AND d.state = 4 AND (d.finished_at_us + d.keep_for_us) <= $3) "
      "SELECT a.unique_for_us, a.topic, (SELECT l.concurrency FROM "
      "{s}.limits l WHERE l.topic = a.topic) FROM acked a";
  static constexpr const char* kKeep =
      "UPDATE {s}.jobs SET state = 4, due_us = NULL, token = NULL, "
      "result = $3, finished_at_us = $4, "
      "dead_order = nextval('{s}.job_order') "
      "WHERE id = $1 AND state = 2 AND token = $2 AND keep_for_us > 0 "
      "RETURNING unique_for_us, topic, keep_at_most";
  // Done jobs whose time is up at $2, of one topic (jobs_done) and of every
  // topic (jobs_leaving).
  static constexpr const char* kDropLeftOfTopic =
      "DELETE FROM {s}.jobs WHERE topic = $1 AND state = 4 AND " DQ_PG_LEAVE_AT
      " <= $2";
  static constexpr const char* kDropLeft =
      "DELETE FROM {s}.jobs WHERE state = 4 AND " DQ_PG_LEAVE_AT " <= $1";
  // The done jobs of a topic beyond the $2 that leave last.
  static constexpr const char* kDropBeyond =
      "DELETE FROM {s}.jobs WHERE seq IN (SELECT seq FROM {s}.jobs "
      "WHERE topic = $1 AND state = 4 ORDER BY " DQ_PG_LEAVE_AT
      " DESC, dead_order DESC OFFSET $2)";

  // The reservation $2 of job $1, locked.
  static constexpr const char* kLease =
      "SELECT seq, attempts, max_attempts, topic FROM {s}.jobs "
      "WHERE id = $1 AND state = 2 AND token = $2 FOR UPDATE";
  static constexpr const char* kRetry =
      "UPDATE {s}.jobs SET state = $2, run_at_us = $3, "
      "due_us = " DQ_PG_WAITING_DUE("$2", "$3") ", token = NULL, "
      "last_error = $4 WHERE seq = $1";
  static constexpr const char* kRelease =
      "UPDATE {s}.jobs SET state = $3, attempts = attempts - 1, "
      "run_at_us = $4, due_us = " DQ_PG_WAITING_DUE("$3", "$4") ", "
      "token = NULL WHERE id = $1 AND state = 2 AND token = $2 RETURNING topic";
  static constexpr const char* kTouch =
      "UPDATE {s}.jobs SET due_us = $3 + ttr_us "
      "WHERE id = $1 AND state = 2 AND token = $2 RETURNING due_us";
  static constexpr const char* kCancel =
      "DELETE FROM {s}.jobs WHERE id = $1 "
      "RETURNING unique_for_us, topic, state";

  static constexpr const char* kGet =
      "SELECT " DQ_PG_JOB_COLUMNS " FROM {s}.jobs WHERE id = $1";
  // A page of a list goes on after a position in its order (keyset
  // paging, see ListPage()): the first page starts after the smallest one.
  // Each reads the position of its rows after DQ_PG_JOB_COLUMNS.
  static constexpr const char* kListReady =
      "SELECT " DQ_PG_JOB_COLUMNS
      ", priority, run_at_us, seq FROM {s}.jobs WHERE topic = $1 "
      "AND state = 1 AND (priority, run_at_us, seq) > "
      "($3::bigint, $4::bigint, $5::bigint) "
      "ORDER BY priority, run_at_us, seq LIMIT $2";
  // Delayed (by run_at) or reserved (by deadline) jobs (jobs_topic_due).
  static constexpr const char* kListTimed =
      "SELECT " DQ_PG_JOB_COLUMNS
      ", due_us, seq FROM {s}.jobs WHERE topic = $1 AND due_us IS NOT NULL "
      "AND state = $3 AND (due_us, seq) > ($4::bigint, $5::bigint) "
      "ORDER BY due_us, seq LIMIT $2";
  static constexpr const char* kListDone =
      "SELECT " DQ_PG_JOB_COLUMNS ", " DQ_PG_LEAVE_AT
      ", dead_order FROM {s}.jobs WHERE topic = $1 AND state = 4 "
      "AND (" DQ_PG_LEAVE_AT
      ", dead_order) > ($3::bigint, $4::bigint) "
      "ORDER BY " DQ_PG_LEAVE_AT ", dead_order LIMIT $2";
  static constexpr const char* kListDead =
      "SELECT " DQ_PG_JOB_COLUMNS
      ", dead_order FROM {s}.jobs WHERE topic = $1 AND state = 3 "
      "AND dead_order > $3::bigint ORDER BY dead_order LIMIT $2";

  // The count of each state of topic $1 that has jobs, each through its
  // state's index.
#define DQ_PG_STATE_COUNT(in_state)                                     \
  "SELECT state, count(*) FROM {s}.jobs WHERE topic = $1 AND " in_state \
  " GROUP BY state"
#define DQ_PG_AND_STATE_COUNT(in_state) \
  " UNION ALL " DQ_PG_STATE_COUNT(in_state)
  static constexpr const char* kStats = DQ_PG_STATE_COUNT(DQ_PG_DELAYED)
      DQ_PG_AND_STATE_COUNT(DQ_PG_READY) DQ_PG_AND_STATE_COUNT(DQ_PG_RESERVED)
          DQ_PG_AND_STATE_COUNT(DQ_PG_DEAD) DQ_PG_AND_STATE_COUNT(DQ_PG_DONE)
              DQ_PG_AND_STATE_COUNT(DQ_PG_WAITING);
  // Up to $2 ready or reserved jobs of a topic: enough to compare with a
  // bound without counting them all.
#define DQ_PG_COUNT_UP_TO(in_state)                                \
  "SELECT count(*) FROM (SELECT 1 FROM {s}.jobs WHERE topic = $1 " \
  "AND " in_state " LIMIT $2) AS bounded"
  static constexpr const char* kCountReadyUpTo = DQ_PG_COUNT_UP_TO(DQ_PG_READY);
  static constexpr const char* kCountReservedUpTo =
      DQ_PG_COUNT_UP_TO(DQ_PG_RESERVED);
  // Every topic that has a job: the smallest topic of each partial index,
  // then the next after it, and so on (one short index look per topic and
  // index, not a walk of every job). Every job is in one of these indexes.
#define DQ_PG_TOPICS_OF(name, where)                                     \
  name " AS (SELECT min(topic) AS topic FROM {s}.jobs WHERE " where      \
       " UNION ALL SELECT (SELECT min(topic) FROM {s}.jobs WHERE " where \
       " AND topic > " name ".topic) FROM " name " WHERE " name          \
       ".topic IS NOT NULL)"
  static constexpr const char* kTopics =
      "WITH RECURSIVE " DQ_PG_TOPICS_OF("timed", "due_us IS NOT NULL")
      ", " DQ_PG_TOPICS_OF("ready", DQ_PG_READY)
      ", " DQ_PG_TOPICS_OF("dead", DQ_PG_DEAD)
      ", " DQ_PG_TOPICS_OF("done", DQ_PG_DONE)
      ", " DQ_PG_TOPICS_OF("waiting", DQ_PG_WAITING)
      " SELECT topic FROM (SELECT topic FROM timed UNION SELECT topic FROM "
      "ready UNION SELECT topic FROM dead UNION SELECT topic FROM done "
      "UNION SELECT topic FROM waiting) AS t WHERE topic IS NOT NULL "
      "ORDER BY topic";

  static constexpr const char* kHorizonGet =
      "SELECT at_us FROM {s}.news_horizon WHERE id = 1";

  // Paused topics (SetPaused()).
  static constexpr const char* kPause =
      "INSERT INTO {s}.paused (topic) VALUES ($1) ON CONFLICT DO NOTHING";
  static constexpr const char* kResume =
      "DELETE FROM {s}.paused WHERE topic = $1";
  static constexpr const char* kPausedTopics =
      "SELECT topic FROM {s}.paused ORDER BY topic";

  // Topic limits (SetLimit()); setting one keeps its bucket. Reserve()
  // locks its topic's limit with kMoveDueOfTopic.
  static constexpr const char* kLimitGet =
      "SELECT concurrency FROM {s}.limits WHERE topic = $1";
  static constexpr const char* kLimitSet =
      "INSERT INTO {s}.limits (topic, rate, period_us, burst, concurrency) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (topic) DO UPDATE SET "
      "rate = excluded.rate, period_us = excluded.period_us, "
      "burst = excluded.burst, concurrency = excluded.concurrency";
  static constexpr const char* kLimitTat =
      "UPDATE {s}.limits SET tat_us = $2 WHERE topic = $1";
  static constexpr const char* kLimitClear =
      "DELETE FROM {s}.limits WHERE topic = $1";
  static constexpr const char* kLimits =
      "SELECT topic, rate, period_us, burst, concurrency FROM {s}.limits "
      "ORDER BY topic";

  // Schedules (PutSchedule() and friends), by their primary key.
  static constexpr const char* kScheduleLock =
      "SELECT spec, time_zone, done_through_us, revision FROM {s}.schedules "
      "WHERE name = $1 FOR UPDATE";
  static constexpr const char* kSchedulePut =
      "INSERT INTO {s}.schedules (" DQ_PG_SCHEDULE_COLUMNS
      ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
      "$15, $16) ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, "
      "time_zone = excluded.time_zone, topic = excluded.topic, "
      "payload = excluded.payload, priority = excluded.priority, "
      "max_attempts = excluded.max_attempts, ttr_us = excluded.ttr_us, "
      "backoff_kind = excluded.backoff_kind, "
      "backoff_base_us = excluded.backoff_base_us, "
      "backoff_max_us = excluded.backoff_max_us, "
      "missed_kind = excluded.missed_kind, missed_max = excluded.missed_max, "
      "jitter_us = excluded.jitter_us, "
      "done_through_us = excluded.done_through_us, "
      "revision = excluded.revision";
  static constexpr const char* kScheduleRemove =
      "DELETE FROM {s}.schedules WHERE name = $1";
  static constexpr const char* kScheduleList =
      "SELECT " DQ_PG_SCHEDULE_COLUMNS " FROM {s}.schedules ORDER BY name";
  static constexpr const char* kScheduleFire =
      "UPDATE {s}.schedules SET done_through_us = $2, "
      "revision = revision + 1 WHERE name = $1";

  // Counts (schema.cc): a write transaction appends a row per topic to
  // transitions_recent (CountsStatements()); a fold moves the recent rows of
  // the minutes before $1 into their minutes' rows of transitions and the
  // topics' totals (minute -1), in one statement that deletes what it moves.
  // The upserts go in key order, so that two folds never wait for each other's
  // rows crosswise.
  static constexpr const char* kCountsFold =
      "WITH moved AS (DELETE FROM {s}.transitions_recent WHERE minute_us < $1 "
      "RETURNING *), "
      "keyed AS (SELECT minute_us, topic, " DQ_PG_COUNT_COLUMNS
      " FROM moved UNION ALL SELECT -1, topic, " DQ_PG_COUNT_COLUMNS
      " FROM moved) "
      "INSERT INTO {s}.transitions AS t (minute_us, topic, " DQ_PG_COUNT_COLUMNS
      ") SELECT minute_us, topic, " DQ_PG_COUNT_SUMS
      " FROM keyed GROUP BY minute_us, topic ORDER BY minute_us, topic "
      "ON CONFLICT (minute_us, topic) DO UPDATE SET " DQ_PG_COUNT_ADDS;
  // A minute's counts are its row in transitions plus its recent rows; the
  // totals the -1 rows plus every recent row.
  static constexpr const char* kCountsRead =
      "SELECT minute_us, topic, " DQ_PG_COUNT_SUMS
      " FROM (SELECT minute_us, topic, " DQ_PG_COUNT_COLUMNS
      " FROM {s}.transitions WHERE minute_us >= $1 AND minute_us <= $2 "
      "UNION ALL SELECT minute_us, topic, " DQ_PG_COUNT_COLUMNS
      " FROM {s}.transitions_recent WHERE minute_us >= $1 AND minute_us <= $2) "
      "AS c GROUP BY minute_us, topic ORDER BY minute_us, topic";
  static constexpr const char* kTotalsRead =
      "SELECT -1, topic, " DQ_PG_COUNT_SUMS
      " FROM (SELECT topic, " DQ_PG_COUNT_COLUMNS
      " FROM {s}.transitions WHERE minute_us = -1 "
      "UNION ALL SELECT topic, " DQ_PG_COUNT_COLUMNS
      " FROM {s}.transitions_recent) AS c GROUP BY topic ORDER BY topic";
  static constexpr const char* kCountsPrune =
      "DELETE FROM {s}.transitions WHERE minute_us >= 0 AND minute_us < $1";

  static constexpr const char* kDeadOfTopic =
      "SELECT seq, id, unique_for_us FROM {s}.jobs WHERE topic = $1 "
      "AND state = 3 ORDER BY dead_order LIMIT $2 FOR UPDATE SKIP LOCKED";
  static constexpr const char* kKick =
      "UPDATE {s}.jobs SET state = 1, attempts = 0, run_at_us = $2, "
      "due_us = NULL, dead_order = NULL, expire_at_us = NULL, "
      "finished_at_us = NULL WHERE seq = ANY($1::bigint[])";
  // PromoteJob(): a delayed job ready now; a ready job is due when it
  // expires.
  static constexpr const char* kPromoteJob =
      "UPDATE {s}.jobs SET state = 1, run_at_us = $2, due_us = expire_at_us "
      "WHERE seq = $1";
  // The job with id $1, locked: what the single-job calls check first.
  // Dependencies (schema.cc, version 2). A dependency is locked while a job
  // is made to wait for it, so that its ack, death or departure, which
  // settles its dependants, comes after and sees the new row.
  static constexpr const char* kDependencyOf =
      "SELECT state FROM {s}.jobs WHERE id = $1 FOR SHARE";
  static constexpr const char* kDependOn =
      "INSERT INTO {s}.dependencies (dependency, dependant) VALUES ($1, $2) "
      "ON CONFLICT DO NOTHING";
  static constexpr const char* kWait =
      "UPDATE {s}.jobs SET state = 5, due_us = NULL, dep_policy = $2 "
      "WHERE id = $1";
  // The jobs that waited for $1, which no longer do; and, in a row whose
  // first column is NULL, the batch $1 was an unfinished job of, which it
  // no longer is (one round trip for both: every settled job asks).
  static constexpr const char* kDependants =
      "WITH d AS (DELETE FROM {s}.dependencies WHERE dependency = $1 "
      "RETURNING dependant), b AS (DELETE FROM {s}.batch_jobs WHERE job = $1 "
      "RETURNING batch) SELECT dependant, NULL::text FROM d "
      "UNION ALL SELECT NULL::text, batch FROM b";
  // A waiting job, locked: of two transactions that settle its last two
  // dependencies at once, the second waits for the first and then sees its
  // row gone (kStillWaits is a statement of its own, so it reads after the
  // lock), so exactly one releases it.
  static constexpr const char* kLockWaiter =
      "SELECT seq, topic, run_at_us, dep_policy FROM {s}.jobs "
      "WHERE id = $1 AND state = 5 FOR UPDATE";
  static constexpr const char* kStillWaits =
      "SELECT EXISTS (SELECT 1 FROM {s}.dependencies WHERE dependant = $1)";
  static constexpr const char* kForgetWaiter =
      "DELETE FROM {s}.dependencies WHERE dependant = $1";
  // A waiting job released: delayed or ready ($2), due as
  // DQ_PG_WAITING_DUE.
  static constexpr const char* kReleaseWaiter =
      "UPDATE {s}.jobs SET state = $2, due_us = " DQ_PG_WAITING_DUE(
          "$2", "run_at_us") " WHERE seq = $1 RETURNING due_us";
  // Batches (schema.cc, version 5). A batch's row is the lock that orders
  // the steps on it: a job joining, a job of it finishing, the close. Each
  // updates the row, so of two at once the second waits for the first and
  // then sees its counts; exactly one sees the batch complete.
  static constexpr const char* kBatchOpen =
      "INSERT INTO {s}.batches (id) VALUES ($1)";
  static constexpr const char* kBatchGet =
      "SELECT closed, total, done, dead, cancelled FROM {s}.batches "
      "WHERE id = $1";
  // Job $2, just stored, joins open batch $1: pending (a row of
  // batch_jobs), or counted dead or cancelled when a dependency's failure
  // sent it dead or away as it was added. No row: unknown or closed, and
  // nothing written (the row of batch_jobs names its batch, version 8).
  static constexpr const char* kBatchJoin =
      "WITH j AS (SELECT state FROM {s}.jobs WHERE id = $2), "
      "b AS (UPDATE {s}.batches SET total = total + 1, "
      "dead = dead + (SELECT count(*) FROM j WHERE j.state = 3), "
      "cancelled = cancelled + 1 - (SELECT count(*) FROM j) "
      "WHERE id = $1 AND NOT closed RETURNING id), "
      "m AS (INSERT INTO {s}.batch_jobs (job, batch) SELECT $2, b.id "
      "FROM j, b WHERE j.state <> 3) "
      "SELECT 1 FROM b";
  // Counts a finished job (done $2, dead $3, cancelled $4); whether the
  // batch is complete now.
  static constexpr const char* kBatchCount =
      "UPDATE {s}.batches SET done = done + $2, dead = dead + $3, "
      "cancelled = cancelled + $4 WHERE id = $1 "
      "RETURNING closed AND total = done + dead + cancelled";
  // Closes an open batch; whether it is complete now. No row: unknown or
  // closed before.
  static constexpr const char* kBatchClose =
      "UPDATE {s}.batches SET closed = true WHERE id = $1 AND NOT closed "
      "RETURNING total = done + dead + cancelled";
  // What a job waits for (schema.cc, version 6): the ids of $2, the job
  // $1's JobOptions::after, at their positions; and for the jobs of $1, in
  // each one's order, every id with whether it is kept done now and its
  // result.
  static constexpr const char* kAfterAdd =
      "INSERT INTO {s}.job_after (job, pos, dependency) "
      "SELECT $1, n - 1, d FROM unnest($2::text[]) WITH ORDINALITY AS a(d, n)";
  static constexpr const char* kAfterOf =
      "SELECT a.job, a.dependency, d.state = 4, d.result "
      "FROM {s}.job_after a LEFT JOIN {s}.jobs d ON d.id = a.dependency "
      "WHERE a.job = ANY($1::text[]) ORDER BY a.job, a.pos";
  static constexpr const char* kListWaiting =
      "SELECT " DQ_PG_JOB_COLUMNS
      ", seq FROM {s}.jobs WHERE topic = $1 AND state = 5 "
      "AND seq > $3::bigint ORDER BY seq LIMIT $2";
  static constexpr const char* kStateOf =
      "SELECT seq, state, topic FROM {s}.jobs WHERE id = $1 FOR UPDATE";
  // Replace(): a new payload and run_at for a delayed or ready job, and the
  // state and due time that follow from them.
  static constexpr const char* kReplace =
      "UPDATE {s}.jobs SET payload = $2, run_at_us = $3, state = $4, "
      "due_us = " DQ_PG_WAITING_DUE("$4", "$3") " WHERE seq = $1";
};

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_STATEMENTS_H_
