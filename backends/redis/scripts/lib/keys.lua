-- keys.lua — the key layout. Every key starts with the prefix P = "{ns}:"
-- (KEYS[1] of every script). The braces make "{ns}" the Redis Cluster hash
-- tag, so all keys of a namespace live in one slot and a script may touch
-- any of them:
--   P.."job:"..id        hash    one job (fields below)
--   P.."ready:"..topic   zset    ready jobs, all score 0, member = ready_member()
--   P.."delayed:"..i     zset    delayed jobs by run_at, i in [0, buckets)
--   P.."reserved"        zset    reserved jobs by lease deadline
--   P.."tdelayed:"..topic   zset  the topic's delayed jobs by run_at
--   P.."treserved:"..topic  zset  the topic's reserved jobs by deadline
--   P.."dead:"..topic    zset    dead jobs by death order
--   P.."topics"          set     topics with at least one live job (a job in
--                                one of the four per-topic sets above)
--   P.."seq"             string  enqueue / death order counter
--   P.."meta"            hash    buckets, layout (see open-3.lua)
--   P.."horizon"         string  due time subscribers know of (see news.lua)
--   P.."news"            channel sharded pub/sub channel of the announcements
--                                (see news.lua); not a key, but it carries
--                                the hash tag, so it lives in the same slot
-- Keys that the caller knows in advance (the global keys, and the job hash of
-- a single-job call) are passed in KEYS; keys that depend on data read inside
-- the script (a job's topic, ids popped from a set) are built from P, which
-- carries the same hash tag, as BullMQ does.
--
-- Job hash fields: topic state spec (priority, max_attempts, ttr and backoff
-- in one field, see spec.lua) payload attempts enqueued_at run_at deadline
-- last_error token seq bucket; attempts, deadline, last_error and token are
-- absent until the first reservation (attempts then reads as 0). Times are
-- integer microseconds since the Unix epoch.

local P = KEYS[1]

local function job_key(id) return P .. 'job:' .. id end
local function ready_key(topic) return P .. 'ready:' .. topic end
local function dead_key(topic) return P .. 'dead:' .. topic end
local function bucket_key(i) return P .. 'delayed:' .. i end
local RESERVED = P .. 'reserved'
local TOPICS = P .. 'topics'
local HORIZON = P .. 'horizon'
local NEWS = P .. 'news'
-- Passed in KEYS by the scripts that use them; named here for the layout.
local SEQ = P .. 'seq'
local META = P .. 'meta'
-- The global sets serve PromoteDue() and NextDue() across topics; the
-- per-topic ones let Reserve() promote its own topic only (leases of other
-- topics stay current until their own topic moves them) and List() walk one
-- topic. Every script updates both together.
local function tdelayed_key(topic) return P .. 'tdelayed:' .. topic end
local function treserved_key(topic) return P .. 'treserved:' .. topic end
