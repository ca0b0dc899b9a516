-- schedule.lua — puts a job (not in any index) into ready or delayed by its
-- run_at, and announces it (see news.lua). `run_at` and `now` are numbers.
-- Returns the new state.
-- requires: keys calls ready index spec news
local function schedule(id, jk, topic, run_at, now, buckets)
  local run_at_text = int_text(run_at)
  if run_at <= now then
    local f = redis.call('HMGET', jk, 'spec', 'seq')
    note_ready(topic)
    redis.call('ZADD', ready_key(topic), '0',
               ready_member(spec_priority(f[1]), run_at, tonumber(f[2]), id))
    redis.call('HSET', jk, 'state', 'ready', 'run_at', run_at_text,
               'deadline', '')
    return 'ready'
  end
  local b = int_text(tonumber(redis.call('HGET', jk, 'seq')) % buckets)
  delay_on(id, topic, run_at_text, b)
  redis.call('HSET', jk, 'state', 'delayed', 'run_at', run_at_text,
             'deadline', '', 'bucket', b)
  announce_due(run_at, now)
  return 'delayed'
end
