-- fail: ends a reservation as failed; retry after backoff or bury (and
-- settle the jobs that wait for it, lib/depend.lua, and count it dead in
-- its batch, lib/batch.lua).
-- requires: clock lease index bury schedule job counts depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- KEYS[4]  due: "{ns}:due"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  id: the job's id
-- ARGV[5]  token: the lease's fencing token
-- ARGV[6]  error: error text
-- ARGV[7]  retry_at: µs, caller's clock; shifted with the server's TIME
-- Reply:   {"RETRY"}, {"DEAD", settled...} or {"STALE"} (nothing changed);
--          settled: the jobs that waited for it that its death settled
--          (lib/settled.lua)
local now, shift = clock(ARGV[1], ARGV[2])
local id = ARGV[4]
local j, err = check_lease(id, ARGV[5])
if not j then return {err} end
local topic = j[TOPIC]
lease_off(id, topic)
note_slot_freed(topic)
j[LAST_ERROR] = ARGV[6]
count('f', topic, 1, now)
if (j[ATTEMPTS] or 0) >= j[MAX_ATTEMPTS] then
  bury(id, j, now)
  count('k', topic, 1, now)
  return with_settled({'DEAD'}, settle(id, 'failed', now, j))
end
count('r', topic, 1, now)
schedule(id, j, tonumber(ARGV[7]) + shift, now)
return {'RETRY'}
