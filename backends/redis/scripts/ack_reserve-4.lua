-- ack_reserve: a worker's steady state in one call: acks the job it
-- finished (as ack does), then reserves its next jobs of a topic (as
-- reserve does). The ack comes first, so its lease frees a slot of a
-- concurrency cap before the reservation counts them, and the promotion
-- step cannot take back the acked job's lease if its deadline passed. A
-- refused ack (a stale token) changes nothing and the reservation still
-- goes ahead: the two parts are decided one after the other, in one step.
-- loads: promote counts depend results batch
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- KEYS[4]  ready: "{ns}:ready:<topic>" of the topic to reserve from
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  id: the acked job's id
-- ARGV[5]  token: the acked lease's fencing token
-- ARGV[6]  result: kept with a done job
-- ARGV[7]  topic: the topic to reserve from
-- ARGV[8]  max: most jobs to reserve (>= 1)
-- ARGV[9]  promote_max: most jobs to promote first (>= 1)
-- ARGV[10] first_token: the first fencing token, drawn at random by the
--          caller in [1, 2^52); the leases get it and the integers after it
-- ARGV[11] holder: who holds the leases (kept in their records)
-- Reply:   {"OK", acked, moved, limited, lease...}: acked is OK, or STALE
--          when the ack changed nothing; then as reserve's reply after its
--          first word, but for the jobs the ack released (lib/settled.lua)
--          at the front of moved
--
-- Run once per job, so it requires no helpers: it spells out what ack-3.lua
-- and reserve-3.lua spell out (and must change with them; the conformance
-- suite holds all three to one contract, script_layout_test checks the
-- positions below and every key it spells). Two checks that those scripts
-- make as separate calls are one here: one EXISTS of the paused set and the
-- limits hash tells that neither pause nor limit can apply (the common
-- case), and the topic's DUE score (index.lua: at or before its earliest
-- run_at or expire_at) tells whether its delayed or expiring sets can hold
-- anything due.
-- fields: TOPIC=1 STATE=2 TTR=5 RUN_AT=10 ATTEMPTS=13 DEADLINE=14
-- fields: TOKEN=15 EXPIRE_AT=17 DISCARD=18 UNIQUE_FOR=19 KEEP_FOR=20
-- fields: KEEP_AT_MOST=21 FINISHED_AT=22 RESULT=23 HOLDER=24
-- fields: RESERVED_AT=25 AFTER=26 ON_FAILURE=27 BATCH_OF=29
-- fields: BATCH_CLOSED=30 SEQ_NO=11
local P, id, topic = KEYS[1], ARGV[4], ARGV[7]
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
-- Whether a topic may be paused or limited at all.
local gated = redis.call('EXISTS', P .. 'paused', P .. 'limits') > 0

