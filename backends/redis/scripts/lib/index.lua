-- index.lua — a delayed job enters and leaves its topic's delayed set, and
-- a lease both of its indexes (the global one and its topic's). Times are
-- passed as text (see calls.lua).
--
-- DUE holds every topic whose delayed set is not empty, scored at or before
-- the earliest run_at in that set: a job's run_at lowers its topic's score
-- when it is earlier ('LT'), and nothing raises it but refresh_due(), which
-- PromoteDue() and NextDue() call for the topics they look at; the topic
-- goes with its last delayed job. A score left too early by a job that went
-- (promoted, cancelled) costs one look at the topic's set, never a missed
-- job.
-- requires: keys

local function delay_on(id, topic, run_at)
  redis.call('ZADD', tdelayed_key(topic), run_at, id)
  redis.call('ZADD', DUE, 'LT', run_at, topic)
end

-- The topic leaves DUE with its last delayed job, so a drained namespace
-- keeps no DUE.
local function delay_off(id, topic)
  local key = tdelayed_key(topic)
  redis.call('ZREM', key, id)
  if redis.call('EXISTS', key) == 0 then redis.call('ZREM', DUE, topic) end
end

-- Sets the topic's score in DUE to its earliest run_at, or removes it when
-- it has no delayed job. Returns that run_at (a number) or nil.
local function refresh_due(topic)
  local head = redis.call('ZRANGE', tdelayed_key(topic), 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', DUE, topic)
    return nil
  end
  redis.call('ZADD', DUE, head[2], topic)
  return tonumber(head[2])
end

local function lease_on(id, topic, deadline)
  redis.call('ZADD', RESERVED, deadline, id)
  redis.call('ZADD', treserved_key(topic), deadline, id)
end

local function lease_off(id, topic)
  redis.call('ZREM', RESERVED, id)
  redis.call('ZREM', treserved_key(topic), id)
end
