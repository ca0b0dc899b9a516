-- counts.lua — what the store counts (delayq/counts.h, Backend::Counts()),
-- in the same script as the transition it counts. A count's field is
-- "<kind>:<topic>" (keys.lua). Kinds: e enqueued, d done, f failed, r
-- retried, x expired, k dead, l lapsed, and 0..5 the deliveries by lateness
-- bucket (LATENESS_BOUNDS, as kLatenessBoundsMicros of counts.h). Every
-- script that counts takes ARGV[3]: '0' counts nothing, otherwise the window
-- in seconds.
--
-- A count is one HINCRBY, into its minute's COUNT_RECENT hash. When a field
-- first appears there, the minutes before it are folded: each recent hash
-- is added to COUNT_TOTALS and to the minute's folded hash (counts_key(),
-- which expires a window later), and deleted. A minute's counts are its
-- two hashes, the totals COUNT_TOTALS plus every recent hash. A count whose
-- clock is behind a fold makes its minute's recent hash anew, and so is
-- folded by a later one: nothing is folded twice or lost.
-- requires: keys calls

local LATENESS_BOUNDS = {10000, 100000, 1000000, 10000000, 60000000}

-- A field appeared in the recent hash of `minute` (text, µs): lists the
-- minute, folds the recent minutes before it, and drops the minutes that
-- left the window (which end with this one) from COUNT_MINUTES.
local function new_count_field(minute, window)
  redis.call('ZADD', COUNT_RECENT, minute, minute)
  redis.call('ZADD', COUNT_MINUTES, minute, minute)
  local kept = tonumber(minute) - tonumber(window) * 1000000 + 60000000
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', COUNT_RECENT, '-inf',
                                '(' .. minute)) do
    local recent, folded = recent_counts_key(m), counts_key(m)
    local fields = redis.call('HGETALL', recent)
    for i = 1, #fields, 2 do
      redis.call('HINCRBY', COUNT_TOTALS, fields[i], fields[i + 1])
    end
    if #fields == 0 or tonumber(m) < kept then
      redis.call('DEL', recent)
    elseif redis.call('EXISTS', folded) == 0 then
      redis.call('RENAME', recent, folded)
      redis.call('EXPIRE', folded, window)
    else
      for i = 1, #fields, 2 do
        redis.call('HINCRBY', folded, fields[i], fields[i + 1])
      end
      redis.call('DEL', recent)
    end
    redis.call('ZREM', COUNT_RECENT, m)
  end
  redis.call('ZREMRANGEBYSCORE', COUNT_MINUTES, '-inf',
             '(' .. int_text(kept))
end

-- Adds `n` to `topic`'s count of `kind` in the minute of `now` (µs, a
-- number).
local function count(kind, topic, n, now)
  local window = ARGV[3]
  if window == '0' or n == 0 then return end
  local minute = int_text(now - now % 60000000)
  if redis.call('HINCRBY', recent_counts_key(minute), kind .. ':' .. topic,
                n) == n then
    new_count_field(minute, window)
  end
end

-- The kind of a delivery `late` µs after its job's run_at: its bucket.
local function lateness_kind(late)
  for i, bound in ipairs(LATENESS_BOUNDS) do
    if late <= bound then return tostring(i - 1) end
  end
  return tostring(#LATENESS_BOUNDS)
end
