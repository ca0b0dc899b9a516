-- add: stores a batch of new jobs, all or nothing.
-- requires: clock keys ready index
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:seq"     enqueue order counter
-- KEYS[3]  "{ns}:topics"  set of live topics
-- ARGV[1]  now (µs, caller's clock)
-- ARGV[2]  "1" to use the server's TIME instead of ARGV[1]
-- ARGV[3]  number of delay buckets
-- ARGV[4..] 8 values per job: id, topic, payload, priority, max_attempts,
--          ttr (µs), backoff ("kind:base_us:max_us"), run_at (µs)
-- Reply:   {"OK"} or {"EXISTS", id} (nothing stored)
local now, shift = clock(ARGV[1], ARGV[2])
local buckets = tonumber(ARGV[3])
local n = (#ARGV - 3) / 8

local seen = {}
for i = 0, n - 1 do
  local id = ARGV[4 + i * 8]
  if seen[id] or redis.call('EXISTS', job_key(id)) == 1 then
    return {'EXISTS', id}
  end
  seen[id] = true
end

local first = redis.call('INCRBY', KEYS[2], n) - n
-- Redis turns Lua numbers into text with a slow "%.17g"; with no shift the
-- caller's text is passed through as is.
local now_text = now
if shift == 0 then now_text = ARGV[1] end
-- Counts are summed per topic and written once per topic, not per job.
local added = {}
for i = 0, n - 1 do
  local a = 4 + i * 8
  local id, topic = ARGV[a], ARGV[a + 1]
  local run_at = tonumber(ARGV[a + 7]) + shift
  local run_at_text = run_at
  if shift == 0 then run_at_text = ARGV[a + 7] end
  local seq = first + i + 1
  local state
  if run_at <= now then
    state = 'ready'
    redis.call('ZADD', ready_key(topic), 0,
               ready_member(tonumber(ARGV[a + 3]), run_at, seq, id))
  else
    state = 'delayed'
    delay_on(id, topic, run_at, seq % buckets)
    redis.call('HSET', job_key(id), 'bucket', seq % buckets)
  end
  -- deadline, last_error, token and bucket are absent until set (read as
  -- empty); fewer fields make the write cheaper.
  redis.call('HSET', job_key(id), 'topic', topic, 'payload', ARGV[a + 2],
             'state', state, 'priority', ARGV[a + 3], 'attempts', '0',
             'max_attempts', ARGV[a + 4], 'ttr', ARGV[a + 5],
             'backoff', ARGV[a + 6], 'enqueued_at', now_text,
             'run_at', run_at_text,
             'seq', seq)
  local c = added[topic]
  if not c then
    c = {ready = 0, delayed = 0}
    added[topic] = c
  end
  c[state] = c[state] + 1
end
for topic, c in pairs(added) do
  local ck = counts_key(topic)
  if c.ready > 0 then redis.call('HINCRBY', ck, 'ready', c.ready) end
  if c.delayed > 0 then redis.call('HINCRBY', ck, 'delayed', c.delayed) end
  if redis.call('HINCRBY', ck, 'live', c.ready + c.delayed) ==
      c.ready + c.delayed then
    redis.call('SADD', KEYS[3], topic)
  end
end
return {'OK'}
