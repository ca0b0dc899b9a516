-- bury.lua — moves a dead job to the topic's dead set, where it stays until
-- it is retried or cancelled: a job leaves the store only by ack or cancel.
-- `j` is the job's record (job.lua), out of every other index; it is
-- written back, dead since `now` (a number).
-- requires: keys job
local function bury(id, j, now)
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('ZADD', dead_key(j[TOPIC]), seq, id)
  j[STATE] = ST_DEAD
  j[DEADLINE] = nil
  j[FINISHED_AT] = now
  job_write(id, j)
end
