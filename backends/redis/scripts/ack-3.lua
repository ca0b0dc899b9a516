-- ack: deletes the job reserved under a token.
-- requires: keys lease topics
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- ARGV[2]  token
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
-- The hottest script: it spells out lease_off() with the reserved key it
-- was given rather than pull in the index helpers.
local id, jk = ARGV[1], KEYS[2]
local topic, err = check_lease(jk, ARGV[2])
if not topic then return {err} end
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', treserved_key(topic), id)
forget(jk, topic)
return {'OK'}
