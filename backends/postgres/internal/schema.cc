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

// Version 2: jobs that wait for others (NewJob::after), as the SQLite
// store keeps them. A row of dependencies says that `dependant` (a job in
// state 5, waiting, with no due_us) still waits for `dependency`; the row
// goes in the transaction in which the dependency is acknowledged, dies or
// leaves, and a dependant with no row left is released in that same
// transaction. jobs.dep_policy is the dependant's DependencyFailure (0
// fail, 1 cancel, 2 run). dependencies_dependant serves Cancel() of a
// waiting job and the check that it waits for nothing more; jobs_waiting,
// List(kWaiting). Self-contained: it touches nothing else.
constexpr char kSchemaDependencies[] = R"sql(
ALTER TABLE {s}.jobs ADD COLUMN dep_policy integer NOT NULL DEFAULT 0;
CREATE TABLE {s}.dependencies (
  dependency text NOT NULL,
  dependant text NOT NULL,
  PRIMARY KEY (dependency, dependant)
);
CREATE INDEX dependencies_dependant ON {s}.dependencies (dependant);
CREATE INDEX jobs_waiting ON {s}.jobs (topic, seq) WHERE state = 5;
)sql";

// Schema version 3: {s}.enqueue(), for code that does not link delayq (a
// trigger, a script, another language): the insert, the count and the
// NOTIFY of EnqueueInTransaction(), in the caller's transaction. Defaults
// are JobOptions' defaults; times are the server's clock (clock_timestamp())
// unless `now_at` is given. An id left NULL or empty is generated as the
// library generates one, "<12 hex digits>-<serial>": the prefix drawn once
// for the schema by this migration (as a scheduler draws one per process),
// the serial from a sequence, so two such ids never collide, and one
// collides with a library process's only if their random 48-bit prefixes
// are equal. Bad input raises invalid_parameter_value (22023), an id that
// a live job or a dedup window holds unique_violation (23505). The due-time
// news is sent whenever the job waits (more news than needed, never less).
constexpr char kSchemaSqlEnqueue[] = R"sql(
CREATE TABLE {s}.sql_id_prefix (
  id integer PRIMARY KEY CHECK (id = 1),
  prefix text NOT NULL
);
INSERT INTO {s}.sql_id_prefix (id, prefix) VALUES
  (1, lpad(to_hex(floor(random() * 281474976710656)::bigint), 12, '0'));
CREATE SEQUENCE {s}.sql_id_serial;

CREATE FUNCTION {s}.enqueue(
  topic text,
  payload bytea,
  id text DEFAULT NULL,
  delay interval DEFAULT '0 seconds',
  run_at timestamptz DEFAULT NULL,
  ttr interval DEFAULT '60 seconds',
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 3,
  backoff text DEFAULT 'exponential',
  backoff_base interval DEFAULT '1 second',
  backoff_max interval DEFAULT '10 minutes',
  backoff_jitter double precision DEFAULT 0,
  expire_after interval DEFAULT NULL,
  expire_at timestamptz DEFAULT NULL,
  discard_expired boolean DEFAULT false,
  unique_for interval DEFAULT '0 seconds',
  keep_for interval DEFAULT '0 seconds',
  keep_at_most integer DEFAULT 0,
  now_at timestamptz DEFAULT clock_timestamp()
) RETURNS text LANGUAGE plpgsql AS $fn$
#variable_conflict use_variable
DECLARE
  longest CONSTANT bigint := 315360000000000;  -- ten years of 365 days, µs
  latest CONSTANT bigint := 4102444800000000;  -- 2100-01-01, µs
  channel CONSTANT text := trim(both '"' from '{s}');
  now_us bigint := floor(extract(epoch FROM now_at) * 1000000);
  ttr_us bigint := floor(extract(epoch FROM ttr) * 1000000);
  base_us bigint := floor(extract(epoch FROM backoff_base) * 1000000);
  max_us bigint := floor(extract(epoch FROM backoff_max) * 1000000);
  unique_us bigint := floor(extract(epoch FROM unique_for) * 1000000);
  keep_us bigint := floor(extract(epoch FROM keep_for) * 1000000);
  run_us bigint;
  expire_us bigint;
  due bigint;
  job_id text := id;
  kept integer := 0;
  delayed boolean;
