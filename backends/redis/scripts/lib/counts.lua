-- counts.lua — what the store counts (delayq/counts.h, Backend::Counts()),
-- in the same script as the transition it counts. A count's field is
-- "<kind>:<topic>", in its minute's hash and in COUNT_TOTALS (keys.lua).
-- Kinds: e enqueued, d done, f failed, r retried, x expired, k dead,
-- l lapsed, and 0..5 the deliveries by lateness bucket (LATENESS_BOUNDS, as
-- kLatenessBoundsMicros of counts.h). Every script that counts takes
-- ARGV[3]: '0' counts nothing, otherwise the window in seconds.
-- requires: keys calls

local LATENESS_BOUNDS = {10000, 100000, 1000000, 10000000, 60000000}

-- Adds `n` to `topic`'s count of `kind` in the minute of `now` (µs, a
-- number). When a field first appears in a minute's hash, the hash is made
-- to expire a window later, and the minute is listed in COUNT_MINUTES,
-- whose minutes that left the window (the window's minutes end with this
-- one) go then.
local function count(kind, topic, n, now)
  local window = ARGV[3]
  if window == '0' or n == 0 then return end
  local field = kind .. ':' .. topic
  local minute = int_text(now - now % 60000000)
  local key = counts_key(minute)
  if redis.call('HINCRBY', key, field, n) == n then
    redis.call('EXPIRE', key, window)
    redis.call('ZADD', COUNT_MINUTES, minute, minute)
    redis.call('ZREMRANGEBYSCORE', COUNT_MINUTES, '-inf',
               '(' .. int_text(minute - tonumber(window) * 1000000 + 60000000))
  end
  redis.call('HINCRBY', COUNT_TOTALS, field, n)
end

-- The kind of a delivery `late` µs after its job's run_at: its bucket.
local function lateness_kind(late)
  for i, bound in ipairs(LATENESS_BOUNDS) do
    if late <= bound then return tostring(i - 1) end
  end
  return tostring(#LATENESS_BOUNDS)
end
