-- batch_close: closes a batch (delayq/batch.h): no job joins it from now
-- on. When none of its jobs is pending, its completion job is released in
-- this same step (lib/batch.lua).
-- requires: clock job batch
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the batch's id, its completion job's
-- Reply:   {"OK"} (closed now or before), {"OK", settled} when it released
--          the completion job (lib/settled.lua), or {"NOBATCH", id}
local now = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local c = job_read(id)
if not c or not c[BATCH_TOTAL] then return {'NOBATCH', id} end
if c[BATCH_CLOSED] == 1 then return {'OK'} end
c[BATCH_CLOSED] = 1
return {'OK', batch_write(id, c, now)}
