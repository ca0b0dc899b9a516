-- list: up to `limit` jobs of a topic in one state, in the order they would
-- be reserved (ready), become due (delayed), expire (reserved) or died in
-- (dead). Delayed and reserved jobs of all topics share their sets, so those
-- two states are found by walking the sets in order and keeping the topic's
-- jobs: O(jobs in those sets) in the worst case; an inspection call.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:ready:<topic>" or "{ns}:dead:<topic>" (by state), or
--          "{ns}:reserved"
-- ARGV[1]  topic
-- ARGV[2]  state: "ready", "delayed", "reserved" or "dead"
-- ARGV[3]  limit
-- ARGV[4]  number of delay buckets
-- Reply:   {"OK", snapshot, ...} (see common.lua)
local topic, state, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {'OK'}
if state == 'ready' or state == 'dead' then
  local members = redis.call('ZRANGE', KEYS[2], 0, limit - 1)
  for _, m in ipairs(members) do
    local id = m
    if state == 'ready' then id = member_id(m) end
    table.insert(out, snapshot(id))
  end
  return out
end

-- Walks the sorted sets in score order, keeping jobs of `topic`.
local function collect(key, found)
  local start = 0
  local kept = 0
  while kept < limit do
    local chunk = redis.call('ZRANGE', key, start, start + 255, 'WITHSCORES')
    if #chunk == 0 then break end
    for i = 1, #chunk, 2 do
      if redis.call('HGET', job_key(chunk[i]), 'topic') == topic then
        local seq = tonumber(redis.call('HGET', job_key(chunk[i]), 'seq'))
        table.insert(found, {tonumber(chunk[i + 1]), seq, chunk[i]})
        kept = kept + 1
        if kept >= limit then break end
      end
    end
    start = start + 256
  end
end

local found = {}
if state == 'reserved' then
  collect(KEYS[2], found)
else
  for b = 0, tonumber(ARGV[4]) - 1 do collect(bucket_key(b), found) end
  table.sort(found, function(x, y)
    if x[1] ~= y[1] then return x[1] < y[1] end
    return x[2] < y[2]
  end)
end
for i = 1, math.min(limit, #found) do table.insert(out, snapshot(found[i][3])) end
return out
