-- withdraw: deletes jobs that an add of a sharded namespace stored on one
-- shard before another shard refused its part (see README.md, Sharded
-- namespaces). As cancel, in any state, but holding no id in a dedup
-- window: the batch was refused, so its ids must stay free. A job that
-- another producer made wait for one of them meanwhile is settled as for a
-- job gone unacknowledged (lib/depend.lua); a job that joined a batch
-- leaves it uncounted, as if it had never joined (lib/batch.lua).
-- requires: keys calls ready index topics job news unindex held depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua; only for the jobs that wait
--          for them)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua):
--          a job that waits for one may die of it
-- ARGV[4..] ids: job ids
-- Reply:   {"OK", withdrawn}: how many of the ids named a live job
local now = hold_clock(ARGV[1], ARGV[2])
local withdrawn = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local j = job_read(id)
  if j then
    unindex(id, j)
    forget(id, j[TOPIC])
    finish_in_batch(id, j, 'withdrawn', now)
    settle(id, 'gone', now)
    withdrawn = withdrawn + 1
  end
end
return {'OK', withdrawn}
