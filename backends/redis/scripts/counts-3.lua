-- counts: the store's counts (lib/counts.lua) of the minutes in a span, and
-- its totals, read at one instant.
-- Writes: nothing
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  count_minutes: "{ns}:count_minutes"
-- KEYS[3]  count_totals: "{ns}:count_totals"
-- ARGV[1]  first_minute: the first minute (µs, a minute's start)
-- ARGV[2]  last_minute: the last minute (µs)
-- Reply:   {"OK", totals, minute, fields, minute, fields, ...}: totals and
--          each fields list as HGETALL gives them ("<kind>:<topic>", n, ...),
--          where a field may come more than once and its counts add up; the
--          minutes oldest first; a minute whose hashes have expired is left
--          out

-- HGETALL of `key` appended to `out`.
local function add_fields(out, key)
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields do out[#out + 1] = fields[i] end
end

-- The totals: the folded ones, and every minute not folded yet.
local totals = redis.call('HGETALL', KEYS[3])
for _, minute in ipairs(redis.call('ZRANGE', COUNT_RECENT, 0, -1)) do
  add_fields(totals, recent_counts_key(minute))
end
local out = {'OK', totals}
for _, minute in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1],
                                   ARGV[2])) do
  local fields = redis.call('HGETALL', counts_key(minute))
  add_fields(fields, recent_counts_key(minute))
  if #fields > 0 then
    out[#out + 1] = minute
    out[#out + 1] = fields
  end
end
return out
