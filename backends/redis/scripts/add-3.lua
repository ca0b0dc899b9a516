-- add: stores a batch of new jobs, all or nothing.
-- requires: clock keys calls ready news
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:seq"     enqueue order counter
-- KEYS[3]  "{ns}:topics"  set of live topics
-- ARGV[1]  now (µs, caller's clock)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  number of delay buckets
-- ARGV[4..] 6 values per job: id, topic, priority, run_at (µs), spec (see
--          lib/spec.lua; it holds the priority too), payload
-- Reply:   {"OK"} or {"EXISTS", id} (nothing stored): id is the first job
--          of the batch whose id is taken or repeats an earlier one
local now, shift, now_text = clock(ARGV[1], ARGV[2])
local buckets = tonumber(ARGV[3])
local n = (#ARGV - 3) / 6

-- One EXISTS for the whole batch; the slow search for the culprit runs
-- only when it finds one.
local seen = {}
local repeated = nil
local keys = {}
for i = 1, n do
  local id = ARGV[4 + (i - 1) * 6]
  keys[i] = job_key(id)
  if seen[id] and not repeated then repeated = i end
  seen[id] = true
end
local taken = false
for i = 1, n, 512 do
  if redis.call('EXISTS', unpack(keys, i, math.min(i + 511, n))) > 0 then
    taken = true
    break
  end
end
if taken then
  for i = 1, repeated or n do
    if redis.call('EXISTS', keys[i]) == 1 then
      return {'EXISTS', ARGV[4 + (i - 1) * 6]}
    end
  end
end
if repeated then return {'EXISTS', ARGV[4 + (repeated - 1) * 6]} end

local first = redis.call('INCRBY', KEYS[2], int_text(n)) - n
-- Index entries are gathered per key and written with one call per key.
local adds = {}
local function add_to(key, score, member)
  local a = adds[key]
  if not a then
    a = {}
    adds[key] = a
  end
  a[#a + 1] = score
  a[#a + 1] = member
end
local topics, ready_keys = {}, {}
-- The earliest run_at of the batch's delayed jobs: one due announcement per
-- call at most.
local first_due = nil
for i = 1, n do
  local a = 4 + (i - 1) * 6
  local id, topic = ARGV[a], ARGV[a + 1]
  local run_at = tonumber(ARGV[a + 3]) + shift
  -- With no shift the caller's text is passed through (see keys.lua).
  local run_at_text = ARGV[a + 3]
  if shift ~= 0 then run_at_text = int_text(run_at) end
  local seq = first + i
  local seq_text = int_text(seq)
  -- attempts, deadline, last_error and token are absent until the first
  -- reservation sets them (read as empty, attempts as 0); fewer fields make
  -- the write cheaper.
  local rk = ready_keys[topic]
  if not rk then
    rk = ready_key(topic)
    ready_keys[topic] = rk
    topics[#topics + 1] = topic
  end
  if run_at <= now then
    note_ready(topic)
    add_to(rk, '0', ready_member(tonumber(ARGV[a + 2]), run_at, seq, id))
    redis.call('HSET', keys[i], 'topic', topic, 'spec', ARGV[a + 4],
               'payload', ARGV[a + 5], 'state', 'ready',
               'enqueued_at', now_text, 'run_at', run_at_text, 'seq', seq_text)
  else
    local b = int_text(seq % buckets)
    if not first_due or run_at < first_due then first_due = run_at end
    add_to(bucket_key(b), run_at_text, id)
    add_to(tdelayed_key(topic), run_at_text, id)
    redis.call('HSET', keys[i], 'topic', topic, 'spec', ARGV[a + 4],
               'payload', ARGV[a + 5], 'state', 'delayed',
               'enqueued_at', now_text, 'run_at', run_at_text, 'seq', seq_text,
               'bucket', b)
  end
end
for key, a in pairs(adds) do call_many('ZADD', key, a) end
call_many('SADD', KEYS[3], topics)
if first_due then announce_due(first_due, now) end
return {'OK'}
