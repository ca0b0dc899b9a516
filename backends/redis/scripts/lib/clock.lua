-- clock.lua — the time of this call, and the shift to add to absolute times
-- the caller computed with its own clock. `server` = '1' reads the server's
-- TIME (allowed in Redis >= 5 with effects replication, the default since
-- Redis 5).
local function clock(now_arg, server)
  local now = tonumber(now_arg)
  if server == '1' then
    local t = redis.call('TIME')
    local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return s, s - now
  end
  return now, 0
end
