-- held.lua — dedup windows: the id of a job with UNIQUE_FOR (job.lua) that
-- leaves the store (ack, cancel, a discarding lapse) stays taken until
-- now + UNIQUE_FOR, as a member of HELD scored by that time. Add refuses a
-- held id and drops the windows that passed; nothing else reads them.
-- requires: keys calls job

-- The time a window starts at, for a call that takes `now_arg` and clock
-- `mode` (clock.lua) but does not otherwise need the time: the server's in
-- mode '1', else the caller's, unchecked (the skew check guards firing
-- jobs early, not this). ack spells it out.
local function hold_clock(now_arg, mode)
  if mode ~= '1' then return tonumber(now_arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Holds the id of job `j`, leaving at `now` (a number), for its window.
local function hold_id(id, j, now)
  if j[UNIQUE_FOR] and j[UNIQUE_FOR] > 0 then
    redis.call('ZADD', HELD, int_text(now + j[UNIQUE_FOR]), id)
  end
end
