// Copyright delayq authors.
//
// statements.h — the SQL of every Backend operation, prepared once per
// connection. Every query names an index-backed access path (see schema.cc);
// the query-plan test checks that none of them scans the jobs table.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_STATEMENTS_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_STATEMENTS_H_

namespace delayq {
namespace sqlite_internal {

// The columns ReadJob() decodes, in its order.
#define DQ_JOB_COLUMNS                                                      \
  "seq, id, topic, payload, state, priority, attempts, max_attempts, "      \
  "ttr_us, backoff_kind, backoff_base_us, backoff_max_us, enqueued_at_us, " \
  "run_at_us, due_us, token, last_error, expire_at_us, discard_expired, "   \
  "unique_for_us, result, finished_at_us, keep_for_us, keep_at_most, "      \
  "holder, reserved_at_us, after_count"
// How many columns DQ_JOB_COLUMNS names.
inline constexpr int kJobColumnCount = 27;
// Where after_count is among them: how many ids job_after holds of the job.
inline constexpr int kAfterCountColumn = 26;

// due_us of a job that waits in state `state` (0 delayed, 1 ready) for
// `run_at`: a ready job is due when it expires, a delayed one at the
// earlier of its run_at and its expiry (see schema.cc, version 6).
#define DQ_WAITING_DUE(state, run_at)                          \
  "CASE WHEN " state " = 1 THEN expire_at_us ELSE min(" run_at \
  ", coalesce(expire_at_us, " run_at ")) END"

// When a done job leaves the store (schema.cc, version 11): the expression
// jobs_done and jobs_leaving index, spelled as they spell it.
#define DQ_LEAVE_AT "finished_at_us + keep_for_us"

// What MoveDue() reads of a due job, in its order.
#define DQ_DUE_COLUMNS                                            \
  "seq, id, topic, state, attempts, max_attempts, expire_at_us, " \
  "discard_expired, unique_for_us"

// The due jobs of a topic in one state (jobs_topic_due).
#define DQ_TOPIC_DUE_OF(state)                                              \
  "SELECT " DQ_DUE_COLUMNS " FROM jobs WHERE topic = ?1 AND state = " state \
  " AND due_us IS NOT NULL AND due_us <= ?2"

// The columns ReadSchedule() decodes, in its order.
#define DQ_SCHEDULE_COLUMNS                                                 \
  "name, spec, time_zone, topic, payload, priority, max_attempts, ttr_us, " \
  "backoff_kind, backoff_base_us, backoff_max_us, missed_kind, "            \
  "missed_max, jitter_us, done_through_us, revision"

// The count columns of transitions and topic_counts (schema.cc, versions
// 9, 10 and 16), in JobCounts order.
#define DQ_COUNT_COLUMNS                                                   \
  "enqueued, done, failed, retried, expired, dead, lapsed, late0, late1, " \
  "late2, late3, late4, late5"

// The same columns summed, and an upsert's additions of `excluded` to them.
#define DQ_COUNT_SUMS                                                        \
  "sum(enqueued), sum(done), sum(failed), sum(retried), sum(expired), "      \
  "sum(dead), sum(lapsed), sum(late0), sum(late1), sum(late2), sum(late3), " \
  "sum(late4), sum(late5)"
#define DQ_COUNT_ADDS                                                      \
  "enqueued = enqueued + excluded.enqueued, done = done + excluded.done, " \
  "failed = failed + excluded.failed, "                                    \
  "retried = retried + excluded.retried, "                                 \
  "expired = expired + excluded.expired, dead = dead + excluded.dead, "    \
  "lapsed = lapsed + excluded.lapsed, late0 = late0 + excluded.late0, "    \
  "late1 = late1 + excluded.late1, late2 = late2 + excluded.late2, "       \
  "late3 = late3 + excluded.late3, late4 = late4 + excluded.late4, "       \
  "late5 = late5 + excluded.late5"

struct Sql {
  static constexpr const char* kBegin = "BEGIN IMMEDIATE";
  static constexpr const char* kCommit = "COMMIT";
  // One operation of a group (group_commit.h).
  static constexpr const char* kSavepoint = "SAVEPOINT op";
  static constexpr const char* kReleaseOp = "RELEASE op";
  static constexpr const char* kRollbackTo = "ROLLBACK TO op";

