-- kick_job: moves one dead job to ready with attempts reset to 0.
-- requires: clock schedule
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  id
-- Reply:   {"OK"}, {"NOTFOUND"} or {"NOTDEAD", state}
local now = clock(ARGV[1], ARGV[2])
local id, jk = ARGV[3], KEYS[2]
local f = redis.call('HMGET', jk, 'topic', 'state')
if not f[1] then return {'NOTFOUND'} end
if f[2] ~= 'dead' then return {'NOTDEAD', f[2]} end
redis.call('ZREM', dead_key(f[1]), id)
redis.call('HSET', jk, 'attempts', '0')
schedule(id, jk, f[1], now, now, 1)
return {'OK'}
