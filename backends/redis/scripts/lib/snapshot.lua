-- snapshot.lua — a job as the C++ side parses it.
-- requires: keys
local SNAPSHOT_FIELDS = {'topic', 'spec', 'payload', 'state', 'attempts',
  'enqueued_at', 'run_at', 'deadline', 'last_error', 'token'}

-- {id, fields...} in the order of SNAPSHOT_FIELDS (the C++ side relies on it).
local function snapshot(id)
  local v = redis.call('HMGET', job_key(id), unpack(SNAPSHOT_FIELDS))
  table.insert(v, 1, id)
  return v
end