BEGIN
  IF topic IS NULL OR topic !~ '^[A-Za-z0-9._:-]{1,200}$' THEN
    RAISE EXCEPTION 'delayq: bad topic %: 1 to 200 of [A-Za-z0-9._:-]',
      quote_literal(topic) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF payload IS NULL OR octet_length(payload) > 1048576 THEN
    RAISE EXCEPTION 'delayq: payload missing or over 1048576 bytes'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF job_id IS NULL OR job_id = '' THEN
    SELECT p.prefix || '-' || nextval('{s}.sql_id_serial') INTO job_id
      FROM {s}.sql_id_prefix p;
  ELSIF octet_length(job_id) > 200 OR job_id ~ '[[:cntrl:]]' THEN
    RAISE EXCEPTION 'delayq: bad id: at most 200 bytes, no control bytes'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF delay IS NULL OR delay < interval '0' THEN
    RAISE EXCEPTION 'delayq: negative delay'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  run_us := CASE WHEN run_at IS NOT NULL
    THEN floor(extract(epoch FROM run_at) * 1000000)
    ELSE now_us + floor(extract(epoch FROM delay) * 1000000) END;
  IF run_us < 0 OR run_us > latest THEN
    RAISE EXCEPTION 'delayq: run_at outside 1970 to 2100'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF ttr_us IS NULL OR ttr_us < 1 OR ttr_us > longest OR
     max_attempts IS NULL OR max_attempts < 1 OR
     base_us IS NULL OR base_us < 0 OR base_us > longest OR
     max_us IS NULL OR max_us < 0 OR max_us > longest OR
     backoff IS NULL OR backoff NOT IN ('fixed', 'exponential') OR
     backoff_jitter IS NULL OR backoff_jitter < 0 OR backoff_jitter > 1 OR
     unique_us IS NULL OR unique_us < 0 OR unique_us > longest OR
     keep_us IS NULL OR keep_us < 0 OR keep_us > longest OR
     keep_at_most IS NULL OR keep_at_most < 0 OR keep_at_most > 10000 OR
     priority IS NULL OR discard_expired IS NULL THEN
    RAISE EXCEPTION 'delayq: bad options (ttr, max_attempts, backoff, '
      'unique_for, keep_for or keep_at_most)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF backoff = 'fixed' THEN max_us := base_us; END IF;
  IF expire_at IS NOT NULL THEN
    expire_us := floor(extract(epoch FROM expire_at) * 1000000);
  END IF;
  IF expire_after IS NOT NULL THEN
    expire_us := least(expire_us,
      now_us + floor(extract(epoch FROM expire_after) * 1000000));
  END IF;
  IF expire_us IS NOT NULL AND (expire_us <= run_us OR expire_us > latest) THEN
    RAISE EXCEPTION 'delayq: the expiry must come after run_at, before 2100'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF keep_us > 0 THEN
    kept := CASE WHEN keep_at_most = 0 THEN 10000 ELSE keep_at_most END;
  ELSE
    keep_us := 0;
  END IF;
  IF EXISTS (SELECT 1 FROM {s}.jobs j WHERE j.id = job_id) OR
     EXISTS (SELECT 1 FROM {s}.held_ids h WHERE h.id = job_id
             AND h.until_us > now_us) THEN
    RAISE EXCEPTION 'delayq: id % is in use', quote_literal(job_id)
      USING ERRCODE = 'unique_violation';
  END IF;
  delayed := run_us > now_us;
  due := CASE WHEN delayed THEN least(run_us, expire_us) ELSE expire_us END;
  INSERT INTO {s}.jobs (id, topic, payload, state, priority, attempts,
    max_attempts, ttr_us, backoff_kind, backoff_base_us, backoff_max_us,
    enqueued_at_us, run_at_us, due_us, expire_at_us, discard_expired,
    unique_for_us, keep_for_us, keep_at_most)
  VALUES (job_id, topic, payload, CASE WHEN delayed THEN 0 ELSE 1 END,
    priority, 0, max_attempts, ttr_us,
    CASE WHEN backoff = 'fixed' THEN 0 ELSE 1 END
      + 2 * round(backoff_jitter * 1000000)::bigint,
    base_us, max_us, now_us, run_us, due, expire_us,
    CASE WHEN discard_expired THEN 1 ELSE 0 END, unique_us, keep_us, kept);
  INSERT INTO {s}.transitions_recent (minute_us, topic, enqueued, done,
    failed, retried, expired, dead, lapsed, late0, late1, late2, late3,
    late4, late5)
  VALUES (greatest(now_us, 0) - greatest(now_us, 0) % 60000000, topic, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  -- Delivered at the commit, and only then.
  IF NOT delayed AND (SELECT count(*) FROM (SELECT 1 FROM {s}.jobs j
      WHERE j.topic = enqueue.topic AND j.state = 1 LIMIT 2) AS b) = 1 THEN
    PERFORM pg_notify(channel, 'r' || topic);
  END IF;
  IF due IS NOT NULL THEN
    PERFORM pg_notify(channel, 'd' || due);
  END IF;
  RETURN job_id;
END
$fn$;
)sql";

