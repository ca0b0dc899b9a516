-- release: ends a reservation without counting it as an attempt.
-- requires: clock lease index schedule job
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- KEYS[4]  due: "{ns}:due"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the job's id
-- ARGV[4]  token: the lease's fencing token
-- ARGV[5]  run_at: µs, caller's clock; shifted with the server's TIME
-- Reply:   {"OK"} or {"STALE"} (nothing changed)
local now, shift = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j, err = check_lease(id, ARGV[4])
if not j then return {err} end
lease_off(id, j[TOPIC])
note_slot_freed(j[TOPIC])
if (j[ATTEMPTS] or 0) > 0 then j[ATTEMPTS] = j[ATTEMPTS] - 1 end
schedule(id, j, tonumber(ARGV[5]) + shift, now)
return {'OK'}