  static constexpr const char* kInsert =
      "INSERT INTO jobs (id, topic, payload, state, priority, attempts, "
      "max_attempts, ttr_us, backoff_kind, backoff_base_us, backoff_max_us, "
      "enqueued_at_us, run_at_us, due_us, expire_at_us, discard_expired, "
      "unique_for_us, keep_for_us, keep_at_most, after_count) "
      "VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
      "?15, ?16, ?17, ?18, ?19)";

  // Dedup windows: ids held until a time.
  static constexpr const char* kDropHolds =
      "DELETE FROM held_ids WHERE until_us <= ?1";
  static constexpr const char* kIsHeld = "SELECT 1 FROM held_ids WHERE id = ?1";
  static constexpr const char* kHold =
      "INSERT INTO held_ids (id, until_us) VALUES (?1, ?2) "
      "ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us";

  static constexpr const char* kCounterGet =
      "SELECT value FROM counter WHERE id = 1";
  static constexpr const char* kCounterSet =
      "UPDATE counter SET value = ?1 WHERE id = 1";
  static constexpr const char* kCounterBump =
      "UPDATE counter SET value = value + 1 WHERE id = 1";

  // Due delayed jobs, expired reservations and lapsing ready jobs of one
  // topic (jobs_topic_due), one search of the index per state, in the
  // order of the states. Every reservation runs it, and it mostly finds
  // nothing: spelled `state IN (0, 1, 2)`, SQLite builds the list as a
  // temporary b-tree at every run: 37,900 instructions a run, against
  // 9,300 this way (counted over W1 with 8 consumer threads).
  static constexpr const char* kTopicDue =
      DQ_TOPIC_DUE_OF("0") " UNION ALL " DQ_TOPIC_DUE_OF(
          "1") " UNION ALL " DQ_TOPIC_DUE_OF("2");
  // The same of every topic (jobs_due).
  static constexpr const char* kAllDue =
      "SELECT " DQ_DUE_COLUMNS
      " FROM jobs "
      "WHERE due_us IS NOT NULL AND due_us <= ?1 ORDER BY due_us, seq "
      "LIMIT ?2";
  static constexpr const char* kNextDue =
      "SELECT due_us FROM jobs WHERE due_us IS NOT NULL ORDER BY due_us "
      "LIMIT 1";

  static constexpr const char* kMakeReady =
      "UPDATE jobs SET state = 1, due_us = expire_at_us, token = NULL "
      "WHERE seq = ?1";
  // A lapsed job that asked to be discarded.
  static constexpr const char* kDiscard = "DELETE FROM jobs WHERE seq = ?1";
  static constexpr const char* kMakeDead =
      "UPDATE jobs SET state = 3, due_us = NULL, token = NULL, "
      "dead_order = ?2, last_error = ?3, finished_at_us = ?4 WHERE seq = ?1";

  // The next ready job of a topic (jobs_ready), leased in place; the lease
  // runs ttr from now, or from run_at when the caller's clock is behind it.
  static constexpr const char* kReserveOne =
      "UPDATE jobs SET state = 2, attempts = attempts + 1, "
      "due_us = max(?2, run_at_us) + ttr_us, token = ?3, holder = ?4, "
      "reserved_at_us = ?2 "
      "WHERE seq = (SELECT seq FROM jobs WHERE topic = ?1 AND state = 1 "
      "ORDER BY priority, run_at_us, seq LIMIT 1) "
      "RETURNING " DQ_JOB_COLUMNS;

