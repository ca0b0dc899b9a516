-- check_ids: whether add could store jobs with these ids now, without
-- storing anything: for a batch of a sharded namespace that add writes
-- shard by shard (see README.md, Sharded namespaces).
-- Writes: nothing
-- requires: keys calls job held
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  held: "{ns}:held"
-- ARGV[1]  now: µs, caller's clock
-- ARGV[2]  clock_mode: (see lib/clock.lua; only for dedup windows)
-- ARGV[3..] ids: job ids
-- Reply:   {"OK"} or {"EXISTS", id}: the first id that a live job has or a
--          dedup window holds, as add would refuse it
local now = hold_clock(ARGV[1], ARGV[2])
local n = #ARGV - 2
local any_held = redis.call('EXISTS', KEYS[3]) == 1
for i = 1, n, 512 do
  local j = math.min(i + 511, n)
  local got = redis.call('HMGET', KEYS[2], unpack(ARGV, i + 2, j + 2))
  for k = i, j do
    local id = ARGV[k + 2]
    if got[k - i + 1] then return {'EXISTS', id} end
    if any_held then
      local free_at = redis.call('ZSCORE', KEYS[3], id)
      if free_at and tonumber(free_at) > now then return {'EXISTS', id} end
    end
  end
end
return {'OK'}
