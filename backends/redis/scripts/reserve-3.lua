-- reserve: promotes the topic's due jobs (all of them, unless a limit is
-- given), then reserves up to N ready jobs of one topic in ready
-- order, each with a fresh fencing token.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:ready:<topic>"
-- KEYS[3]  "{ns}:token"   fencing token counter
-- ARGV[1]  now (µs)
-- ARGV[2]  "1" to use the server's TIME
-- ARGV[3]  topic
-- ARGV[4]  max jobs to reserve (>= 1)
-- ARGV[5]  dead cap per topic
-- ARGV[6]  most jobs to promote first (0: all that are due)
-- Reply:   {"OK", {snapshot...}, ...} one snapshot (see common.lua) per lease,
--          in reserve order; the snapshot holds the new token and deadline.
local now = clock(ARGV[1], ARGV[2])
local topic = ARGV[3]
promote_topic(topic, now, tonumber(ARGV[6]), tonumber(ARGV[5]))

local popped = redis.call('ZPOPMIN', KEYS[2], tonumber(ARGV[4]))
local out = {'OK'}
if #popped == 0 then return out end
local n = #popped / 2
local token = redis.call('INCRBY', KEYS[3], n) - n
for i = 1, #popped, 2 do
  local id = member_id(popped[i])
  local jk = job_key(id)
  local ttr = tonumber(redis.call('HGET', jk, 'ttr'))
  -- A member without a job cannot occur while every transition goes through
  -- these scripts; should one appear it is dropped, not reserved.
  if ttr then
    token = token + 1
    local deadline = now + ttr
    redis.call('HINCRBY', jk, 'attempts', 1)
    redis.call('HSET', jk, 'state', 'reserved', 'token', token,
               'deadline', deadline)
    lease_on(id, topic, deadline)
    count(topic, 'ready', 'reserved')
    table.insert(out, snapshot(id))
  end
end
return out
