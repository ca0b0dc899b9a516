-- counts: the store's counts (lib/counts.lua) of the minutes in a span, and
-- its totals, read at one instant.
-- Writes: nothing
-- requires: keys
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:count_minutes"
-- KEYS[3]  "{ns}:count_totals"
-- ARGV[1]  the first minute (µs, a minute's start)
-- ARGV[2]  the last minute (µs)
-- Reply:   {"OK", totals, minute, fields, minute, fields, ...}: totals and
--          each fields list as HGETALL gives them ("<kind>:<topic>", n, ...),
--          the minutes oldest first; a minute whose hash has expired is left
--          out
local out = {'OK', redis.call('HGETALL', KEYS[3])}
for _, minute in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1],
                                   ARGV[2])) do
  local fields = redis.call('HGETALL', counts_key(minute))
  if #fields > 0 then
    out[#out + 1] = minute
    out[#out + 1] = fields
  end
end
return out
