-- reserve: promotes the topic's due jobs (up to a limit, earliest first),
-- then reserves up to N ready jobs of one topic in ready
-- order, each with a fresh fencing token.
-- loads: promote counts results
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  ready: "{ns}:ready:<topic>"
-- KEYS[3]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  topic: the topic
-- ARGV[5]  max: most jobs to reserve (>= 1)
-- ARGV[6]  promote_max: most jobs to promote first (>= 1)
-- ARGV[7]  first_token: the first fencing token, drawn at random by the
--          caller in [1, 2^52); the leases get it and the integers after it
-- ARGV[8]  holder: who holds the leases (kept in their records)
-- Reply:   {"OK", moved, limited, lease...}: moved is the list of jobs the
--          promotion step moved, {kind, id, topic, attempts} each as in
--          promote_due (with what each settled); limited is "" unless the topic's limit held ready
--          jobs back, then the time (µs) it next allows one, or "released"
--          when its concurrency cap is full; then one entry per lease, in
--          reserve order: {record, id} (record: the job's, as reserved, see
--          lib/job.lua), then for a job with dependencies an id and a
--          result for each of them kept done (lib/results.lua)
--
-- Run once per job like ack, so it requires no helpers either: building
-- their closures on every call cost more than the reservation itself. It
-- spells out instead clock(), int_text(), member_id() (READY_HEADER),
-- job_pack() and the record's fields of job.lua, expiry_off() of index.lua,
-- announce_due() of news.lua, count() and lateness_kind() of counts.lua
-- and the key layout of keys.lua, and must change with them
-- (script_layout_test checks the positions below and every key it spells
-- against job.lua and keys.lua). The promotion, needed only when something
-- is due, loads its helpers then (and announces the ready edge it may make).
-- fields: STATE=2 TTR=5 RUN_AT=10 ATTEMPTS=13 DEADLINE=14 TOKEN=15
-- fields: EXPIRE_AT=17 DISCARD=18 UNIQUE_FOR=19 KEEP_AT_MOST=21
-- fields: FINISHED_AT=22 RESULT=23 HOLDER=24 RESERVED_AT=25 AFTER=26
-- fields: ON_FAILURE=27 BATCH_OF=29 BATCH_CLOSED=30
local P, topic = KEYS[1], ARGV[4]
local now, now_text = tonumber(ARGV[1]), ARGV[1]
if ARGV[2] ~= '0' then
  local t = redis.call('TIME')
  local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if ARGV[2] == '1' then
    now, now_text = s, string.format('%d', s)
  else
    local ahead, behind = string.match(ARGV[2], '^(%d+):(%d+)$')
    local skew = now - s
    if skew > tonumber(ahead) or -skew > tonumber(behind) then
      return redis.error_reply('CLOCK_SKEW ' .. string.format('%d', skew))
    end
  end
end
local treserved = P .. 'treserved:' .. topic
-- LATENESS_BOUNDS of counts.lua.
local LATENESS_BOUNDS = {10000, 100000, 1000000, 10000000, 60000000}
-- Most calls find nothing due: the topic's DUE score (index.lua: at or
-- before its earliest run_at or expire_at) and a one-entry range query of
-- its leases tell, and the promotion proper (which reads scores and merges
-- the sets) runs only when they found something. Jobs that expired by now
-- lapse there, so none is reserved below.
local texpire = P .. 'texpire:' .. topic
local moved = {}
local due = redis.call('ZSCORE', P .. 'due', topic)
if (due and tonumber(due) <= now and
    (#redis.call('ZRANGEBYSCORE', P .. 'tdelayed:' .. topic, '-inf', now_text,
                 'LIMIT', '0', '1') > 0 or
     #redis.call('ZRANGEBYSCORE', texpire, '-inf', now_text,
                 'LIMIT', '0', '1') > 0)) or
   #redis.call('ZRANGEBYSCORE', treserved, '-inf', now_text,
               'LIMIT', '0', '1') > 0 then
  moved = load_promote().promote_topic(topic, now_text, tonumber(ARGV[6]))
end

local out = {'OK', moved, ''}
-- One EXISTS of the paused set and the limits hash tells that neither
-- pause nor limit can apply, the common case, instead of a read of each.
local gated = redis.call('EXISTS', P .. 'paused', P .. 'limits') > 0
-- A paused topic (P.."paused", see keys.lua) hands out nothing; what came
-- due above waits as ready.
if gated and redis.call('SISMEMBER', P .. 'paused', topic) == 1 then
  return out
end
-- A limited topic (P.."limits") hands out no more than its limit allows:
-- LimitGate of src/common/limit_gate.h, spelled out.
local max = tonumber(ARGV[5])
local take = max
local limit = false
if gated then limit = redis.call('HGET', P .. 'limits', topic) end
local interval, tolerance, start, cap, reserved
if limit then
  local rate, period, burst, c, tat =
      string.match(limit, '^(%d+):(%d+):(%d+):(%d+):(%-?%d*)$')
  rate, cap = tonumber(rate), tonumber(c)
  interval = 0
  if rate > 0 then interval = math.max(1, math.ceil(tonumber(period) / rate)) end
  tolerance = interval * (math.max(tonumber(burst), 1) - 1)
  start = now
  if tat ~= '' then start = math.max(tonumber(tat), now) end
  reserved = 0
  if cap > 0 then
    reserved = redis.call('ZCARD', treserved)
    take = math.min(take, math.max(0, cap - reserved))
  end
  if interval > 0 then
    local slack = tolerance - (start - now)
    if slack < 0 then take = 0 else
      take = math.min(take, math.floor(slack / interval) + 1)
    end
  end
