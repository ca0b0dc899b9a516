-- cancel: deletes a job in any state; the jobs that wait for it are
-- settled as for a job gone unacknowledged (lib/depend.lua), and a job of
-- a batch is counted cancelled there (lib/batch.lua). A batch's completion
-- job takes its batch with it.
-- requires: keys calls ready index topics job held news unindex depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua; only for dedup windows and
--          the jobs that wait for it)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua):
--          a job that waits for it may die of it
-- ARGV[4]  id: the job's id
-- Reply:   {"OK", settled...} or {"NOTFOUND"}; settled: the jobs that
--          waited for it that it settled (lib/settled.lua)
local now = hold_clock(ARGV[1], ARGV[2])
local id = ARGV[4]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
unindex(id, j)
hold_id(id, j, now)
forget(id, j[TOPIC])
return with_settled({'OK'}, settle(id, 'gone', now, j))
