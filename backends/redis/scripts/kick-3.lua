-- kick: moves up to N dead jobs of a topic (oldest death first) to ready.
-- requires: clock schedule job
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  dead: "{ns}:dead:<topic>"
-- KEYS[3]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  topic: the topic
-- ARGV[4]  max: most jobs to move
-- Reply:   {"OK", id...}: the ids moved, oldest death first
local now = clock(ARGV[1], ARGV[2])
local popped = redis.call('ZPOPMIN', KEYS[2], tonumber(ARGV[4]))
local reply = {'OK'}
for i = 1, #popped, 2 do
  local id = popped[i]
  local j = job_read(id)
  -- A dead entry without a record cannot occur while every transition goes
  -- through these scripts; should one appear it is dropped.
  if j then
    j[ATTEMPTS] = 0
    j[EXPIRE_AT], j[DISCARD] = nil, nil  -- a kicked job no longer expires
    schedule(id, j, now, now)
    reply[#reply + 1] = id
  end
end
return reply
