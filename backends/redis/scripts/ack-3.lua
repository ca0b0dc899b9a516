-- ack: deletes the job reserved under a token.
-- requires: keys lease index topics
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- ARGV[2]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
local topic, err = check_lease(KEYS[2], ARGV[2])
if not topic then return {err} end
lease_off(ARGV[1], topic)
forget(KEYS[2], topic)
return {'OK'}