// Schema version 4: who holds each lease (Job::holder) and since when,
// written by the reservation and read while the job is reserved; leases
// made before have neither (NULL). As the SQLite store's version 14.
constexpr char kSchemaLeaseHolders[] = R"sql(
ALTER TABLE {s}.jobs ADD COLUMN holder text,
  ADD COLUMN reserved_at_us bigint;
)sql";

// Schema version 5: batches (delayq/batch.h), as the SQLite store's version
// 15: a row of batches per batch with its counts, a row of batch_jobs per
// unfinished job of one. A batch goes with its completion job, whose id is
// the batch's (the foreign key says so once for every way a job leaves).
constexpr char kSchemaBatches[] = R"sql(
CREATE TABLE {s}.batches (
  id text PRIMARY KEY REFERENCES {s}.jobs (id) ON DELETE CASCADE,
  closed boolean NOT NULL DEFAULT false,
  total bigint NOT NULL DEFAULT 0,
  done bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  cancelled bigint NOT NULL DEFAULT 0
);
CREATE TABLE {s}.batch_jobs (
  job text PRIMARY KEY,
  batch text NOT NULL
);
)sql";

// Schema version 6: what a job waits for, for the job's whole life
// (Job::after, and the results Lease::dependency_results hands on), as the
// SQLite store's version 17. A row of job_after per id of the job's
// JobOptions::after, at its position; jobs.after_count says how many, so
// that reading a job (a reservation above all) looks at job_after only for
// a job that has some, and the trigger that takes the rows along when the
// job leaves runs only for such a job. A job that waits when its schema is
// migrated gets the dependencies it still waits for (the met ones were not
// kept), in id order.
constexpr char kSchemaDependencyLists[] = R"sql(
ALTER TABLE {s}.jobs ADD COLUMN after_count integer NOT NULL DEFAULT 0;
CREATE TABLE {s}.job_after (
  job text NOT NULL,
  pos integer NOT NULL,
  dependency text NOT NULL,
  PRIMARY KEY (job, pos)
);
INSERT INTO {s}.job_after (job, pos, dependency)
  SELECT dependant,
    row_number() OVER (PARTITION BY dependant ORDER BY dependency) - 1,
    dependency
  FROM {s}.dependencies;
UPDATE {s}.jobs j SET after_count = a.n
  FROM (SELECT job, count(*) AS n FROM {s}.job_after GROUP BY job) a
  WHERE j.id = a.job;
CREATE FUNCTION {s}.job_after_leaves() RETURNS trigger LANGUAGE plpgsql
AS $fn$
BEGIN
  DELETE FROM {s}.job_after WHERE job = OLD.id;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER job_after_leaves_with_its_job AFTER DELETE ON {s}.jobs
  FOR EACH ROW WHEN (OLD.after_count > 0)
  EXECUTE FUNCTION {s}.job_after_leaves();
)sql";

