-- touch: extends a reservation to now + ttr.
-- requires: clock calls lease index spec news
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  id
-- ARGV[4]  token
-- Reply:   {"OK", deadline_us} or {"STALE"} (nothing changed)
local now = clock(ARGV[1], ARGV[2])
local jk = KEYS[2]
local topic, err = check_lease(jk, ARGV[4])
if not topic then return {err} end
local at = now + spec_ttr(redis.call('HGET', jk, 'spec'))
local deadline = int_text(at)
redis.call('HSET', jk, 'deadline', deadline)
lease_on(ARGV[3], topic, deadline)
announce_due(at, now)
return {'OK', deadline}
