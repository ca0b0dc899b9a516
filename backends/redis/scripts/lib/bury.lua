-- bury.lua — moves a dead job to the topic's dead set and evicts the oldest
-- beyond `cap` (deleting their hashes, so nothing leaks; the topic keeps
-- `cap` >= 1 dead jobs, so it stays live).
-- requires: keys calls
local function bury(id, jk, topic, cap)
  local seq = redis.call('INCR', P .. 'seq')
  local dk = dead_key(topic)
  redis.call('ZADD', dk, seq, id)
  redis.call('HSET', jk, 'state', 'dead', 'deadline', '')
  local over = redis.call('ZCARD', dk) - cap
  if over > 0 then
    local evicted = redis.call('ZPOPMIN', dk, over)
    local gone = {}
    for i = 1, #evicted, 2 do table.insert(gone, job_key(evicted[i])) end
    call_many('DEL', nil, gone)
  end
end
