-- index.lua — a delayed job enters and leaves its topic's delayed set, and
-- a lease both of its indexes (the global one and its topic's). Times are
-- passed as text (see calls.lua).
--
-- DUE holds every topic whose delayed or expiring set is not empty, scored
-- at or before the earliest run_at or expire_at in them: a job's time
-- lowers its topic's score when it is earlier ('LT'), and nothing raises it
-- but refresh_due(), which PromoteDue() and NextDue() call for the topics
-- they look at; the topic goes with its last delayed or expiring job. A score left too early by a job that went
-- (promoted, cancelled) costs one look at the topic's set, never a missed
-- job.
-- requires: keys job

local function delay_on(id, topic, run_at)
  redis.call('ZADD', tdelayed_key(topic), run_at, id)
  redis.call('ZADD', DUE, 'LT', run_at, topic)
end

-- The topic leaves DUE with its last delayed or expiring job, so a drained
-- namespace keeps no DUE.
local function drop_due_if_idle(topic)
  if redis.call('EXISTS', tdelayed_key(topic), texpire_key(topic)) == 0 then
    redis.call('ZREM', DUE, topic)
  end
end

local function delay_off(id, topic)
  redis.call('ZREM', tdelayed_key(topic), id)
  drop_due_if_idle(topic)
end

-- A delayed or ready job `j` (job.lua) enters or leaves its topic's
-- expiring set when it expires; others are not in it.
local function expiry_on(id, j)
  local at = j[EXPIRE_AT]
  if not at then return end
  local text = string.format('%d', at)
  redis.call('ZADD', texpire_key(j[TOPIC]), text, id)
  redis.call('ZADD', DUE, 'LT', text, j[TOPIC])
end

local function expiry_off(id, j)
  if not j[EXPIRE_AT] then return end
  redis.call('ZREM', texpire_key(j[TOPIC]), id)
  drop_due_if_idle(j[TOPIC])
end

-- Sets the topic's score in DUE to its earliest run_at or expire_at, or
-- removes it when it has neither. Returns that time (a number) or nil.
local function refresh_due(topic)
  local best = nil
  for _, key in ipairs({tdelayed_key(topic), texpire_key(topic)}) do
    local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #head > 0 and (not best or tonumber(head[2]) < best) then
      best = tonumber(head[2])
    end
  end
  if not best then
    redis.call('ZREM', DUE, topic)
    return nil
  end
  redis.call('ZADD', DUE, string.format('%d', best), topic)
  return best
end

local function lease_on(id, topic, deadline)
  redis.call('ZADD', RESERVED, deadline, id)
  redis.call('ZADD', treserved_key(topic), deadline, id)
end

local function lease_off(id, topic)
  redis.call('ZREM', RESERVED, id)
  redis.call('ZREM', treserved_key(topic), id)
end
