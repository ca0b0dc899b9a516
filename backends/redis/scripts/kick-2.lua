-- kick: moves up to N dead jobs of a topic (oldest death first) to ready.
-- requires: clock schedule
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:dead:<topic>"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  topic
-- ARGV[4]  max
-- Reply:   {"OK", moved}
local now = clock(ARGV[1], ARGV[2])
local topic = ARGV[3]
local popped = redis.call('ZPOPMIN', KEYS[2], tonumber(ARGV[4]))
local moved = 0
for i = 1, #popped, 2 do
  local id = popped[i]
  local jk = job_key(id)
  redis.call('HSET', jk, 'attempts', '0')
  schedule(id, jk, topic, now, now, 1)
  moved = moved + 1
end
return {'OK', moved}
