-- bury.lua — moves a dead job to the topic's dead set, where it stays until
-- it is retried or cancelled: a job leaves the store only by ack or cancel.
-- requires: keys
local function bury(id, jk, topic)
  local seq = redis.call('INCR', P .. 'seq')
  local dk = dead_key(topic)
  redis.call('ZADD', dk, seq, id)
  redis.call('HSET', jk, 'state', 'dead', 'deadline', '')
end
