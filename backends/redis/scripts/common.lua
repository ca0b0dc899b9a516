-- common.lua — helpers shared by every delayq script. The build prepends this
-- file to each <op>-<numkeys>.lua, so each loaded script is self-contained.
--
-- Key layout. Every key starts with the prefix P = "{ns}:" (KEYS[1] of every
-- script). The braces make "{ns}" the Redis Cluster hash tag, so all keys of a
-- namespace live in one slot and a script may touch any of them:
--   P.."job:"..id        hash    one job (fields below)
--   P.."ready:"..topic   zset    ready jobs, all score 0, member = ready_member()
--   P.."delayed:"..i     zset    delayed jobs by run_at, i in [0, buckets)
--   P.."reserved"        zset    reserved jobs by lease deadline
--   P.."tdelayed:"..topic   zset  the topic's delayed jobs by run_at
--   P.."treserved:"..topic  zset  the topic's reserved jobs by deadline
--   P.."dead:"..topic    zset    dead jobs by death order (capped)
--   P.."counts:"..topic  hash    delayed/ready/reserved/dead/live counts
--   P.."topics"          set     topics with at least one live job
--   P.."token"           string  fencing token counter
--   P.."seq"             string  enqueue / death order counter
-- Keys that the caller knows in advance (the global keys, and the job hash of
-- a single-job call) are passed in KEYS; keys that depend on data read inside
-- the script (a job's topic, ids popped from a set) are built from P, which
-- carries the same hash tag, as BullMQ does.
--
-- Job hash fields: topic payload state priority attempts max_attempts ttr
-- backoff ("kind:base_us:max_us") enqueued_at run_at deadline last_error
-- token seq bucket. Times are integer microseconds since the Unix epoch.

local P = KEYS[1]

local function job_key(id) return P .. 'job:' .. id end
local function ready_key(topic) return P .. 'ready:' .. topic end
local function dead_key(topic) return P .. 'dead:' .. topic end
local function counts_key(topic) return P .. 'counts:' .. topic end
local function bucket_key(i) return P .. 'delayed:' .. i end
local RESERVED = P .. 'reserved'
-- The global sets serve PromoteDue() and NextDue() across topics; the
-- per-topic ones let Reserve() promote its own topic only (leases of other
-- topics stay current until their own topic moves them) and List() walk one
-- topic. Every script updates both together.
local function tdelayed_key(topic) return P .. 'tdelayed:' .. topic end
local function treserved_key(topic) return P .. 'treserved:' .. topic end

local function delay_on(id, topic, run_at, b)
  redis.call('ZADD', bucket_key(b), run_at, id)
  redis.call('ZADD', tdelayed_key(topic), run_at, id)
end

local function delay_off(id, topic, b)
  redis.call('ZREM', bucket_key(b), id)
  redis.call('ZREM', tdelayed_key(topic), id)
end

local function lease_on(id, topic, deadline)
  redis.call('ZADD', RESERVED, deadline, id)
  redis.call('ZADD', treserved_key(topic), deadline, id)
end

local function lease_off(id, topic)
  redis.call('ZREM', RESERVED, id)
  redis.call('ZREM', treserved_key(topic), id)
end
local TOPICS = P .. 'topics'

-- The time of this call, and the shift to add to absolute times the caller
-- computed with its own clock. `server` = '1' reads the server's TIME (allowed
-- in Redis >= 5 with effects replication, the default since Redis 5).
local function clock(now_arg, server)
  local now = tonumber(now_arg)
  if server == '1' then
    local t = redis.call('TIME')
    local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return s, s - now
  end
  return now, 0
end

-- Ready order is (priority, run_at, seq). Doubles hold 53 bits, too few for
-- all three, so the ready set keeps score 0 and orders by member bytes: three
-- fixed-width hex fields, each biased to be non-negative, then the id. ZPOPMIN
-- on equal scores pops the lexicographically smallest member.
local READY_HEADER = 40
local function ready_member(priority, run_at, seq, id)
  return string.format('%08x%016x%016x', priority + 2147483648,
                       run_at + 9007199254740992, seq) .. id
end

local function member_id(member) return string.sub(member, READY_HEADER + 1) end

local SNAPSHOT_FIELDS = {'topic', 'payload', 'state', 'priority', 'attempts',
  'max_attempts', 'ttr', 'backoff', 'enqueued_at', 'run_at', 'deadline',
  'last_error', 'token'}

-- {id, fields...} in the order of SNAPSHOT_FIELDS (the C++ side relies on it).
local function snapshot(id)
  local v = redis.call('HMGET', job_key(id), unpack(SNAPSHOT_FIELDS))
  table.insert(v, 1, id)
  return v
end

local function count(topic, from, to)
  local ck = counts_key(topic)
  if from then redis.call('HINCRBY', ck, from, -1) end
  if to then redis.call('HINCRBY', ck, to, 1) end
end

local function count_new(topic, to)
  local ck = counts_key(topic)
  redis.call('HINCRBY', ck, to, 1)
  if redis.call('HINCRBY', ck, 'live', 1) == 1 then
    redis.call('SADD', TOPICS, topic)
  end
end

-- Removes a job from the store entirely (its hash and its counts).
local function forget(id, topic, from)
  redis.call('DEL', job_key(id))
  local ck = counts_key(topic)
  redis.call('HINCRBY', ck, from, -1)
  if redis.call('HINCRBY', ck, 'live', -1) <= 0 then
    redis.call('DEL', ck)
    redis.call('SREM', TOPICS, topic)
  end
end

