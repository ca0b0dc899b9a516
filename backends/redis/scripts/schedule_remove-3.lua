-- schedule_remove: deletes a schedule. The jobs it enqueued stay.
-- Announced to subscribers ("s<name>", see news.lua).
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  schedules: "{ns}:schedules"
-- KEYS[3]  schedule: "{ns}:schedule:<name>"
-- ARGV[1]  name: the schedule's name
-- Reply:   {"OK"} or {"NOTFOUND"}
if redis.call('DEL', KEYS[3]) == 0 then return {'NOTFOUND'} end
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SPUBLISH', NEWS, 's' .. ARGV[1])
return {'OK'}
