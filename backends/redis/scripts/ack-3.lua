-- ack: deletes the job reserved under a token.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:jobs"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- ARGV[2]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
--
-- The hottest script, run once per job: it requires no helpers, since Redis
-- runs a script's whole body on every call and building the helpers' closures
-- would cost more than the work. What it spells out instead (check_lease,
-- lease_off, forget, the record's TOPIC, STATE and TOKEN of job.lua and the
-- key layout of keys.lua) must change with them.
local P, id = KEYS[1], ARGV[1]
local r = redis.call('HGET', KEYS[2], id)
if not r then return {'STALE'} end
local j = {cmsgpack.unpack(r)}
-- STATE 2 is reserved.
if j[2] ~= 2 or not j[15] or string.format('%d', j[15]) ~= ARGV[2] then
  return {'STALE'}
end
local topic = j[1]
local treserved = P .. 'treserved:' .. topic
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', treserved, id)
redis.call('HDEL', KEYS[2], id)
if redis.call('EXISTS', P .. 'ready:' .. topic, P .. 'tdelayed:' .. topic,
              treserved, P .. 'dead:' .. topic) == 0 then
  redis.call('SREM', P .. 'topics', topic)
end
return {'OK'}
