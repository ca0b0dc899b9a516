-- clock.lua — the time of this call, the shift to add to absolute times the
-- caller computed with its own clock, and the time as text (see keys.lua).
-- `server` = '1' reads the server's TIME (allowed in Redis >= 5 with
-- effects replication, the default since Redis 5).
-- requires: calls
local function clock(now_arg, server)
  if server == '1' then
    local t = redis.call('TIME')
    local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
    return s, s - tonumber(now_arg), int_text(s)
  end
  return tonumber(now_arg), 0, now_arg
end
