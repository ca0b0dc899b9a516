-- counts.lua — the per-topic counts and the set of live topics.
-- requires: keys

local function count(topic, from, to)
  local ck = counts_key(topic)
  if from then redis.call('HINCRBY', ck, from, -1) end
  if to then redis.call('HINCRBY', ck, to, 1) end
end

-- Removes a job from the store entirely (its hash and its counts).
local function forget(id, topic, from)
  redis.call('DEL', job_key(id))
  local ck = counts_key(topic)
  redis.call('HINCRBY', ck, from, -1)
  if redis.call('HINCRBY', ck, 'live', -1) <= 0 then
    redis.call('DEL', ck)
    redis.call('SREM', TOPICS, topic)
  end
end
