-- schedule.lua — puts a job (not in any index) into ready or delayed by its
-- run_at.
-- requires: keys ready index
local function schedule(id, jk, topic, run_at, now, buckets)
  if run_at <= now then
    local f = redis.call('HMGET', jk, 'priority', 'seq')
    redis.call('ZADD', ready_key(topic), 0,
               ready_member(tonumber(f[1]), run_at, tonumber(f[2]), id))
    redis.call('HSET', jk, 'state', 'ready', 'run_at', run_at, 'deadline', '')
    return 'ready'
  end
  local b = tonumber(redis.call('HGET', jk, 'seq')) % buckets
  delay_on(id, topic, run_at, b)
  redis.call('HSET', jk, 'state', 'delayed', 'run_at', run_at, 'deadline', '',
             'bucket', b)
  return 'delayed'
end
