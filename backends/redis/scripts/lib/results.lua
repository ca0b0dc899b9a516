-- results.lua — the results a reserved job's dependencies left at their ack
-- (Lease::dependency_results), read in the reservation itself: appended to
-- the job's lease entry of reserve's reply as id, result pairs, one for
-- each job its AFTER names that is kept done (job.lua); a dependency that
-- is gone or not done leaves none. reserve and ack_reserve load it only
-- for a job with AFTER.
-- requires: keys job

local function add_dependency_results(lease, j)
  local deps = unpack_list(j[AFTER])
  for i = 1, #deps, 512 do
    local last = math.min(i + 511, #deps)
    local got = redis.call('HMGET', JOBS, unpack(deps, i, last))
    for k = i, last do
      local record = got[k - i + 1]
      local d = record and {cmsgpack.unpack(record)}
      if d and d[STATE] == ST_DONE then
        lease[#lease + 1] = deps[k]
        lease[#lease + 1] = d[RESULT] or ''
      end
    end
  end
end