// Schema version 7: the plain reservation and acknowledgement, each one
// statement that does the whole transition (state, counts, news) in the
// caller's transaction, so that the commonest calls cost one round trip.
// Each does its work only when nothing else is to be done; otherwise it
// changes nothing and says so (reserve_plain: one row of NULLs; ack_plain:
// false), and the caller takes the general path of several statements.
//
// reserve_plain() serves a topic that is not paused, has no limit and has
// no due job but delayed ones whose run_at came (no lease to expire, no
// expiry): it promotes up to p_promote of those, earliest first, passing
// over the ones another transaction holds, and returns them as promoted
// (state 1); then takes the first p_max ready jobs, none of which may wait
// for others (their results are read apart: else it raises DQ001, undoing
// all), leases them as the general path does, tokens in the ready order
// from p_first_token, and returns them (state 2). It appends the
// deliveries to transitions_recent at minute p_minute (none when NULL),
// each in the lateness bucket of p_bounds that (now - run_at) falls in, as
// LatenessBucket() counts; announces the earliest deadline on p_channel
// when it moves the horizon, and the topic as ready when it promoted more
// than it took into an empty ready set (news.h).
//
// ack_plain() locks the reservation first, so a job made to wait for it
// meanwhile (kDependencyOf locks it) is seen by the checks that follow;
// it acknowledges only a job without keep_for, dependants or batch, of a
// topic without a concurrency cap, with its dedup window and count.
//
// ack_and_reserve_plain() is ack_plain() then reserve_plain(), for a worker
// going on to its next job in one transaction; when the ack is not plain it
// does nothing and returns one row of NULLs but for state, -1.
constexpr char kSchemaPlainPaths[] = R"sql(
CREATE FUNCTION {s}.reserve_plain(p_topic text, p_max integer,
    p_promote integer, p_now bigint, p_first_token bigint, p_holder text,
    p_minute bigint, p_bounds bigint[], p_channel text)
  RETURNS SETOF {s}.jobs LANGUAGE plpgsql AS $fn$
DECLARE
  v_none {s}.jobs;
  v_row {s}.jobs;
  v_seqs bigint[];
  v_waits boolean;
  v_late bigint[] := array_fill(0::bigint, ARRAY[6]);
  v_bucket integer;
  v_first bigint;
  v_promoted integer := 0;
  v_taken integer := 0;
BEGIN
  IF EXISTS (SELECT 1 FROM {s}.paused WHERE topic = p_topic) OR
     EXISTS (SELECT 1 FROM {s}.limits WHERE topic = p_topic) OR
     EXISTS (SELECT 1 FROM {s}.jobs WHERE topic = p_topic
             AND due_us IS NOT NULL AND due_us <= p_now
             AND state IN (0, 1, 2)
             AND (state <> 0 OR expire_at_us <= p_now)) THEN
    RETURN NEXT v_none;
    RETURN;
  END IF;
  FOR v_row IN
    UPDATE {s}.jobs j SET state = 1, due_us = j.expire_at_us, token = NULL
    FROM (SELECT seq FROM {s}.jobs WHERE topic = p_topic
          AND due_us IS NOT NULL AND due_us <= p_now AND state = 0
          ORDER BY due_us, seq LIMIT p_promote FOR UPDATE SKIP LOCKED) d
    WHERE j.seq = d.seq RETURNING j.*
  LOOP
    v_promoted := v_promoted + 1;
    RETURN NEXT v_row;
  END LOOP;
  SELECT array_agg(t.seq ORDER BY t.priority, t.run_at_us, t.seq),
         bool_or(t.after_count > 0)
    INTO v_seqs, v_waits
    FROM (SELECT seq, priority, run_at_us, after_count FROM {s}.jobs
          WHERE topic = p_topic AND state = 1
          ORDER BY priority, run_at_us, seq LIMIT p_max
          FOR UPDATE SKIP LOCKED) t;
  IF v_waits THEN
    RAISE EXCEPTION 'delayq: a job to lease waits for others'
      USING ERRCODE = 'DQ001';
  END IF;
  FOR v_row IN
    UPDATE {s}.jobs j SET state = 2, attempts = j.attempts + 1,
      due_us = GREATEST(p_now, j.run_at_us) + j.ttr_us,
      token = p_first_token + r.k - 1, holder = p_holder,
      reserved_at_us = p_now
    FROM unnest(v_seqs) WITH ORDINALITY AS r(seq, k)
    WHERE j.seq = r.seq RETURNING j.*
  LOOP
    v_bucket := (SELECT count(*) FROM unnest(p_bounds) AS b(us)
                 WHERE b.us < p_now - v_row.run_at_us);
    v_late[v_bucket + 1] := v_late[v_bucket + 1] + 1;
    v_first := LEAST(v_first, v_row.due_us);
    v_taken := v_taken + 1;
    RETURN NEXT v_row;
  END LOOP;
  IF v_promoted > v_taken AND (SELECT count(*) FROM (SELECT 1 FROM {s}.jobs
      WHERE topic = p_topic AND state = 1 LIMIT v_promoted - v_taken + 1)
      AS b) = v_promoted - v_taken THEN
    PERFORM pg_notify(p_channel, 'r' || p_topic);
  END IF;
  IF v_taken = 0 THEN
    RETURN;
  END IF;
  IF p_minute IS NOT NULL THEN
    INSERT INTO {s}.transitions_recent (minute_us, topic, enqueued, done,
      failed, retried, expired, dead, lapsed, late0, late1, late2, late3,
      late4, late5)
    VALUES (p_minute, p_topic, 0, 0, 0, 0, 0, 0, 0, v_late[1], v_late[2],
      v_late[3], v_late[4], v_late[5], v_late[6]);
  END IF;
  UPDATE {s}.news_horizon SET at_us = v_first WHERE id = 1
    AND (at_us IS NULL OR at_us > v_first OR at_us <= p_now);
  IF FOUND THEN
    PERFORM pg_notify(p_channel, 'd' || v_first);
  END IF;
