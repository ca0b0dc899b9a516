-- promote_job: runs a delayed job now (ready, run_at = now), keeping its
-- attempts: a job waiting for its retry runs its next attempt now.
-- requires: clock keys calls ready index job news schedule
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the job's id
-- Reply:   {"OK"}, {"NOTFOUND"} or {"NOTDELAYED", state}
local now = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
if j[STATE] ~= ST_DELAYED then
  return {'NOTDELAYED', STATE_NAMES[j[STATE]]}
end
delay_off(id, j[TOPIC])
expiry_off(id, j)
schedule(id, j, now, now)
return {'OK'}