end
local popped = {}
if take > 0 then popped = redis.call('ZPOPMIN', KEYS[2], take) end
if limit then
  local taken = #popped / 2
  if taken > 0 then
    redis.call('HSET', P .. 'limits', topic,
               string.match(limit, '^(.*:)') ..
                   string.format('%d', start + taken * interval))
  end
  if taken < max and redis.call('EXISTS', KEYS[2]) == 1 then
    if cap > 0 and reserved + taken >= cap then
      out[3] = 'released'
    else
      out[3] = string.format('%d', math.max(now, start + taken * interval -
                                                  tolerance))
    end
  end
end
if #popped == 0 then return out end
-- Tokens are random, not a counter kept here: a counter starts again after
-- Redis loses it (FLUSHALL, a restart from an older snapshot, a failover to a
-- replica that lagged) and would hand a stale worker's token to the next
-- attempt. Redis's own math.random cannot serve: it starts from the same
-- seed on every server start. Below 2^53, every token is exact in Lua.
local token = tonumber(ARGV[7]) - 1
-- Every record read with one HMGET and written with one HSET; both lease
-- indexes get one ZADD for the whole batch.
local ids = {}
for i = 1, #popped, 2 do ids[#ids + 1] = string.sub(popped[i], 21) end
local records = {}
for i = 1, #ids, 512 do
  local got = redis.call('HMGET', KEYS[3],
                         unpack(ids, i, math.min(i + 511, #ids)))
  for k = 1, #got do records[i + k - 1] = got[k] end
end
local writes = {}
local leases = {}
local results = nil  -- lib/results.lua, once a job with AFTER needs it
local first, first_text = nil, nil  -- the earliest new deadline
local late = {}  -- deliveries by lateness bucket (counts.lua)
for i, id in ipairs(ids) do
  -- A member without a job cannot occur while every transition goes through
  -- these scripts; should one appear it is dropped, not reserved.
  if records[i] then
    -- Record fields (job.lua): 2 STATE, 5 TTR, 10 RUN_AT, 13 ATTEMPTS,
    -- 14 DEADLINE, 15 TOKEN, 16 LAST_ERROR, 17 EXPIRE_AT .. 21 KEEP_AT_MOST.
    local j = {cmsgpack.unpack(records[i])}
    token = token + 1
    -- ttr from now, or from run_at when the caller's clock is behind the
    -- one that found the job due.
    local at = math.max(now, j[10]) + j[5]
    local bucket = #LATENESS_BOUNDS
    for b, bound in ipairs(LATENESS_BOUNDS) do
      if now - j[10] <= bound then
        bucket = b - 1
        break
      end
    end
    late[bucket] = (late[bucket] or 0) + 1
    local deadline = string.format('%d', at)
    if not first or at < first then first, first_text = at, deadline end
    j[2] = 2  -- reserved
    j[13] = (j[13] or 0) + 1
    j[14] = at
    j[15] = token
    -- A finished job's values (a kicked dead one's) stay out, as job_pack()
    -- leaves them; the holder and the time go at the end.
    j[22], j[23] = nil, nil
    j[24] = ARGV[8]
    j[25] = now
    -- Reserved, it leaves the expiring set (index.lua's expiry_off; the
    -- topic's DUE score may stay too early, which index.lua allows).
    if j[17] then redis.call('ZREM', texpire, id) end
    -- A batch's values stay (BATCH_OF, or the batch a completion job
    -- holds).
    local last = j[30] and 34 or j[29] and 29 or j[26] and 27 or 25
    local record = cmsgpack.pack(unpack(j, 1, last))
    writes[#writes + 1] = id
    writes[#writes + 1] = record
    leases[#leases + 1] = deadline
    leases[#leases + 1] = id
    local lease = {record, id}
    if j[26] then
      results = results or load_results()
      results.add_dependency_results(lease, j)
    end
    out[#out + 1] = lease
  end
end
-- At most 2 * 256 arguments per call, so unpack() never spreads more values
-- than Lua's stack allows.
for i = 1, #writes, 512 do
  redis.call('HSET', KEYS[3], unpack(writes, i, math.min(i + 511, #writes)))
end
for i = 1, #leases, 512 do
  local j = math.min(i + 511, #leases)
  redis.call('ZADD', P .. 'reserved', unpack(leases, i, j))
  redis.call('ZADD', treserved, unpack(leases, i, j))
end
-- count() of counts.lua for each lateness bucket; a new field loads the
-- rest.
if ARGV[3] ~= '0' then
  local minute = string.format('%d', now - now % 60000000)
  local key = P .. 'counts_recent:' .. minute
  for bucket, n in pairs(late) do
    if redis.call('HINCRBY', key, bucket .. ':' .. topic, n) == n then
      load_counts().new_count_field(minute, ARGV[3])
    end
  end
end
-- announce_due(first, now) of news.lua: one GET per call, and most calls
-- find a horizon at or before their deadlines.
if first then
  local h = tonumber(redis.call('GET', P .. 'horizon'))
  if not h or first < h or h <= now then
    redis.call('SET', P .. 'horizon', first_text)
    redis.call('SPUBLISH', P .. 'news', 'd' .. first_text)
  end
end
return out