  // Ack() of a job without keep_for, and of one with it: kept done (state
  // 4) with its result, its order of keeping the counter's next value.
  static constexpr const char* kAck =
      "DELETE FROM jobs WHERE id = ?1 AND state = 2 AND token = ?2 "
      "AND keep_for_us = 0 RETURNING unique_for_us, topic";
  static constexpr const char* kKeep =
      "UPDATE jobs SET state = 4, due_us = NULL, token = NULL, result = ?3, "
      "finished_at_us = ?4, "
      "dead_order = (SELECT value + 1 FROM counter WHERE id = 1) "
      "WHERE id = ?1 AND state = 2 AND token = ?2 AND keep_for_us > 0 "
      "RETURNING unique_for_us, topic, keep_at_most";
  // What an Ack() that deleted its job reads of the topic, in one
  // statement: its concurrency cap (NULL: no limit) and its number of done
  // jobs (NULL: none).
  static constexpr const char* kAckedTopic =
      "SELECT (SELECT concurrency FROM limits WHERE topic = ?1), "
      "(SELECT n FROM topic_counts WHERE topic = ?1 AND state = 4 "
      "AND minute_us = -1)";
  // Done jobs whose time is up at ?2, of one topic (jobs_done) and of every
  // topic (jobs_leaving).
  static constexpr const char* kDropLeftOfTopic =
      "DELETE FROM jobs WHERE topic = ?1 AND state = 4 AND " DQ_LEAVE_AT
      " <= ?2";
  static constexpr const char* kDropLeft =
      "DELETE FROM jobs WHERE state = 4 AND " DQ_LEAVE_AT " <= ?1";
  // Whether PromoteDue() at ?1 has anything to do: a due time passed, or a
  // done job's time is up (kAllDue's and kDropLeft's rows, read only).
  static constexpr const char* kAnythingDue =
      "SELECT EXISTS (SELECT 1 FROM jobs WHERE due_us IS NOT NULL AND "
      "due_us <= ?1) OR EXISTS (SELECT 1 FROM jobs WHERE state = 4 "
      "AND " DQ_LEAVE_AT " <= ?1)";
  // The ?2 done jobs of a topic that leave soonest.
  static constexpr const char* kDropSoonest =
      "DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE topic = ?1 "
      "AND state = 4 ORDER BY " DQ_LEAVE_AT ", dead_order LIMIT ?2)";
  static constexpr const char* kLease =
      "SELECT seq, attempts, max_attempts, topic FROM jobs "
      "WHERE id = ?1 AND state = 2 AND token = ?2";
  static constexpr const char* kRetry =
      "UPDATE jobs SET state = ?2, run_at_us = ?3, "
      "due_us = " DQ_WAITING_DUE("?2", "?3") ", token = NULL, "
      "last_error = ?4 WHERE seq = ?1";
  static constexpr const char* kRelease =
      "UPDATE jobs SET state = ?3, attempts = attempts - 1, run_at_us = ?4, "
      "due_us = " DQ_WAITING_DUE("?3", "?4") ", token = NULL "
      "WHERE id = ?1 AND state = 2 AND token = ?2 RETURNING topic";
  static constexpr const char* kTouch =
      "UPDATE jobs SET due_us = ?3 + ttr_us "
      "WHERE id = ?1 AND state = 2 AND token = ?2 RETURNING due_us";
  static constexpr const char* kCancel =
      "DELETE FROM jobs WHERE id = ?1 RETURNING unique_for_us, topic, state";

  static constexpr const char* kGet =
      "SELECT " DQ_JOB_COLUMNS " FROM jobs WHERE id = ?1";
  // A page of a list goes on after a position in its order (keyset
  // paging, see ListPage()): the first page starts after the smallest one.
  // Each reads the position of its rows after DQ_JOB_COLUMNS.
  static constexpr const char* kListReady =
      "SELECT " DQ_JOB_COLUMNS
      ", priority, run_at_us, seq FROM jobs WHERE topic = ?1 AND state = 1 "
      "AND (priority, run_at_us, seq) > (?3, ?4, ?5) "
      "ORDER BY priority, run_at_us, seq LIMIT ?2";
  // Delayed (by run_at) or reserved (by deadline) jobs (jobs_topic_due).
  static constexpr const char* kListTimed =
      "SELECT " DQ_JOB_COLUMNS
      ", due_us, seq FROM jobs WHERE topic = ?1 AND state = ?3 "
      "AND due_us IS NOT NULL AND (due_us, seq) > (?4, ?5) "
      "ORDER BY due_us, seq LIMIT ?2";
  static constexpr const char* kListDone =
      "SELECT " DQ_JOB_COLUMNS ", " DQ_LEAVE_AT
      ", dead_order FROM jobs WHERE topic = ?1 AND state = 4 "
      "AND (" DQ_LEAVE_AT
      ", dead_order) > (?3, ?4) "
      "ORDER BY " DQ_LEAVE_AT ", dead_order LIMIT ?2";
  static constexpr const char* kListDead =
      "SELECT " DQ_JOB_COLUMNS
      ", dead_order FROM jobs WHERE topic = ?1 AND state = 3 "
      "AND dead_order > ?3 ORDER BY dead_order LIMIT ?2";