END
$fn$;

CREATE FUNCTION {s}.ack_plain(p_id text, p_token bigint, p_now bigint,
    p_minute bigint)
  RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
  v_seq bigint;
  v_topic text;
  v_keep bigint;
  v_unique bigint;
BEGIN
  SELECT seq, topic, keep_for_us, unique_for_us
    INTO v_seq, v_topic, v_keep, v_unique
    FROM {s}.jobs WHERE id = p_id AND state = 2 AND token = p_token
    FOR UPDATE;
  IF NOT FOUND OR v_keep > 0 OR
     EXISTS (SELECT 1 FROM {s}.dependencies WHERE dependency = p_id) OR
     EXISTS (SELECT 1 FROM {s}.batch_jobs WHERE job = p_id) OR
     EXISTS (SELECT 1 FROM {s}.limits WHERE topic = v_topic
             AND concurrency > 0) THEN
    RETURN false;
  END IF;
  DELETE FROM {s}.jobs WHERE seq = v_seq;
  DELETE FROM {s}.jobs WHERE topic = v_topic AND state = 4
    AND (finished_at_us + keep_for_us) <= p_now;
  IF v_unique > 0 THEN
    INSERT INTO {s}.held_ids (id, until_us) VALUES (p_id, p_now + v_unique)
      ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us;
  END IF;
  IF p_minute IS NOT NULL THEN
    INSERT INTO {s}.transitions_recent (minute_us, topic, enqueued, done,
      failed, retried, expired, dead, lapsed, late0, late1, late2, late3,
      late4, late5)
    VALUES (p_minute, v_topic, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  END IF;
  RETURN true;
END
$fn$;

CREATE FUNCTION {s}.ack_and_reserve_plain(p_id text, p_token bigint,
    p_topic text, p_max integer, p_promote integer, p_now bigint,
    p_first_token bigint, p_holder text, p_minute bigint, p_bounds bigint[],
    p_channel text)
  RETURNS SETOF {s}.jobs LANGUAGE plpgsql AS $fn$
DECLARE
  v_none {s}.jobs;
BEGIN
  IF NOT {s}.ack_plain(p_id, p_token, p_now, p_minute) THEN
    v_none.state := -1;
    RETURN NEXT v_none;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM {s}.reserve_plain(p_topic, p_max, p_promote,
    p_now, p_first_token, p_holder, p_minute, p_bounds, p_channel);
END
$fn$;
)sql";

// Schema version 8: a batch's jobs leave it with the batch, as the SQLite
// store's version 18. The foreign key takes a batch's rows of batch_jobs
// along when the batch goes with its completion job (cancelled while
// waiting), so that a later batch of the same id counts only the jobs that
// joined it; it acts only when a batch leaves, never for a plain job, and
// the index lets it find the rows. A transaction that finishes a job of
// the batch while another cancels the completion job may deadlock with it
// (each holds a row the other wants); the loser is retried
// (transactions.cc). Rows kept of batches already gone are deleted first
// (those of a batch whose id was opened again since cannot be told from
// the new batch's, and stay).
constexpr char kSchemaBatchMembership[] = R"sql(
DELETE FROM {s}.batch_jobs m
  WHERE NOT EXISTS (SELECT 1 FROM {s}.batches b WHERE b.id = m.batch);
