-- ack: deletes the job reserved under a token.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- ARGV[2]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
local topic, err = check_lease(KEYS[2], ARGV[2])
if not topic then return {err} end
redis.call('ZREM', KEYS[3], ARGV[1])
forget(ARGV[1], topic, 'reserved')
return {'OK'}
