-- index.lua — a delayed job or a lease enters and leaves both of its
-- indexes (the global one and its topic's) together. Times are passed as
-- text (see keys.lua).
-- requires: keys

local function delay_on(id, topic, run_at, b)
  redis.call('ZADD', bucket_key(b), run_at, id)
  redis.call('ZADD', tdelayed_key(topic), run_at, id)
end

local function delay_off(id, topic, b)
  redis.call('ZREM', bucket_key(b), id)
  redis.call('ZREM', tdelayed_key(topic), id)
end

local function lease_on(id, topic, deadline)
  redis.call('ZADD', RESERVED, deadline, id)
  redis.call('ZADD', treserved_key(topic), deadline, id)
end

local function lease_off(id, topic)
  redis.call('ZREM', RESERVED, id)
  redis.call('ZREM', treserved_key(topic), id)
end
