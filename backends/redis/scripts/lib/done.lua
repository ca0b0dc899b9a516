-- done.lua — done jobs: acknowledged jobs with a KEEP_FOR (job.lua), kept
-- with their RESULT until FINISHED_AT + KEEP_FOR. Each is in its topic's
-- done set and in DONE (keys.lua), both scored by the time it leaves, as
-- done_member(): the order it was acknowledged in (the record's TOKEN while
-- done; 8 bytes big-endian, so jobs leaving at the same time leave in it),
-- then the id. A done job leaves at the first ack of its topic or
-- promote_due at or after its time; when an ack keeps one, its topic keeps
-- at most its KEEP_AT_MOST. ack spells out keep_done() and trim_done().
-- requires: keys calls job topics

local DONE_HEADER = 8
local function done_member(order, id) return struct.pack('>I8', order) .. id end
local function done_id(member) return string.sub(member, DONE_HEADER + 1) end

-- Takes the done jobs `members` of `topic` out of both sets.
local function done_off(topic, members)
  call_many('ZREM', tdone_key(topic), members)
  call_many('ZREM', DONE, members)
end

-- Deletes the done jobs `members` of `topic` from the store.
local function drop_done(topic, members)
  if #members == 0 then return end
  local ids = {}
  for i, m in ipairs(members) do ids[i] = done_id(m) end
  done_off(topic, members)
  call_many('HDEL', JOBS, ids)
end

-- Lets `topic`'s done jobs whose time is up at `now` (text) leave, then,
-- with `keep_at_most`, the ones leaving soonest while it keeps more.
local function trim_done(topic, now, keep_at_most)
  local key = tdone_key(topic)
  drop_done(topic, redis.call('ZRANGEBYSCORE', key, '-inf', now))
  if keep_at_most then
    local over = redis.call('ZCARD', key) - keep_at_most
    if over > 0 then
      drop_done(topic, redis.call('ZRANGE', key, '0', int_text(over - 1)))
    end
  end
end

-- Keeps job `j`, out of every other index, done since `now` (a number)
-- with `result`, and bounds its topic by its KEEP_AT_MOST.
local function keep_done(id, j, result, now)
  local order = redis.call('INCR', SEQ)
  j[STATE], j[DEADLINE], j[TOKEN] = ST_DONE, nil, order
  j[FINISHED_AT], j[RESULT] = now, result
  job_write(id, j)
  local leave = int_text(now + j[KEEP_FOR])
  local m = done_member(order, id)
  redis.call('ZADD', tdone_key(j[TOPIC]), leave, m)
  redis.call('ZADD', DONE, leave, m)
  local over = redis.call('ZCARD', tdone_key(j[TOPIC])) - j[KEEP_AT_MOST]
  if over > 0 then
    drop_done(j[TOPIC], redis.call('ZRANGE', tdone_key(j[TOPIC]), '0',
                                   int_text(over - 1)))
  end
end

-- Lets up to `limit` done jobs of any topic whose time is up at `now`
-- (text) leave, all of them when limit <= 0. Returns 1 when more may be
-- leaving, else 0. A member of DONE that names no done job (which no script
-- leaves behind) is dropped.
local function drop_leaving(now, limit)
  local members
  if limit > 0 then
    members = redis.call('ZRANGEBYSCORE', DONE, '-inf', now, 'LIMIT', '0',
                         int_text(limit + 1))
  else
    members = redis.call('ZRANGEBYSCORE', DONE, '-inf', now)
  end
  if #members == 0 then return 0 end
  local more = 0
  if limit > 0 and #members > limit then
    more = 1
    members[#members] = nil
  end
  local ids = {}
  for i, m in ipairs(members) do ids[i] = done_id(m) end
  local records = {}
  for i = 1, #ids, 512 do
    local got = redis.call('HMGET', JOBS, unpack(ids, i, math.min(i + 511, #ids)))
    for k = 1, #got do records[i + k - 1] = got[k] end
  end
  local by_topic, topics, strays = {}, {}, {}
  for i, m in ipairs(members) do
    local j = records[i] and {cmsgpack.unpack(records[i])}
    if j and j[STATE] == ST_DONE and done_member(j[TOKEN], ids[i]) == m then
      local t = by_topic[j[TOPIC]]
      if not t then
        t = {}
        by_topic[j[TOPIC]] = t
        topics[#topics + 1] = j[TOPIC]
      end
      t[#t + 1] = m
    else
      strays[#strays + 1] = m
    end
  end
  call_many('ZREM', DONE, strays)
  for _, topic in ipairs(topics) do
    drop_done(topic, by_topic[topic])
    if topic_empty(topic) then redis.call('SREM', TOPICS, topic) end
  end
  return more
end
