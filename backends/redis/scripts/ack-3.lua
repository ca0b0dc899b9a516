-- ack: deletes the job reserved under a token.
-- loads: counts
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:jobs"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua; read for a dedup window and the
--          counts)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  id
-- ARGV[5]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
--
-- The hottest script, run once per job: it requires no helpers, since Redis
-- runs a script's whole body on every call and building the helpers' closures
-- would cost more than the work; it loads counts.lua only when a count's
-- field is new in its minute. What it spells out instead (check_lease,
-- lease_off, forget, note_slot_freed of news.lua, hold_id of held.lua, count()
-- of counts.lua, the record's TOPIC, STATE, TOKEN
-- and UNIQUE_FOR of job.lua and the key layout of keys.lua) must change
-- with them; script_layout_test checks the positions below and every key
-- it spells against job.lua and keys.lua.
-- fields: TOPIC=1 STATE=2 TOKEN=15 UNIQUE_FOR=19
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
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', treserved, id)
redis.call('HDEL', KEYS[2], id)
-- held.lua's hold_clock(): the time, for a dedup window and the counts.
local now = tonumber(ARGV[1])
if ARGV[2] == '1' and (ARGV[3] ~= '0' or (j[19] and j[19] > 0)) then
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
if redis.call('EXISTS', P .. 'ready:' .. topic, P .. 'tdelayed:' .. topic,
              treserved, P .. 'dead:' .. topic) == 0 then
  redis.call('SREM', P .. 'topics', topic)
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
return {'OK'}
