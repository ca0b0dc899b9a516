-- limit: sets or clears a topic's limit (rate and concurrency, see
-- src/common/limit_gate.h). Setting keeps the token bucket's state. A change
-- announces the topic as ready when it has ready jobs, so that waiting
-- workers look again.
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  limits: "{ns}:limits"
-- ARGV[1]  topic: the topic
-- ARGV[2]  limit: "rate:period:burst:concurrency" (µs) to set, "" to clear
-- Reply:   {"OK"}
local topic = ARGV[1]
if ARGV[2] == '' then
  if redis.call('HDEL', KEYS[2], topic) == 0 then return {'OK'} end
else
  local old = redis.call('HGET', KEYS[2], topic)
  local tat = old and string.match(old, ':(%-?%d*)$') or ''
  redis.call('HSET', KEYS[2], topic, ARGV[2] .. ':' .. tat)
end
if redis.call('EXISTS', ready_key(topic)) == 1 then
  redis.call('SPUBLISH', NEWS, 'r' .. topic)
end
return {'OK'}
