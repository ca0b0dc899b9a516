-- fail: ends a reservation as failed; retry after backoff or bury.
-- requires: clock lease index bury schedule spec
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  id
-- ARGV[4]  token
-- ARGV[5]  error text
-- ARGV[6]  retry_at (µs, caller's clock; shifted with the server's TIME)
-- ARGV[7]  number of delay buckets
-- Reply:   {"RETRY"}, {"DEAD"} or {"STALE"} (nothing changed)
local now, shift = clock(ARGV[1], ARGV[2])
local id, jk = ARGV[3], KEYS[2]
local topic, err = check_lease(jk, ARGV[4])
if not topic then return {err} end
lease_off(id, topic)
redis.call('HSET', jk, 'last_error', ARGV[5])
local f = redis.call('HMGET', jk, 'attempts', 'spec')
if (tonumber(f[1]) or 0) >= spec_max_attempts(f[2]) then
  bury(id, jk, topic)
  return {'DEAD'}
end
schedule(id, jk, topic, tonumber(ARGV[6]) + shift, now, tonumber(ARGV[7]))
return {'RETRY'}
