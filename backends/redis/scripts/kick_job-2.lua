-- kick_job: moves one dead job to ready with attempts reset to 0.
-- requires: clock schedule job
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the job's id
-- Reply:   {"OK"}, {"NOTFOUND"} or {"NOTDEAD", state}
local now = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
if j[STATE] ~= ST_DEAD then return {'NOTDEAD', STATE_NAMES[j[STATE]]} end
redis.call('ZREM', dead_key(j[TOPIC]), id)
j[ATTEMPTS] = 0
j[EXPIRE_AT], j[DISCARD] = nil, nil  -- a kicked job no longer expires
schedule(id, j, now, now)
return {'OK'}
