-- snapshot.lua — a job as the C++ side parses it.
-- requires: keys
local SNAPSHOT_FIELDS = {'record'}

-- {id, fields...} in the order of SNAPSHOT_FIELDS (the C++ side relies on
-- it); the record is job.lua's, read whole.
local function snapshot(id)
  return {id, redis.call('HGET', JOBS, id)}
end
