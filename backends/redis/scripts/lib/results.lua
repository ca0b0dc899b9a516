-- results.lua — the results a reserved job's dependencies left at their ack
-- (Lease::dependency_results), read in the reservation itself: appended to
-- the job's lease entry of reserve's reply as id, result pairs, one for
-- each job its AFTER names that is kept done (job.lua); a dependency that
-- is gone or not done leaves none. reserve and ack_reserve load it only
-- for a job with AFTER.
-- requires: keys job

local function add_dependency_results(lease, j)
  local deps = list_unpack(j[AFTER])
  for i = 1, #deps, 512 do
    local got = redis.call('HMGET', JOBS,
                           unpack(deps, i, math.min(i + 511, #deps)))
    for k = 1, #got do
      if got[k] then
        local d = {cmsgpack.unpack(got[k])}
        if d[STATE] == ST_DONE then
          lease[#lease + 1] = deps[i + k - 1]
          lease[#lease + 1] = d[RESULT] or ''
        end
      end
    end
  end
end
