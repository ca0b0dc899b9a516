-- fail: ends a reservation as failed; retry after backoff or bury.
-- requires: clock lease index bury schedule job
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:jobs"
-- KEYS[3]  "{ns}:reserved"
-- KEYS[4]  "{ns}:due"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  id
-- ARGV[4]  token
-- ARGV[5]  error text
-- ARGV[6]  retry_at (µs, caller's clock; shifted with the server's TIME)
-- Reply:   {"RETRY"}, {"DEAD"} or {"STALE"} (nothing changed)
local now, shift = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j, err = check_lease(id, ARGV[4])
if not j then return {err} end
lease_off(id, j[TOPIC])
note_slot_freed(j[TOPIC])
j[LAST_ERROR] = ARGV[5]
if (j[ATTEMPTS] or 0) >= j[MAX_ATTEMPTS] then
  bury(id, j)
  return {'DEAD'}
end
schedule(id, j, tonumber(ARGV[6]) + shift, now)
return {'RETRY'}
