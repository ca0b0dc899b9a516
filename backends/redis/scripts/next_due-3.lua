-- next_due: the earliest run_at of a delayed job or deadline of a
-- reservation, across all topics. It becomes the horizon (see news.lua):
-- the caller now knows of it. The key goes when nothing is pending.
-- requires: keys index
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  reserved: "{ns}:reserved"
-- KEYS[3]  due: "{ns}:due"
-- Reply:   {"OK"} when nothing is pending, else {"OK", time_us}
local best = nil
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #head > 0 then best = tonumber(head[2]) end
-- The first topic in DUE whose score is its true earliest run_at holds the
-- earliest delayed job. A score left too early is raised (or the topic
-- removed) and the next first topic looked at: each topic at most once.
while true do
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if #first == 0 then break end
  local bound = tonumber(first[2])
  -- Every delayed job is at or after its topic's score.
  if best and bound >= best then break end
  local at = refresh_due(first[1])
  if at == bound then
    best = at
    break
  end
end
if best then
  local text = string.format('%d', best)
  redis.call('SET', HORIZON, text)
  return {'OK', text}
end
redis.call('DEL', HORIZON)
return {'OK'}