-- Puts a job (not in any index) into ready or delayed by its run_at.
local function schedule(id, jk, topic, run_at, now, buckets)
  if run_at <= now then
    local f = redis.call('HMGET', jk, 'priority', 'seq')
    redis.call('ZADD', ready_key(topic), 0,
               ready_member(tonumber(f[1]), run_at, tonumber(f[2]), id))
    redis.call('HSET', jk, 'state', 'ready', 'run_at', run_at, 'deadline', '')
    return 'ready'
  end
  local b = tonumber(redis.call('HGET', jk, 'seq')) % buckets
  delay_on(id, topic, run_at, b)
  redis.call('HSET', jk, 'state', 'delayed', 'run_at', run_at, 'deadline', '',
             'bucket', b)
  return 'delayed'
end

-- Moves a dead job to the topic's dead set and evicts the oldest beyond `cap`
-- (deleting their hashes, so nothing leaks).
local function bury(id, jk, topic, cap)
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', dead_key(topic), seq, id)
  redis.call('HSET', jk, 'state', 'dead', 'deadline', '')
  local dk = dead_key(topic)
  local over = redis.call('ZCARD', dk) - cap
  if over > 0 then
    local evicted = redis.call('ZPOPMIN', dk, over)
    for i = 1, #evicted, 2 do
      forget(evicted[i], topic, 'dead')
    end
  end
end

-- Makes one due job ready again: a delayed job whose run_at came, or a
-- reservation whose deadline passed. `from` is the set the id was found in;
-- an entry there that names no such job (which no script leaves behind) is
-- dropped. Returns a transition {kind, id, topic, attempts}, or nil.
local function promote_delayed(id, from)
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'topic', 'priority', 'run_at', 'seq',
                       'attempts', 'state', 'bucket')
  if not f[1] or f[6] ~= 'delayed' then
    redis.call('ZREM', from, id)
    return nil
  end
  delay_off(id, f[1], f[7])
  local run_at = tonumber(f[3])
  redis.call('ZADD', ready_key(f[1]), 0,
             ready_member(tonumber(f[2]), run_at, tonumber(f[4]), id))
  redis.call('HSET', jk, 'state', 'ready')
  count(f[1], 'delayed', 'ready')
  return {'promoted', id, f[1], tonumber(f[5])}
end

local function expire_reservation(id, from, dead_cap)
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'topic', 'priority', 'run_at', 'seq',
                       'attempts', 'max_attempts', 'state')
  if not f[1] or f[7] ~= 'reserved' then
    redis.call('ZREM', from, id)
    return nil
  end
  lease_off(id, f[1])
  local attempts = tonumber(f[5])
  if attempts >= tonumber(f[6]) then
    redis.call('HSET', jk, 'last_error', 'lease expired')
    count(f[1], 'reserved', 'dead')
    bury(id, jk, f[1], dead_cap)
    return {'dead', id, f[1], attempts}
  end
  redis.call('ZADD', ready_key(f[1]), 0,
             ready_member(tonumber(f[2]), tonumber(f[3]), tonumber(f[4]), id))
  redis.call('HSET', jk, 'state', 'ready', 'deadline', '')
  count(f[1], 'reserved', 'ready')
  return {'expired', id, f[1], attempts}
end

-- Promotes up to `limit` due jobs (all of them when limit <= 0) from the
-- given sources, earliest due first. `sources` is a list of {key, delayed}
-- where delayed is true for a set of delayed jobs, false for reservations.
-- Returns the transitions and whether more are due.
local function promote_from(sources, now, limit, dead_cap)
  -- Take up to limit + 1 due entries from every source, merge them by time,
  -- and move the first `limit`: the extra entry tells whether more remain.
  local due = {}
  for _, src in ipairs(sources) do
    local r
    if limit > 0 then
      r = redis.call('ZRANGEBYSCORE', src[1], '-inf', now, 'WITHSCORES',
                     'LIMIT', 0, limit + 1)
    else
      r = redis.call('ZRANGEBYSCORE', src[1], '-inf', now, 'WITHSCORES')
    end
    for i = 1, #r, 2 do
      table.insert(due, {tonumber(r[i + 1]), r[i], src})
    end
  end
  if #due > 1 then table.sort(due, function(x, y) return x[1] < y[1] end) end
  local more = 0
  local n = #due
  if limit > 0 and n > limit then
    more = 1
    n = limit
  end
  local out = {}
  for i = 1, n do
    local d = due[i]
    local t
    if d[3][2] then
      t = promote_delayed(d[2], d[3][1])
    else
      t = expire_reservation(d[2], d[3][1], dead_cap)
    end
    if t then table.insert(out, t) end
  end
  return out, more
end

-- Every topic: the delay buckets and the global reservations.
local function promote_due(now, limit, buckets, dead_cap)
  local sources = {}
  for b = 0, buckets - 1 do table.insert(sources, {bucket_key(b), true}) end
  table.insert(sources, {RESERVED, false})
  return promote_from(sources, now, limit, dead_cap)
end

-- One topic: its own delayed and reserved sets.
local function promote_topic(topic, now, limit, dead_cap)
  return promote_from({{tdelayed_key(topic), true},
                       {treserved_key(topic), false}}, now, limit, dead_cap)
end

-- Checks that `token` is the current reservation of job `id`. Returns the job
-- key and its topic, or nil and a status word.
local function check_lease(jk, token)
  local f = redis.call('HMGET', jk, 'state', 'token', 'topic')
  if f[1] ~= 'reserved' or f[2] ~= token then return nil, 'STALE' end
  return f[3], nil
end
