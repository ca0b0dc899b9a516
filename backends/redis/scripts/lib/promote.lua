-- promote.lua — moves due jobs: delayed jobs whose run_at came, leases whose
-- deadline passed.
-- requires: keys calls ready index bury spec news

-- Makes one due job ready again: a delayed job whose run_at came, or a
-- reservation whose deadline passed. `from` is the set the id was found in;
-- an entry there that names no such job (which no script leaves behind) is
-- dropped. Returns a transition {kind, id, topic, attempts}, or nil.
local function promote_delayed(id, from)
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'topic', 'spec', 'run_at', 'seq',
                       'attempts', 'state', 'bucket')
  if not f[1] or f[6] ~= 'delayed' then
    redis.call('ZREM', from, id)
    return nil
  end
  delay_off(id, f[1], f[7])
  local run_at = tonumber(f[3])
  note_ready(f[1])
  redis.call('ZADD', ready_key(f[1]), '0',
             ready_member(spec_priority(f[2]), run_at, tonumber(f[4]), id))
  redis.call('HSET', jk, 'state', 'ready')
  return {'promoted', id, f[1], tonumber(f[5]) or 0}
end

local function expire_reservation(id, from)
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'topic', 'spec', 'run_at', 'seq',
                       'attempts', 'state')
  if not f[1] or f[6] ~= 'reserved' then
    redis.call('ZREM', from, id)
    return nil
  end
  lease_off(id, f[1])
  local attempts = tonumber(f[5]) or 0
  if attempts >= spec_max_attempts(f[2]) then
    redis.call('HSET', jk, 'last_error', 'lease expired')
    bury(id, jk, f[1])
    return {'dead', id, f[1], attempts}
  end
  note_ready(f[1])
  redis.call('ZADD', ready_key(f[1]), '0',
             ready_member(spec_priority(f[2]), tonumber(f[3]), tonumber(f[4]),
                          id))
  redis.call('HSET', jk, 'state', 'ready', 'deadline', '')
  return {'expired', id, f[1], attempts}
end

-- Promotes up to `limit` due jobs (all of them when limit <= 0) from the
-- given sources, earliest due first. `sources` is a list of {key, delayed}
-- where delayed is true for a set of delayed jobs, false for reservations.
-- `now` is the time as text (see keys.lua). Returns the transitions and
-- whether more are due.
local function promote_from(sources, now, limit)
  -- Take up to limit + 1 due entries from every source, merge them by time,
  -- and move the first `limit`: the extra entry tells whether more remain.
  local due = {}
  for _, src in ipairs(sources) do
    local r
    if limit > 0 then
      r = redis.call('ZRANGEBYSCORE', src[1], '-inf', now, 'WITHSCORES',
                     'LIMIT', '0', int_text(limit + 1))
    else
      r = redis.call('ZRANGEBYSCORE', src[1], '-inf', now, 'WITHSCORES')
    end
    for i = 1, #r, 2 do
      table.insert(due, {tonumber(r[i + 1]), r[i], src})
    end
  end
  if #due > 1 then table.sort(due, function(x, y) return x[1] < y[1] end) end
  local more = 0
  local n = #due
  if limit > 0 and n > limit then
    more = 1
    n = limit
  end
  local out = {}
  for i = 1, n do
    local d = due[i]
    local t
    if d[3][2] then
      t = promote_delayed(d[2], d[3][1])
    else
      t = expire_reservation(d[2], d[3][1])
    end
    if t then table.insert(out, t) end
  end
  return out, more
end

-- Every topic: the delay buckets and the global reservations.
local function promote_due(now, limit, buckets)
  local sources = {}
  for b = 0, buckets - 1 do table.insert(sources, {bucket_key(b), true}) end
  table.insert(sources, {RESERVED, false})
  return promote_from(sources, now, limit)
end

-- One topic: its own delayed and reserved sets.
local function promote_topic(topic, now, limit)
  return promote_from({{tdelayed_key(topic), true},
                       {treserved_key(topic), false}}, now, limit)
end
