-- schedule_fire: enqueues a schedule's occurrences and moves its
-- done_through, in one step, if its revision is still the one the caller
-- read; so of several processes that run one schedule, one enqueues each
-- occurrence. The jobs are stored as add stores them, all or nothing.
-- requires: clock keys calls ready index job news schedule counts
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  schedule: "{ns}:schedule:<name>"
-- KEYS[3]  seq: "{ns}:seq"     enqueue order counter
-- KEYS[4]  topics: "{ns}:topics"  set of live topics
-- KEYS[5]  jobs: "{ns}:jobs"    the job records
-- KEYS[6]  due: "{ns}:due"     topics by their earliest run_at
-- ARGV[1]  now: µs, caller's clock
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  revision: the revision the caller read
-- ARGV[5]  done_through: the new done_through (µs)
-- ARGV[6..] batch: 9 values per job, as add takes them: id, topic,
--          priority, run_at (µs), spec, payload, extras, after, in_batch
--          (see add; after and in_batch are always "": a schedule's jobs
--          wait for none and join no batch)
-- Reply:   {"OK"}, {"NOTFOUND"}, {"MOVED"} (the revision moved on; nothing
--          changed) or {"EXISTS", id} (a job's id is taken; nothing changed)
local now, shift = clock(ARGV[1], ARGV[2])
local revision = redis.call('HGET', KEYS[2], 'revision')
if not revision then return {'NOTFOUND'} end
if revision ~= ARGV[4] then return {'MOVED'} end
local n = (#ARGV - 5) / 9
local function arg(i, k) return ARGV[5 + (i - 1) * 9 + k] end

-- An id is taken when it has a record or a dedup window holds it, as for
-- add (the windows that passed go first).
local any_held = redis.call('EXISTS', HELD) == 1
if any_held then
  redis.call('ZREMRANGEBYSCORE', HELD, '-inf', int_text(now))
end
local seen = {}
for i = 1, n do
  local id = arg(i, 1)
  if seen[id] or redis.call('HEXISTS', JOBS, id) == 1 or
     (any_held and redis.call('ZSCORE', HELD, id)) then
    return {'EXISTS', id}
  end
  seen[id] = true
end
if n > 0 then
  local first = redis.call('INCRBY', KEYS[3], int_text(n)) - n
  for i = 1, n do
    local id, topic = arg(i, 1), arg(i, 2)
    local run_at = tonumber(arg(i, 4)) + shift
    -- The record as add writes it, extras (expiry, dedup window) included;
    -- schedule() files it as ready or delayed, and as expiring.
    local record = cmsgpack.pack(topic, ST_DELAYED) .. arg(i, 5) ..
                   cmsgpack.pack(now, run_at, first + i, arg(i, 6))
    if arg(i, 7) ~= '' then
      local x = {cmsgpack.unpack(arg(i, 7))}
      if x[1] then x[1] = x[1] + shift end
      record = record .. cmsgpack.pack(nil, nil, nil, nil, x[1], x[2], x[3])
    end
    schedule(id, {cmsgpack.unpack(record)}, run_at, now)
    redis.call('SADD', KEYS[4], topic)
    count('e', topic, 1, now)
  end
end
redis.call('HSET', KEYS[2], 'done_through', ARGV[5], 'revision',
           int_text(tonumber(revision) + 1))
return {'OK'}