-- The ack: ack-3.lua from its record check on, with this call's time. The
-- jobs it releases go in ack_settled.
local ack_settled = {}
local function ack()
  local r = redis.call('HGET', KEYS[2], id)
  if not r then return 'STALE' end
  local j = {cmsgpack.unpack(r)}
  -- STATE 2 is reserved.
  if j[2] ~= 2 or not j[15] or string.format('%d', j[15]) ~= ARGV[5] then
    return 'STALE'
  end
  local atopic = j[1]
  local treserved = P .. 'treserved:' .. atopic
  local batch = j[29]
  j[29] = nil
  local keep = j[20] and j[20] > 0
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', treserved, id)
  if not keep then redis.call('HDEL', KEYS[2], id) end
  local tdone = P .. 'tdone:' .. atopic
  local deps = P .. 'dependants:' .. id
  local n = redis.call('EXISTS', P .. 'ready:' .. atopic,
                       P .. 'tdelayed:' .. atopic, treserved,
                       P .. 'dead:' .. atopic, P .. 'twaiting:' .. atopic,
                       tdone, tdone, tdone, tdone, tdone, tdone,
                       deps, deps, deps, deps, deps, deps,
                       deps, deps, deps, deps, deps, deps)
  local has_dependants = n >= 12
  if has_dependants then n = n - 12 end
  local has_done = n >= 6
  if j[19] and j[19] > 0 then
    redis.call('ZADD', P .. 'held', string.format('%d', now + j[19]), id)
  end
  if ARGV[3] ~= '0' then
    local minute = string.format('%d', now - now % 60000000)
    if redis.call('HINCRBY', P .. 'counts_recent:' .. minute, 'd:' .. atopic,
                  1) == 1 then
      load_counts().new_count_field(minute, ARGV[3])
    end
  end
  if keep or has_done then
    local function drop(members)
      for i = 1, #members, 512 do
        local k = math.min(i + 511, #members)
        local ids = {}
        for x = i, k do ids[#ids + 1] = string.sub(members[x], 9) end
        redis.call('ZREM', tdone, unpack(members, i, k))
        redis.call('ZREM', P .. 'done', unpack(members, i, k))
        redis.call('HDEL', KEYS[2], unpack(ids))
      end
    end
    if has_done then
      local gone = redis.call('ZRANGEBYSCORE', tdone, '-inf',
                              string.format('%d', now))
      if #gone > 0 then
        drop(gone)
        if redis.call('EXISTS', tdone) == 0 then n = n - 6 end
      end
    end
    if keep then
      local order = redis.call('INCR', P .. 'seq')
      j[2], j[14], j[15], j[22], j[23] = 4, nil, order, now, ARGV[6]
      j[24], j[25] = nil, nil  -- the holder goes with the lease
      local last = j[30] and 34 or j[26] and 27 or 23
      redis.call('HSET', KEYS[2], id, cmsgpack.pack(unpack(j, 1, last)))
      local leave = string.format('%d', now + j[20])
      local m = struct.pack('>I8', order) .. id
      redis.call('ZADD', tdone, leave, m)
      redis.call('ZADD', P .. 'done', leave, m)
      local over = redis.call('ZCARD', tdone) - j[21]
      if over > 0 then
        drop(redis.call('ZRANGE', tdone, '0', string.format('%d', over - 1)))
      end
    end
  end
  if not keep and n == 0 then redis.call('SREM', P .. 'topics', atopic) end
  if has_dependants then ack_settled = load_depend().settle(id, 'met', now) end
  if batch then
    ack_settled[#ack_settled + 1] =
        load_batch().count_in_batch(batch, j[11], 'met', now)
  end
  -- note_slot_freed() of news.lua, when a limit may exist.
  if gated then
    local limit = redis.call('HGET', P .. 'limits', atopic)
    if limit then
      local cap = tonumber(string.match(limit, '^%d+:%d+:%d+:(%d+):'))
      if cap > 0 and redis.call('ZCARD', treserved) + 1 >= cap and
         redis.call('EXISTS', P .. 'ready:' .. atopic) == 1 then
        redis.call('SPUBLISH', P .. 'news', 'r' .. atopic)
      end
    end
  end
  return 'OK'
end

local acked = ack()

-- The reservation: reserve-3.lua from its due check on.
local treserved = P .. 'treserved:' .. topic
local LATENESS_BOUNDS = {10000, 100000, 1000000, 10000000, 60000000}
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
  moved = load_promote().promote_topic(topic, now_text, tonumber(ARGV[9]))
end
if #ack_settled > 0 then
  for _, t in ipairs(moved) do ack_settled[#ack_settled + 1] = t end
  moved = ack_settled
end

local out = {'OK', acked, moved, ''}
if gated and redis.call('SISMEMBER', P .. 'paused', topic) == 1 then
  return out
end
local max = tonumber(ARGV[8])
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
if take > 0 then popped = redis.call('ZPOPMIN', KEYS[4], take) end
if limit then
  local taken = #popped / 2
  if taken > 0 then
    redis.call('HSET', P .. 'limits', topic,
               string.match(limit, '^(.*:)') ..
                   string.format('%d', start + taken * interval))
  end
  if taken < max and redis.call('EXISTS', KEYS[4]) == 1 then
    if cap > 0 and reserved + taken >= cap then
      out[4] = 'released'
    else
      out[4] = string.format('%d', math.max(now, start + taken * interval -
                                                  tolerance))
    end
  end
end
if #popped == 0 then return out end
local token = tonumber(ARGV[10]) - 1
local ids = {}
for i = 1, #popped, 2 do ids[#ids + 1] = string.sub(popped[i], 21) end
local records = {}
for i = 1, #ids, 512 do
  local got = redis.call('HMGET', KEYS[2],
                         unpack(ids, i, math.min(i + 511, #ids)))
  for k = 1, #got do records[i + k - 1] = got[k] end
end
local writes = {}
local leases = {}
local results = nil  -- lib/results.lua, once a job with AFTER needs it
local first, first_text = nil, nil
local late = {}
for i, rid in ipairs(ids) do
  if records[i] then
    local j = {cmsgpack.unpack(records[i])}
    token = token + 1
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
    j[24] = ARGV[11]
    j[25] = now
    if j[17] then redis.call('ZREM', texpire, rid) end
    -- A batch's values stay (BATCH_OF, or the batch a completion job
    -- holds).
    local last = j[30] and 34 or j[29] and 29 or j[26] and 27 or 25
    local record = cmsgpack.pack(unpack(j, 1, last))
    writes[#writes + 1] = rid
    writes[#writes + 1] = record
    leases[#leases + 1] = deadline
    leases[#leases + 1] = rid
    local lease = {record, rid}
    if j[26] then
      results = results or load_results()
      results.add_dependency_results(lease, j)
    end
    out[#out + 1] = lease
  end
end
for i = 1, #writes, 512 do
  redis.call('HSET', KEYS[2], unpack(writes, i, math.min(i + 511, #writes)))
end
for i = 1, #leases, 512 do
  local k = math.min(i + 511, #leases)
  redis.call('ZADD', KEYS[3], unpack(leases, i, k))
  redis.call('ZADD', treserved, unpack(leases, i, k))
end
if ARGV[3] ~= '0' then
  local minute = string.format('%d', now - now % 60000000)
  local key = P .. 'counts_recent:' .. minute
  for bucket, n in pairs(late) do
    if redis.call('HINCRBY', key, bucket .. ':' .. topic, n) == n then
      load_counts().new_count_field(minute, ARGV[3])
    end
  end
end
if first then
  local h = tonumber(redis.call('GET', P .. 'horizon'))
  if not h or first < h or h <= now then
    redis.call('SET', P .. 'horizon', first_text)
    redis.call('SPUBLISH', P .. 'news', 'd' .. first_text)
  end
end
return out
