-- reserve: promotes the topic's due jobs (up to a limit, earliest first),
-- then reserves up to N ready jobs of one topic in ready
-- order, each with a fresh fencing token.
-- loads: promote
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:ready:<topic>"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua)
-- ARGV[3]  topic
-- ARGV[4]  max jobs to reserve (>= 1)
-- ARGV[5]  most jobs to promote first (>= 1)
-- ARGV[6]  the first fencing token, drawn at random by the caller in
--          [1, 2^52); the leases get it and the integers after it
-- Reply:   {"OK", moved, lease...}: moved is the list of jobs the
--          promotion step moved, {kind, id, topic, attempts} each as in
--          promote_due; then one entry per lease, in reserve order:
--          {spec, payload, attempts, enqueued_at, run_at, last_error,
--          deadline, token, id} (spec: see lib/spec.lua). The topic
--          and the state ("reserved") are the caller's to fill in, so they
--          are neither read nor sent.
--
-- Run once per job like ack, so it requires no helpers either: building
-- their closures on every call cost more than the reservation itself. It
-- spells out instead clock(), int_text(), member_id() (READY_HEADER),
-- spec_ttr(), announce_due() of news.lua and the key layout of keys.lua, and
-- must change with them. The promotion, needed only when something is due,
-- loads its helpers then (and announces the ready edge it may make).
local P, topic = KEYS[1], ARGV[3]
local now, now_text = tonumber(ARGV[1]), ARGV[1]
if ARGV[2] ~= '0' then
  local t = redis.call('TIME')
  local s = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if ARGV[2] == '1' then
    now, now_text = s, string.format('%d', s)
  else
    local ahead, behind = string.match(ARGV[2], '^(%d+):(%d+)$')
    local skew = now - s
    if skew > tonumber(ahead) or -skew > tonumber(behind) then
      return redis.error_reply('CLOCK_SKEW ' .. string.format('%d', skew))
    end
  end
end
local treserved = P .. 'treserved:' .. topic
-- Most calls find nothing due: two one-entry range queries tell, and the
-- promotion proper (which reads scores and merges the sets) runs only when
-- one of them found something.
local moved = {}
if #redis.call('ZRANGEBYSCORE', P .. 'tdelayed:' .. topic, '-inf', now_text,
               'LIMIT', '0', '1') > 0 or
   #redis.call('ZRANGEBYSCORE', treserved, '-inf', now_text,
               'LIMIT', '0', '1') > 0 then
  moved = load_promote().promote_topic(topic, now_text, tonumber(ARGV[5]))
end

local popped = redis.call('ZPOPMIN', KEYS[2], ARGV[4])
local out = {'OK', moved}
if #popped == 0 then return out end
-- Tokens are random, not a counter kept here: a counter starts again after
-- Redis loses it (FLUSHALL, a restart from an older snapshot, a failover to a
-- replica that lagged) and would hand a stale worker's token to the next
-- attempt. Redis's own math.random cannot serve: it starts from the same
-- seed on every server start. Below 2^53, every token is exact in Lua.
local token = tonumber(ARGV[6]) - 1
-- Both lease indexes get one ZADD for the whole batch.
local leases = {}
local first, first_text = nil, nil  -- the earliest new deadline
for i = 1, #popped, 2 do
  local id = string.sub(popped[i], 21)
  local jk = P .. 'job:' .. id
  local v = redis.call('HMGET', jk, 'spec', 'payload', 'attempts',
                       'enqueued_at', 'run_at', 'last_error')
  -- A member without a job cannot occur while every transition goes through
  -- these scripts; should one appear it is dropped, not reserved.
  if v[1] then
    token = token + 1
    -- ttr from now, or from run_at when the caller's clock is behind the
    -- one that found the job due.
    local ttr = tonumber(string.match(v[1], '^-?%d+:%d+:(%d+):'))
    local at = math.max(now, tonumber(v[5])) + ttr
    local deadline = string.format('%d', at)
    if not first or at < first then first, first_text = at, deadline end
    local attempts = string.format('%d', (tonumber(v[3]) or 0) + 1)
    local token_text = string.format('%d', token)
    redis.call('HSET', jk, 'state', 'reserved', 'attempts', attempts,
               'token', token_text, 'deadline', deadline)
    leases[#leases + 1] = deadline
    leases[#leases + 1] = id
    v[3] = attempts
    v[7] = deadline
    v[8] = token_text
    v[9] = id
    out[#out + 1] = v
  end
end
-- At most 2 * 256 arguments per ZADD, so unpack() never spreads more values
-- than Lua's stack allows.
for i = 1, #leases, 512 do
  local j = math.min(i + 511, #leases)
  redis.call('ZADD', P .. 'reserved', unpack(leases, i, j))
  redis.call('ZADD', treserved, unpack(leases, i, j))
end
-- announce_due(first, now) of news.lua: one GET per call, and most calls
-- find a horizon at or before their deadlines.
if first then
  local h = tonumber(redis.call('GET', P .. 'horizon'))
  if not h or first < h or h <= now then
    redis.call('SET', P .. 'horizon', first_text)
    redis.call('SPUBLISH', P .. 'news', 'd' .. first_text)
  end
end
return out
