-- schedule.lua — puts a job (not in any index) into ready or delayed by its
-- run_at (and, when it expires, into its topic's expiring set), writes its
-- record `j` (job.lua) and announces it (see news.lua).
-- `run_at` and `now` are numbers. Returns the new state's name.
-- requires: keys calls ready index job news
local function schedule(id, j, run_at, now)
  local topic = j[TOPIC]
  j[RUN_AT] = run_at
  j[DEADLINE] = nil
  if run_at <= now then
    note_ready(topic)
    redis.call('ZADD', ready_key(topic), '0',
               ready_member(j[PRIORITY], run_at, j[SEQ_NO], id))
    j[STATE] = ST_READY
    job_write(id, j)
    expiry_on(id, j)
    if j[EXPIRE_AT] then announce_due(j[EXPIRE_AT], now) end
    return 'ready'
  end
  delay_on(id, topic, int_text(run_at))
  j[STATE] = ST_DELAYED
  job_write(id, j)
  expiry_on(id, j)
  announce_due(math.min(run_at, j[EXPIRE_AT] or run_at), now)
  return 'delayed'
end
