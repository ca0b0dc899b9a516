-- next_due: the earliest run_at of a delayed job or deadline of a
-- reservation, across all topics. It becomes the horizon (see news.lua):
-- the caller now knows of it. The key goes when nothing is pending.
-- requires: keys
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:reserved"
-- ARGV[1]  number of delay buckets
-- Reply:   {"OK"} when nothing is pending, else {"OK", time_us}
local best = nil
local function consider(key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #head > 0 then
    local s = tonumber(head[2])
    if not best or s < best then best = s end
  end
end
for b = 0, tonumber(ARGV[1]) - 1 do consider(bucket_key(b)) end
consider(KEYS[2])
if best then
  local text = string.format('%d', best)
  redis.call('SET', HORIZON, text)
  return {'OK', text}
end
redis.call('DEL', HORIZON)
return {'OK'}