CREATE INDEX batch_jobs_batch ON {s}.batch_jobs (batch);
ALTER TABLE {s}.batch_jobs ADD CONSTRAINT batch_jobs_batch_fkey
  FOREIGN KEY (batch) REFERENCES {s}.batches (id) ON DELETE CASCADE;
)sql";

// Schema version 9: leaner transitions. Every reservation rewrites its
// job's row and every index entry of it (it changes state and due_us, so
// it is never a HOT update), and every write transaction appends a row of
// counts; each index they maintain and each byte of those rows is written
// to the WAL that the commit waits to flush.
//
// jobs_topic_state goes: every state has a partial index that leads with
// the topic (jobs_ready, jobs_dead, jobs_done, jobs_waiting, and
// jobs_topic_due for the delayed and reserved jobs, which always have a
// due time), and Stats(), the bounded counts and Topics() now read those.
// It was also a trap: with the statistics of a table that just grew, a
// reservation's look for due jobs went through it and read every job of
// the topic.
// transitions_recent_minute goes: the table holds the rows of the minutes
// not yet folded, which the fold and the totals read whole anyway. The
// counts of a transaction's row fit in integer: half the bytes of bigint.
// events_job becomes a hash index of job_id: a job's few events are found
// by their id and sorted, and an entry of a hash index writes about a
// third less WAL than one of (job_id, seq).
//
// The plain paths, anew, with fewer statements and plans kept: their
// statements without a LIMIT are planned once per connection (a plan for
// any values), not once per call, which cost a reservation more than its
// statements' work. A plan made for any value guesses that a range of one
// bound holds a third of the table, and would read all of it; so each
// range such a statement looks through has two bounds (v_min, the least
// bigint, below), which the planner takes as a narrow one. A reservation
// finds each delivery's lateness bucket without a statement.
constexpr char kSchemaLeanerTransitions[] = R"sql(
DROP INDEX {s}.jobs_topic_state;
DROP INDEX {s}.transitions_recent_minute;
DROP INDEX {s}.events_job;
CREATE INDEX events_job ON {s}.events USING hash (job_id);
ALTER TABLE {s}.transitions_recent ALTER COLUMN enqueued TYPE integer,
  ALTER COLUMN done TYPE integer, ALTER COLUMN failed TYPE integer,
  ALTER COLUMN retried TYPE integer, ALTER COLUMN expired TYPE integer,
  ALTER COLUMN dead TYPE integer, ALTER COLUMN lapsed TYPE integer,
  ALTER COLUMN late0 TYPE integer, ALTER COLUMN late1 TYPE integer,
  ALTER COLUMN late2 TYPE integer, ALTER COLUMN late3 TYPE integer,
  ALTER COLUMN late4 TYPE integer, ALTER COLUMN late5 TYPE integer;
CREATE OR REPLACE FUNCTION {s}.reserve_plain(p_topic text, p_max integer,
    p_promote integer, p_now bigint, p_first_token bigint, p_holder text,
    p_minute bigint, p_bounds bigint[], p_channel text)
  RETURNS SETOF {s}.jobs LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_min constant bigint := -9223372036854775807 - 1;
  v_none {s}.jobs;
  v_row {s}.jobs;
  v_seqs bigint[];
  v_late bigint[] := array_fill(0::bigint, ARRAY[6]);
  v_bound bigint;
  v_bucket integer;
  v_first bigint;
  v_promoted integer := 0;
  v_taken integer := 0;
