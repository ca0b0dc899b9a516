-- release: ends a reservation without counting it as an attempt.
-- requires: clock lease index schedule
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  id
-- ARGV[4]  token
-- ARGV[5]  run_at (µs, caller's clock; shifted with the server's TIME)
-- ARGV[6]  number of delay buckets
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
local now, shift = clock(ARGV[1], ARGV[2])
local id, jk = ARGV[3], KEYS[2]
local topic, err = check_lease(jk, ARGV[4])
if not topic then return {err} end
lease_off(id, topic)
if (tonumber(redis.call('HGET', jk, 'attempts')) or 0) > 0 then
  redis.call('HINCRBY', jk, 'attempts', '-1')
end
schedule(id, jk, topic, tonumber(ARGV[5]) + shift, now,
                    tonumber(ARGV[6]))
return {'OK'}
