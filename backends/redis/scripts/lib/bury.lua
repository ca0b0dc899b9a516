-- bury.lua — moves a dead job to the topic's dead set and evicts the oldest
-- beyond `cap` (deleting their hashes, so nothing leaks).
-- requires: keys counts
local function bury(id, jk, topic, cap)
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', dead_key(topic), seq, id)
  redis.call('HSET', jk, 'state', 'dead', 'deadline', '')
  local dk = dead_key(topic)
  local over = redis.call('ZCARD', dk) - cap
  if over > 0 then
    local evicted = redis.call('ZPOPMIN', dk, over)
    for i = 1, #evicted, 2 do
      forget(evicted[i], topic, 'dead')
    end
  end
end
