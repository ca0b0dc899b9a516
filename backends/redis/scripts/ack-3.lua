-- ack: deletes the job reserved under a token.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- ARGV[2]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
--
-- The hottest script, run once per job: it requires no helpers, since Redis
-- runs a script's whole body on every call and building the helpers' closures
-- would cost more than the work. What it spells out instead (check_lease,
-- lease_off, forget and the key layout of keys.lua) must change with them.
local P, jk, id = KEYS[1], KEYS[2], ARGV[1]
local f = redis.call('HMGET', jk, 'state', 'token', 'topic')
if f[1] ~= 'reserved' or f[2] ~= ARGV[2] then return {'STALE'} end
local topic = f[3]
local treserved = P .. 'treserved:' .. topic
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', treserved, id)
redis.call('DEL', jk)
if redis.call('EXISTS', P .. 'ready:' .. topic, P .. 'tdelayed:' .. topic,
              treserved, P .. 'dead:' .. topic) == 0 then
  redis.call('SREM', P .. 'topics', topic)
end
return {'OK'}
