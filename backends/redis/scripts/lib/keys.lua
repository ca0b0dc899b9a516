-- keys.lua — the key layout. Every key starts with the prefix P = "{ns}:"
-- (KEYS[1] of every script). The braces make "{ns}" the Redis Cluster hash
-- tag, so all keys of a namespace live in one slot and a script may touch
-- any of them:
--   P.."jobs"            hash    every job: id -> record (see job.lua)
--   P.."ready:"..topic   zset    ready jobs, all score 0, member = ready_member()
--   P.."tdelayed:"..topic   zset  the topic's delayed jobs by run_at
--   P.."due"             zset    topics with delayed jobs, each scored at or
--                                before its earliest run_at (see index.lua)
--   P.."reserved"        zset    reserved jobs of every topic by deadline
--   P.."treserved:"..topic  zset  the topic's reserved jobs by deadline
--   P.."dead:"..topic    zset    dead jobs by death order
--   P.."texpire:"..topic zset    the topic's delayed and ready jobs that
--                                expire, by expire_at (see index.lua)
--   P.."tdone:"..topic   zset    the topic's done jobs by the time each
--                                leaves, member = done_member() (done.lua)
--   P.."done"            zset    the same members of every topic, for
--                                PromoteDue()
--   P.."twaiting:"..topic zset  the topic's waiting jobs by enqueue order
--                                (SEQ_NO; see depend.lua)
--   P.."dependants:"..id set     the waiting jobs that wait for job `id`
--                                (see depend.lua)
--   P.."held"            zset    ids held by dedup windows, scored by the
--                                time each is free again (see held.lua)
--   P.."limits"          hash    topic -> its limit and token bucket,
--                                "rate:period:burst:concurrency:tat" (µs;
--                                tat empty for a fresh bucket; see
--                                limit-2.lua and reserve)
--   P.."limits_asked"    hash    shard 0 of a sharded namespace only: topic ->
--                                the limit as set, "rate:period:burst:
--                                concurrency:" (each shard enforces its
--                                share in LIMITS; see README.md)
--   P.."topics"          set     topics with at least one job (a job in one
--                                of the per-topic sets above but texpire)
--   P.."seq"             string  enqueue / death / acknowledgement order
--                                counter
--   P.."meta"            hash    layout (see open-3.lua)
--   P.."horizon"         string  due time subscribers know of (see news.lua)
--   P.."paused"          set     paused topics: reserve hands out none of
--                                their jobs (see pause-2.lua)
--   P.."schedules"       set     the names of all schedules
--   P.."schedule:"..name hash    one schedule: its definition's fields,
--                                done_through and revision (see
--                                schedule_put-3.lua)
--   P.."counts_recent:"..minute  hash  one minute's counts not yet folded
--                                into the totals (minute: its start, µs):
--                                "<kind>:<topic>" -> n (see counts.lua)
--   P.."count_recent"    zset    the minutes that have a counts_recent hash,
--                                each scored by itself
--   P.."counts:"..minute hash    one minute's folded counts, the same
--                                fields; expires once the counts window
--                                has passed it
--   P.."count_totals"    hash    the same fields, folded since ever
--   P.."count_minutes"   zset    the minutes that have a counts or a
--                                counts_recent hash, each scored by itself
--   P.."events"          stream  the event log (delayq/event_log.h), written
--                                and read by the C++ side only (events.cc)
--   P.."news"            channel sharded pub/sub channel of the announcements
--                                (see news.lua); not a key, but it carries
--                                the hash tag, so it lives in the same slot
-- Keys that the caller knows in advance (the global keys) are passed in
-- KEYS; keys that depend on data read inside the script (a job's topic) are
-- built from P, which carries the same hash tag, as BullMQ does.
-- Times are integer microseconds since the Unix epoch.

local P = KEYS[1]

local JOBS = P .. 'jobs'
local function ready_key(topic) return P .. 'ready:' .. topic end
local function dead_key(topic) return P .. 'dead:' .. topic end
local RESERVED = P .. 'reserved'
local DUE = P .. 'due'
local TOPICS = P .. 'topics'
local HORIZON = P .. 'horizon'
local PAUSED = P .. 'paused'
local HELD = P .. 'held'
local LIMITS = P .. 'limits'
local LIMITS_ASKED = P .. 'limits_asked'
local SCHEDULES = P .. 'schedules'
local function schedule_key(name) return P .. 'schedule:' .. name end
local NEWS = P .. 'news'
local function counts_key(minute) return P .. 'counts:' .. minute end
local function recent_counts_key(minute)
  return P .. 'counts_recent:' .. minute
end
local COUNT_RECENT = P .. 'count_recent'
local COUNT_TOTALS = P .. 'count_totals'
local COUNT_MINUTES = P .. 'count_minutes'
-- Passed in KEYS by the scripts that use them; named here for the layout.
local SEQ = P .. 'seq'
local META = P .. 'meta'
-- Delayed jobs have one index, their topic's; DUE finds the topics that
-- have something due. Reservations have two: RESERVED serves PromoteDue()
-- and NextDue() across topics, the topic's own lets Reserve() expire the
-- leases of its topic only (leases of other topics stay current until
-- their own topic moves them). Every script updates both together.
local function tdelayed_key(topic) return P .. 'tdelayed:' .. topic end
local function treserved_key(topic) return P .. 'treserved:' .. topic end
-- Delayed and ready jobs that expire have a third index, by expire_at: a
-- due time of their topic like a run_at (DUE counts it).
local function texpire_key(topic) return P .. 'texpire:' .. topic end
-- Done jobs have two indexes like reservations: DONE lets PromoteDue() find
-- the ones leaving across topics, the topic's own serves List(), Stats(),
-- keep_at_most and the topic's acks.
local DONE = P .. 'done'
local function tdone_key(topic) return P .. 'tdone:' .. topic end
-- Jobs that wait for others (depend.lua): the topic's waiting set, and per
-- job that others wait for, the set of its waiting dependants.
local function twaiting_key(topic) return P .. 'twaiting:' .. topic end
local function dependants_key(id) return P .. 'dependants:' .. id end
-- How many dependencies each waiting job still waits for (id -> count),
-- apart from its record: a dependency's ack counts one off with HINCRBY,
-- so a job that waits for thousands is not rewritten at each of them.
local PENDING_COUNTS = P .. 'pending'
