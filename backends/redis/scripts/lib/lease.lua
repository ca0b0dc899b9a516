-- lease.lua — checks that `token` (text) is the current reservation of job
-- `id`. Returns its record (job.lua), or nil and a status word.
-- requires: calls job
local function check_lease(id, token)
  local j = job_read(id)
  if not j or j[STATE] ~= ST_RESERVED or int_text(j[TOKEN]) ~= token then
    return nil, 'STALE'
  end
  return j, nil
end
