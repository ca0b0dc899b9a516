-- purge_dead: deletes up to `max` dead jobs of a topic, oldest death first,
-- each as cancel deletes it (its id held for its dedup window, the jobs
-- that wait for it settled, lib/depend.lua).
-- requires: keys calls topics job held news depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  dead: "{ns}:dead:<topic>"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua; only for dedup windows)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua):
--          a job that waits for one may die of it
-- ARGV[4]  topic: the topic
-- ARGV[5]  max: most jobs to delete (>= 1)
-- Reply:   {"OK", purged, settled...}; settled: the jobs that waited for
--          them that their departure settled (lib/settled.lua)
local now = hold_clock(ARGV[1], ARGV[2])
local topic = ARGV[4]
local ids = redis.call('ZRANGE', KEYS[2], '0', int_text(tonumber(ARGV[5]) - 1))
local reply = {'OK', #ids}
for _, id in ipairs(ids) do
  local j = job_read(id)
  redis.call('ZREM', KEYS[2], id)
  if j then
    hold_id(id, j, now)
    forget(id, topic)
    with_settled(reply, settle(id, 'gone', now, j))
  end
end
return reply