  static constexpr const char* kStats =
      "SELECT state, n FROM topic_counts WHERE topic = ?1 AND state >= 0";
  // A topic's ready jobs, for news of a ready set that was empty.
  static constexpr const char* kReadyCount =
      "SELECT n FROM topic_counts WHERE topic = ?1 AND state = 1 "
      "AND minute_us = -1";
  static constexpr const char* kHorizonGet =
      "SELECT at_us FROM news_horizon WHERE id = 1";
  // Paused topics (SetPaused()).
  static constexpr const char* kIsPaused =
      "SELECT 1 FROM paused WHERE topic = ?1";
  static constexpr const char* kPause =
      "INSERT OR IGNORE INTO paused (topic) VALUES (?1)";
  static constexpr const char* kResume = "DELETE FROM paused WHERE topic = ?1";
  static constexpr const char* kPausedTopics =
      "SELECT topic FROM paused ORDER BY topic";
  // Topic limits (SetLimit()); setting one keeps its bucket.
  static constexpr const char* kLimitGet =
      "SELECT rate, period_us, burst, concurrency, tat_us FROM limits "
      "WHERE topic = ?1";
  static constexpr const char* kLimitSet =
      "INSERT INTO limits (topic, rate, period_us, burst, concurrency) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (topic) DO UPDATE SET "
      "rate = excluded.rate, period_us = excluded.period_us, "
      "burst = excluded.burst, concurrency = excluded.concurrency";
  static constexpr const char* kLimitTat =
      "UPDATE limits SET tat_us = ?2 WHERE topic = ?1";
  static constexpr const char* kLimitClear =
      "DELETE FROM limits WHERE topic = ?1";
  static constexpr const char* kLimits =
      "SELECT topic, rate, period_us, burst, concurrency FROM limits "
      "ORDER BY topic";
  // A topic's jobs in one state (topic_counts).
  static constexpr const char* kStateCount =
      "SELECT n FROM topic_counts WHERE topic = ?1 AND state = ?2 "
      "AND minute_us = -1";
  // Schedules (PutSchedule() and friends), by their primary key.
  static constexpr const char* kScheduleGet =
      "SELECT spec, time_zone, done_through_us, revision FROM schedules "
      "WHERE name = ?1";
  static constexpr const char* kSchedulePut =
      "INSERT OR REPLACE INTO schedules (" DQ_SCHEDULE_COLUMNS
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
      "?15, ?16)";
  static constexpr const char* kScheduleRemove =
      "DELETE FROM schedules WHERE name = ?1";
  static constexpr const char* kScheduleList =
      "SELECT " DQ_SCHEDULE_COLUMNS " FROM schedules ORDER BY name";
  static constexpr const char* kScheduleFire =
      "UPDATE schedules SET done_through_us = ?2, revision = revision + 1 "
      "WHERE name = ?1";
  static constexpr const char* kHorizonSet =
      "UPDATE news_horizon SET at_us = ?1 WHERE id = 1";
  // Counts (schema.cc, versions 9, 10 and 16): a write transaction adds
  // each topic's counts to its minute's row of topic_counts (state -1), one
  // row per topic beside the topic's job-state rows (counts.cc writes it,
  // naming only the counts that moved); a fold moves the minutes before
  // the current one into transitions (their minute's row and the topic's
  // totals, minute -1).
  static constexpr const char* kCountsFoldMinutes =
      "INSERT INTO transitions (minute_us, topic, " DQ_COUNT_COLUMNS
      ") SELECT minute_us, topic, " DQ_COUNT_COLUMNS
      " FROM topic_counts WHERE state = -1 AND minute_us < ?1 "
      "ON CONFLICT (minute_us, topic) DO UPDATE SET " DQ_COUNT_ADDS;
  static constexpr const char* kCountsFoldTotals =
      "INSERT INTO transitions (minute_us, topic, " DQ_COUNT_COLUMNS
      ") SELECT -1, topic, " DQ_COUNT_SUMS
      " FROM topic_counts WHERE state = -1 AND minute_us < ?1 GROUP BY topic "
      "ON CONFLICT (minute_us, topic) DO UPDATE SET " DQ_COUNT_ADDS;
  static constexpr const char* kCountsFoldDrop =
      "DELETE FROM topic_counts WHERE state = -1 AND minute_us < ?1";
  // A minute's counts are its row in transitions plus its recent row in
  // topic_counts (a write whose clock was behind another's fold adds a new
  // recent row to a folded minute); the totals are the -1 rows plus every
  // recent row.
  static constexpr const char* kCountsRead =
      "SELECT minute_us, topic, " DQ_COUNT_SUMS
      " FROM (SELECT minute_us, topic, " DQ_COUNT_COLUMNS
      " FROM transitions WHERE minute_us >= ?1 AND minute_us <= ?2 "
      "UNION ALL SELECT minute_us, topic, " DQ_COUNT_COLUMNS
      " FROM topic_counts WHERE state = -1 AND minute_us >= ?1 "
      "AND minute_us <= ?2) "
      "GROUP BY minute_us, topic ORDER BY minute_us, topic";
  static constexpr const char* kTotalsRead =
      "SELECT -1, topic, " DQ_COUNT_SUMS
      " FROM (SELECT topic, " DQ_COUNT_COLUMNS
      " FROM transitions WHERE minute_us = -1 "
      "UNION ALL SELECT topic, " DQ_COUNT_COLUMNS
      " FROM topic_counts WHERE state = -1) GROUP BY topic ORDER BY topic";
  static constexpr const char* kCountsPrune =
      "DELETE FROM transitions WHERE minute_us >= 0 AND minute_us < ?1";

