-- lease.lua — checks that `token` is the current reservation of the job
-- whose hash is `jk`. Returns its topic, or nil and a status word.
local function check_lease(jk, token)
  local f = redis.call('HMGET', jk, 'state', 'token', 'topic')
  if f[1] ~= 'reserved' or f[2] ~= token then return nil, 'STALE' end
  return f[3], nil
end
