-- clock.lua — the time of this call, the shift to add to absolute times the
-- caller computed with its own clock, and the time as text (see keys.lua).
-- `mode` (every script's ARGV[2]):
--   '1'              the server's TIME (allowed in Redis >= 5 with effects
--                    replication, the default since Redis 5);
--   'AHEAD:BEHIND'   the caller's `now`, refused when it is ahead of the
--                    server's TIME by more than AHEAD µs or behind it by
--                    more than BEHIND µs (a call's own latency makes it look
--                    behind, never ahead): a host whose clock runs ahead
--                    would fire other hosts' jobs early and end their leases;
--   '0'              the caller's `now`, unchecked (a simulated clock).
-- A refused call raises "CLOCK_SKEW <caller minus server, µs>" before it
-- changes anything.
-- requires: calls
local function clock(now_arg, mode)
  if mode == '0' then return tonumber(now_arg), 0, now_arg end
  local t = redis.call('TIME')
  local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local caller = tonumber(now_arg)
  if mode == '1' then return s, s - caller, int_text(s) end
  local ahead, behind = string.match(mode, '^(%d+):(%d+)$')
  local skew = caller - s
  if skew > tonumber(ahead) or -skew > tonumber(behind) then
    error({err = 'CLOCK_SKEW ' .. int_text(skew)})
  end
  return caller, 0, now_arg
end