BEGIN
  IF EXISTS (SELECT 1 FROM {s}.paused WHERE topic = p_topic) OR
     EXISTS (SELECT 1 FROM {s}.limits WHERE topic = p_topic) OR
     EXISTS (SELECT 1 FROM {s}.jobs WHERE topic = p_topic
             AND due_us >= v_min AND due_us <= p_now
             AND state IN (0, 1, 2)
             AND (state <> 0 OR expire_at_us <= p_now)) THEN
    RETURN NEXT v_none;
    RETURN;
  END IF;
  -- A look with a LIMIT other than 1 is planned for its values: a plan
  -- made for any limit guesses a tenth of the table, and would read all
  -- of it. The looks only find the jobs; the writes take them by key.
  IF EXISTS (SELECT 1 FROM {s}.jobs WHERE topic = p_topic
             AND due_us >= v_min AND due_us <= p_now AND state = 0) THEN
    PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    SELECT array_agg(d.seq ORDER BY d.due_us, d.seq) INTO v_seqs
      FROM (SELECT seq, due_us FROM {s}.jobs WHERE topic = p_topic
            AND due_us IS NOT NULL AND due_us <= p_now AND state = 0
            ORDER BY due_us, seq LIMIT p_promote FOR UPDATE SKIP LOCKED) d;
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    FOR v_row IN
      UPDATE {s}.jobs SET state = 1, due_us = expire_at_us, token = NULL
      WHERE seq = ANY(v_seqs) RETURNING *
    LOOP
      v_promoted := v_promoted + 1;
      RETURN NEXT v_row;
    END LOOP;
  END IF;
  IF p_max = 1 THEN
    SELECT ARRAY[seq] INTO v_seqs FROM {s}.jobs
      WHERE topic = p_topic AND state = 1
      ORDER BY priority, run_at_us, seq LIMIT 1 FOR UPDATE SKIP LOCKED;
  ELSE
    PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    SELECT array_agg(t.seq ORDER BY t.priority, t.run_at_us, t.seq)
      INTO v_seqs
      FROM (SELECT seq, priority, run_at_us FROM {s}.jobs
            WHERE topic = p_topic AND state = 1
            ORDER BY priority, run_at_us, seq LIMIT p_max
            FOR UPDATE SKIP LOCKED) t;
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
  END IF;
  IF v_seqs IS NOT NULL THEN
    FOR v_row IN
      UPDATE {s}.jobs SET state = 2, attempts = attempts + 1,
        due_us = GREATEST(p_now, run_at_us) + ttr_us,
        token = p_first_token + array_position(v_seqs, seq) - 1,
        holder = p_holder, reserved_at_us = p_now
      WHERE seq = ANY(v_seqs) RETURNING *
    LOOP
      IF v_row.after_count > 0 THEN
        RAISE EXCEPTION 'delayq: a job to lease waits for others'
          USING ERRCODE = 'DQ001';
      END IF;
      v_bucket := 0;
      FOREACH v_bound IN ARRAY p_bounds LOOP
        IF v_bound < p_now - v_row.run_at_us THEN
          v_bucket := v_bucket + 1;
        END IF;
      END LOOP;
      v_late[v_bucket + 1] := v_late[v_bucket + 1] + 1;
      v_first := LEAST(v_first, v_row.due_us);
      v_taken := v_taken + 1;
      RETURN NEXT v_row;
    END LOOP;
  END IF;
  IF v_promoted > v_taken THEN
    PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    IF (SELECT count(*) FROM (SELECT 1 FROM {s}.jobs WHERE topic = p_topic
        AND state = 1 LIMIT v_promoted - v_taken + 1) AS b)
        = v_promoted - v_taken THEN
      PERFORM pg_notify(p_channel, 'r' || p_topic);
    END IF;
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
  END IF;
  IF v_taken = 0 THEN
    RETURN;
  END IF;
  IF p_minute IS NOT NULL THEN
    INSERT INTO {s}.transitions_recent (minute_us, topic, enqueued, done,
      failed, retried, expired, dead, lapsed, late0, late1, late2, late3,
      late4, late5)
    VALUES (p_minute, p_topic, 0, 0, 0, 0, 0, 0, 0, v_late[1], v_late[2],
      v_late[3], v_late[4], v_late[5], v_late[6]);
  END IF;
  UPDATE {s}.news_horizon SET at_us = v_first WHERE id = 1
    AND (at_us IS NULL OR at_us > v_first OR at_us <= p_now);
  IF FOUND THEN
    PERFORM pg_notify(p_channel, 'd' || v_first);
  END IF;
END
$fn$;

CREATE OR REPLACE FUNCTION {s}.ack_plain(p_id text, p_token bigint,
    p_now bigint, p_minute bigint)
  RETURNS boolean LANGUAGE plpgsql
  SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_min constant bigint := -9223372036854775807 - 1;
  v_seq bigint;
  v_topic text;
  v_keep bigint;
  v_unique bigint;
