-- ack: deletes the job reserved under a token, or keeps it done with its
-- result when it has a keep_for (lib/done.lua).
-- loads: counts depend batch
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua; read for a dedup window and
--          the counts)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  id: the job's id
-- ARGV[5]  token: the lease's fencing token
-- ARGV[6]  result: kept with a done job
-- Reply:   {"OK", settled...} or {"STALE"} (nothing changed); settled:
--          the jobs that waited for it, or its batch's completion job,
--          that it released (lib/settled.lua)
--
-- The hottest script, run once per job: it requires no helpers, since Redis
-- runs a script's whole body on every call and building the helpers' closures
-- would cost more than the work; it loads counts.lua only when a count's
-- field is new in its minute. What it spells out instead (check_lease,
-- lease_off, forget, note_slot_freed of news.lua, hold_id of held.lua, count()
-- of counts.lua, trim_done() and keep_done() of done.lua, the record's
-- fields of job.lua and the key layout of keys.lua) must change with them;
-- script_layout_test checks the positions below and every key it spells
-- against job.lua and keys.lua. A job without a keep_for, of a topic
-- without done jobs, costs one field check and seventeen more EXISTS
-- arguments; one that others wait for loads depend.lua to settle them,
-- one of a batch batch.lua to count it there.
-- fields: TOPIC=1 STATE=2 DEADLINE=14 TOKEN=15 UNIQUE_FOR=19
-- fields: KEEP_FOR=20 KEEP_AT_MOST=21 FINISHED_AT=22 RESULT=23
-- fields: HOLDER=24 RESERVED_AT=25 AFTER=26 ON_FAILURE=27
-- fields: BATCH_OF=29 BATCH_CLOSED=30 SEQ_NO=11
local P, id = KEYS[1], ARGV[4]
local r = redis.call('HGET', KEYS[2], id)
if not r then return {'STALE'} end
local j = {cmsgpack.unpack(r)}
-- STATE 2 is reserved.
if j[2] ~= 2 or not j[15] or string.format('%d', j[15]) ~= ARGV[5] then
  return {'STALE'}
end
local topic = j[1]
local treserved = P .. 'treserved:' .. topic
-- The batch it is counted in (BATCH_OF), once: a kept record drops it.
local batch = j[29]
j[29] = nil
-- A job with a keep_for stays (KEEP_FOR).
local keep = j[20] and j[20] > 0
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', treserved, id)
if not keep then redis.call('HDEL', KEYS[2], id) end
-- Whether the topic has other jobs left (topic_empty()), done jobs, and
-- whether jobs wait for this one (depend.lua), in one call: EXISTS counts a
-- key once per time it is named, so the dependants set, named twelve
-- times, adds 12, the done set, named six times, 6, and the five others at
-- most 5.
local tdone = P .. 'tdone:' .. topic
local deps = P .. 'dependants:' .. id
local n = redis.call('EXISTS', P .. 'ready:' .. topic,
                     P .. 'tdelayed:' .. topic, treserved,
                     P .. 'dead:' .. topic, P .. 'twaiting:' .. topic,
                     tdone, tdone, tdone, tdone, tdone, tdone,
                     deps, deps, deps, deps, deps, deps,
                     deps, deps, deps, deps, deps, deps)
local has_dependants = n >= 12
if has_dependants then n = n - 12 end
local has_done = n >= 6
-- held.lua's hold_clock(): the time, for a dedup window, the counts and
-- done jobs.
local now = tonumber(ARGV[1])
if ARGV[2] == '1' and (ARGV[3] ~= '0' or (j[19] and j[19] > 0) or keep or
                       has_done or has_dependants or batch) then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- A dedup window holds the id from now on (hold_id()).
if j[19] and j[19] > 0 then
  redis.call('ZADD', P .. 'held', string.format('%d', now + j[19]), id)
end
-- count('d', topic, 1, now) of counts.lua; a new field loads the rest.
if ARGV[3] ~= '0' then
  local minute = string.format('%d', now - now % 60000000)
  if redis.call('HINCRBY', P .. 'counts_recent:' .. minute, 'd:' .. topic,
                1) == 1 then
    load_counts().new_count_field(minute, ARGV[3])
  end
end
if keep or has_done then
  -- done.lua's drop_done(): deletes done jobs (members) of the topic.
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
  -- trim_done(): the topic's done jobs whose time is up leave.
  if has_done then
    local gone = redis.call('ZRANGEBYSCORE', tdone, '-inf',
                            string.format('%d', now))
    if #gone > 0 then
      drop(gone)
      if redis.call('EXISTS', tdone) == 0 then n = n - 6 end
    end
  end
  -- keep_done(): done since now with its result, ordered by SEQ; the
  -- topic keeps at most KEEP_AT_MOST.
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
if not keep and n == 0 then redis.call('SREM', P .. 'topics', topic) end
local reply = {'OK'}
-- The jobs that wait for this one are met (depend.lua's settle(), loaded
-- only then).
if has_dependants then
  for _, e in ipairs(load_depend().settle(id, 'met', now)) do
    reply[#reply + 1] = e
  end
end
-- Counted done in its batch (batch.lua, loaded only then).
if batch then
  reply[#reply + 1] = load_batch().count_in_batch(batch, j[11], 'met', now)
end
-- note_slot_freed() of news.lua.
local limit = redis.call('HGET', P .. 'limits', topic)
if limit then
  local cap = tonumber(string.match(limit, '^%d+:%d+:%d+:(%d+):'))
  if cap > 0 and redis.call('ZCARD', treserved) + 1 >= cap and
     redis.call('EXISTS', P .. 'ready:' .. topic) == 1 then
    redis.call('SPUBLISH', P .. 'news', 'r' .. topic)
  end
end
return reply
