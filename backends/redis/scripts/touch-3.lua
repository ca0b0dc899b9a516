-- touch: extends a reservation to now + ttr.
-- requires: clock calls lease index job news
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the job's id
-- ARGV[4]  token: the lease's fencing token
-- Reply:   {"OK", deadline_us} or {"STALE"} (nothing changed)
local now = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j, err = check_lease(id, ARGV[4])
if not j then return {err} end
local at = now + j[TTR]
local deadline = int_text(at)
j[DEADLINE] = at
job_write(id, j)
lease_on(id, j[TOPIC], deadline)
announce_due(at, now)
return {'OK', deadline}