BEGIN
  SELECT seq, topic, keep_for_us, unique_for_us
    INTO v_seq, v_topic, v_keep, v_unique
    FROM {s}.jobs WHERE id = p_id AND state = 2 AND token = p_token
    FOR UPDATE;
  IF NOT FOUND OR v_keep > 0 OR
     EXISTS (SELECT 1 FROM {s}.dependencies WHERE dependency = p_id) OR
     EXISTS (SELECT 1 FROM {s}.batch_jobs WHERE job = p_id) OR
     EXISTS (SELECT 1 FROM {s}.limits WHERE topic = v_topic
             AND concurrency > 0) THEN
    RETURN false;
  END IF;
  DELETE FROM {s}.jobs WHERE seq = v_seq;
  DELETE FROM {s}.jobs WHERE topic = v_topic AND state = 4
    AND (finished_at_us + keep_for_us) >= v_min
    AND (finished_at_us + keep_for_us) <= p_now;
  IF v_unique > 0 THEN
    INSERT INTO {s}.held_ids (id, until_us) VALUES (p_id, p_now + v_unique)
      ON CONFLICT (id) DO UPDATE SET until_us = excluded.until_us;
  END IF;
  IF p_minute IS NOT NULL THEN
    INSERT INTO {s}.transitions_recent (minute_us, topic, enqueued, done,
      failed, retried, expired, dead, lapsed, late0, late1, late2, late3,
      late4, late5)
    VALUES (p_minute, v_topic, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  END IF;
  RETURN true;
END
$fn$;
)sql";

// Version 10. The functions an application calls in its own sessions,
// enqueue() and the trigger its deletes of jobs fire, look by key whatever
// the tables' size when the session planned them, as the store's own
// connections do (connect_plan.cc): a session that began enqueueing while
// the store was empty (3,000 calls read 4.5 million rows of jobs) no
// longer scans the whole table on each call as it grows. JIT goes off
// with sequential scans, as there.
constexpr char kSchemaPlansByKey[] = R"sql(
ALTER FUNCTION {s}.enqueue(text, bytea, text, interval, timestamptz,
  interval, integer, integer, text, interval, interval, double precision,
  interval, timestamptz, boolean, interval, interval, integer, timestamptz)
  SET enable_seqscan = off SET jit = off;
ALTER FUNCTION {s}.job_after_leaves() SET enable_seqscan = off SET jit = off;
)sql";

// kMigrations[v] turns a schema of version v into version v + 1. Version 0
// is an empty schema. A new version appends its step here and bumps
// kSchemaVersion; steps never change once released.
constexpr const char* kMigrations[] = {
    kSchemaV1,           kSchemaDependencies,    kSchemaSqlEnqueue,
    kSchemaLeaseHolders, kSchemaBatches,         kSchemaDependencyLists,
    kSchemaPlainPaths,   kSchemaBatchMembership, kSchemaLeanerTransitions,
    kSchemaPlansByKey};
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

absl::Status MigrateInTransaction(Connection* conn, absl::string_view schema,
                                  bool create) {
  // Two processes opening a new store at once: the second waits here, then
  // finds the tables made.
  DQ_RETURN_IF_ERROR(conn->Run(
      "SELECT pg_advisory_xact_lock(hashtext('delayq schema ' || $1))",
      Params().Text(schema)));
  DQ_ASSIGN_OR_RETURN(
      Result exists, conn->Exec("SELECT 1 FROM pg_namespace WHERE nspname = $1",
                                Params().Text(schema)));
  if (exists.rows() == 0 && !create) {
    return absl::NotFoundError(absl::StrCat(
        conn->where(), ": no schema \"", schema,
        "\" in this database (a program that adds jobs creates it, as "
        "`delayq add` does; or pick another with ?schema=)"));
  }
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

absl::Status PrepareSchema(Connection* conn, absl::string_view schema,
                           bool create) {
  DQ_RETURN_IF_ERROR(conn->Run("BEGIN"));
  absl::Status status = MigrateInTransaction(conn, schema, create);
  if (status.ok()) status = conn->Run("COMMIT");
  if (!status.ok() && conn->InTransaction())
    conn->Run("ROLLBACK").IgnoreError();
  return status;
}

}  // namespace postgres_internal
}  // namespace delayq