  // The event log (schema version 12).
  static constexpr const char* kEventInsert =
      "INSERT INTO events (job_id, topic, type, at_us, attempts, error, who) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
  static constexpr const char* kEventTrim =
      "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM events) - ?1";
  static constexpr const char* kEventsOfJob =
      "SELECT type, topic, at_us, attempts, error, who FROM (SELECT * FROM "
      "events WHERE job_id = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq";

  static constexpr const char* kTopics =
      "SELECT topic FROM topic_counts GROUP BY topic HAVING sum(n) > 0 "
      "ORDER BY topic";

  static constexpr const char* kDeadOfTopic =
      "SELECT seq, id FROM jobs WHERE topic = ?1 AND state = 3 "
      "ORDER BY dead_order LIMIT ?2";
  static constexpr const char* kTopicOf =
      "SELECT topic FROM jobs WHERE seq = ?1";
  static constexpr const char* kKick =
      "UPDATE jobs SET state = 1, attempts = 0, run_at_us = ?2, due_us = NULL, "
      "dead_order = NULL, expire_at_us = NULL, finished_at_us = NULL "
      "WHERE seq = ?1";
  // PromoteJob(): a delayed job ready now; a ready job is due when it
  // expires (DQ_WAITING_DUE).
  static constexpr const char* kPromoteJob =
      "UPDATE jobs SET state = 1, run_at_us = ?2, due_us = expire_at_us "
      "WHERE seq = ?1";
  // PurgeDead(): the ids of a topic's oldest dead jobs.
  static constexpr const char* kDeadIds =
      "SELECT id FROM jobs WHERE topic = ?1 AND state = 3 "
      "ORDER BY dead_order LIMIT ?2";
  static constexpr const char* kStateOf =
      "SELECT seq, state FROM jobs WHERE id = ?1";
  // Replace(): a new payload and run_at for a delayed or ready job, and the
  // state and due time that follow from them.
  // Dependencies (schema.cc, version 13).
  static constexpr const char* kDependOn =
      "INSERT INTO dependencies (dependency, dependant) VALUES (?1, ?2) "
      "ON CONFLICT DO NOTHING";
  static constexpr const char* kWait =
      "UPDATE jobs SET state = 5, due_us = NULL, dep_policy = ?2 "
      "WHERE id = ?1";
  // Whether any job waits for another (SettleDependants() skips its
  // DELETE when none does).
  static constexpr const char* kAnyDependency =
      "SELECT EXISTS (SELECT 1 FROM dependencies) OR "
      "EXISTS (SELECT 1 FROM batch_jobs)";
  // The jobs that waited for ?1, which no longer do.
  static constexpr const char* kDependants =
      "DELETE FROM dependencies WHERE dependency = ?1 RETURNING dependant";
  // A waiting job, and whether it still waits for anything.
  static constexpr const char* kWaiter =
      "SELECT seq, topic, run_at_us, dep_policy, EXISTS (SELECT 1 FROM "
      "dependencies WHERE dependant = ?1) FROM jobs WHERE id = ?1 AND "
      "state = 5";
  static constexpr const char* kForgetWaiter =
      "DELETE FROM dependencies WHERE dependant = ?1";
  // A waiting job released: delayed or ready (?2), due as DQ_WAITING_DUE.
  static constexpr const char* kReleaseWaiter =
      "UPDATE jobs SET state = ?2, due_us = " DQ_WAITING_DUE(
          "?2", "run_at_us") " WHERE seq = ?1 RETURNING due_us";
  // What a job waits for (schema.cc, version 17): one id of its
  // JobOptions::after at a position, and all of them in order, each with
  // whether it is kept done now and its result.
  static constexpr const char* kAfterAdd =
      "INSERT INTO job_after (job, pos, dependency) VALUES (?1, ?2, ?3)";
  static constexpr const char* kAfterOf =
      "SELECT a.dependency, d.state = 4, d.result FROM job_after a "
      "LEFT JOIN jobs d ON d.id = a.dependency WHERE a.job = ?1 "
      "ORDER BY a.pos";
  static constexpr const char* kListWaiting =
      "SELECT " DQ_JOB_COLUMNS
      ", seq FROM jobs WHERE topic = ?1 AND state = 5 AND seq > ?3 "
      "ORDER BY seq LIMIT ?2";
  static constexpr const char* kReplace =
      "UPDATE jobs SET payload = ?2, run_at_us = ?3, state = ?4, "
      "due_us = " DQ_WAITING_DUE("?4", "?3") " WHERE seq = ?1";
  // Batches (schema.cc, version 15).
  static constexpr const char* kBatchOpen =
      "INSERT INTO batches (id) VALUES (?1)";
  static constexpr const char* kBatchGet =
      "SELECT closed, total, done, dead, cancelled FROM batches "
      "WHERE id = ?1";
  // A job joins: counted in the total, and as dead (?2) or cancelled (?3)
  // when it finished as it was added.
  static constexpr const char* kBatchJoin =
      "UPDATE batches SET total = total + 1, dead = dead + ?2, "
      "cancelled = cancelled + ?3 WHERE id = ?1";
  static constexpr const char* kBatchMember =
      "INSERT INTO batch_jobs (job, batch) VALUES (?1, ?2)";
  // The batch of job ?1 if it is an unfinished job of one; it no longer is.
  static constexpr const char* kBatchLeave =
      "DELETE FROM batch_jobs WHERE job = ?1 RETURNING batch";
  // Counts a finished job (done ?2, dead ?3, cancelled ?4); whether the
  // batch is complete now.
  static constexpr const char* kBatchCount =
      "UPDATE batches SET done = done + ?2, dead = dead + ?3, "
      "cancelled = cancelled + ?4 WHERE id = ?1 "
      "RETURNING closed AND total = done + dead + cancelled";
  // Closes an open batch; whether it is complete now. No row: unknown or
  // closed before.
  static constexpr const char* kBatchClose =
      "UPDATE batches SET closed = 1 WHERE id = ?1 AND closed = 0 "
      "RETURNING total = done + dead + cancelled";
};

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_STATEMENTS_H_
