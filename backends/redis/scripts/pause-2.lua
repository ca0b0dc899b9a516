-- pause: pauses or resumes a topic for every process. Resuming a topic
-- that has ready jobs announces it as ready, so waiting workers look again.
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  paused: "{ns}:paused"
-- ARGV[1]  topic: the topic
-- ARGV[2]  pause: "1" to pause, "0" to resume
-- Reply:   {"OK"}
local topic = ARGV[1]
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[2], topic)
elseif redis.call('SREM', KEYS[2], topic) == 1 and
       redis.call('EXISTS', ready_key(topic)) == 1 then
  redis.call('SPUBLISH', NEWS, 'r' .. topic)
end
return {'OK'}
