-- promote.lua — moves due jobs: delayed jobs whose run_at came, leases whose
-- deadline passed, and jobs that lapse because their expire_at came before
-- a reservation.
-- A job that goes dead or is discarded settles the jobs that wait for it
-- (depend.lua).
-- requires: keys calls ready index bury job news held topics counts depend

-- The job `j`, out of every index, lapses at `now` (a number): dead with
-- "expired", or forgotten (its id held) when it asked to be discarded.
-- Returns its transition, with the jobs it settled (settled.lua).
local function lapse(id, j, now)
  local topic = j[TOPIC]
  count('l', topic, 1, now)
  if j[DISCARD] then
    hold_id(id, j, now)
    forget(id, topic)
    return with_settled({'discarded', id, topic, j[ATTEMPTS] or 0},
                        settle(id, 'gone', now, j))
  end
  j[LAST_ERROR] = 'expired'
  bury(id, j, now)
  count('k', topic, 1, now)
  return with_settled({'lapsed', id, topic, j[ATTEMPTS] or 0},
                      settle(id, 'failed', now, j))
end

-- Whether job `j` has expired by `now` (a number).
local function expired(j, now) return j[EXPIRE_AT] and j[EXPIRE_AT] <= now end

-- A delayed or ready job found in its topic's expiring set.
local function lapse_waiting(id, from, now)
  local j = job_read(id)
  if not j or (j[STATE] ~= ST_DELAYED and j[STATE] ~= ST_READY) then
    redis.call('ZREM', from, id)
    return nil
  end
  local topic = j[TOPIC]
  if j[STATE] == ST_READY then
    redis.call('ZREM', ready_key(topic),
               ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
  else
    delay_off(id, topic)
  end
  expiry_off(id, j)
  return lapse(id, j, now)
end

-- Makes one due job ready again: a delayed job whose run_at came, or a
-- reservation whose deadline passed. `from` is the set the id was found in;
-- an entry there that names no such job (which no script leaves behind) is
-- dropped. Returns a transition {kind, id, topic, attempts}, or nil.
local function promote_delayed(id, from, now)
  local j = job_read(id)
  if not j or j[STATE] ~= ST_DELAYED then
    redis.call('ZREM', from, id)
    return nil
  end
  local topic = j[TOPIC]
  delay_off(id, topic)
  if expired(j, now) then
    expiry_off(id, j)
    return lapse(id, j, now)
  end
  note_ready(topic)
  redis.call('ZADD', ready_key(topic), '0',
             ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
  j[STATE] = ST_READY
  job_write(id, j)
  return {'promoted', id, topic, j[ATTEMPTS] or 0}
end

local function expire_reservation(id, from, now)
  local j = job_read(id)
  if not j or j[STATE] ~= ST_RESERVED then
    redis.call('ZREM', from, id)
    return nil
  end
  local topic = j[TOPIC]
  lease_off(id, topic)
  local attempts = j[ATTEMPTS] or 0
  if attempts >= j[MAX_ATTEMPTS] then
    j[LAST_ERROR] = 'lease expired'
    bury(id, j, now)
    count('x', topic, 1, now)
    count('k', topic, 1, now)
    return with_settled({'dead', id, topic, attempts},
                        settle(id, 'failed', now, j))
  end
  j[DEADLINE] = nil
  if expired(j, now) then return lapse(id, j, now) end
  count('x', topic, 1, now)
  note_ready(topic)
  redis.call('ZADD', ready_key(topic), '0',
             ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
  j[STATE] = ST_READY
  job_write(id, j)
  expiry_on(id, j)
  return {'expired', id, topic, attempts}
end

-- Promotes up to `limit` due jobs (all of them when limit <= 0) from the
-- given sources, earliest due first. `sources` is a list of {key, kind}
-- where kind is 'delayed' for a set of delayed jobs, 'leases' for
-- reservations and 'expiring' for an expiring set.
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
  local now_n = tonumber(now)
  -- A job may sit in two sources (delayed and expiring): moved once.
  local moved = {}
  for i = 1, n do
    local d = due[i]
    local id, kind = d[2], d[3][2]
    local t
    if moved[id] then
      t = nil
    elseif kind == 'delayed' then
      t = promote_delayed(id, d[3][1], now_n)
    elseif kind == 'leases' then
      t = expire_reservation(id, d[3][1], now_n)
    else
      t = lapse_waiting(id, d[3][1], now_n)
    end
    moved[id] = true
    if t then table.insert(out, t) end
  end
  return out, more
end

-- Every topic: the delayed sets of the topics DUE says may have something
-- due (at most limit + 1 of them; more means more may be due), and the
-- global reservations. The topics looked at get their exact DUE score back.
local function promote_due(now, limit)
  local topics
  if limit > 0 then
    topics = redis.call('ZRANGEBYSCORE', DUE, '-inf', now, 'LIMIT', '0',
                        int_text(limit + 1))
  else
    topics = redis.call('ZRANGEBYSCORE', DUE, '-inf', now)
  end
  local sources = {}
  for _, t in ipairs(topics) do
    table.insert(sources, {tdelayed_key(t), 'delayed'})
    table.insert(sources, {texpire_key(t), 'expiring'})
  end
  table.insert(sources, {RESERVED, 'leases'})
  local out, more = promote_from(sources, now, limit)
  for _, t in ipairs(topics) do refresh_due(t) end
  if limit > 0 and #topics > limit then more = 1 end
  return out, more
end

-- One topic: its own delayed, reserved and expiring sets. Its DUE score
-- may be left too early, which index.lua allows.
local function promote_topic(topic, now, limit)
  return promote_from({{tdelayed_key(topic), 'delayed'},
                       {treserved_key(topic), 'leases'},
                       {texpire_key(topic), 'expiring'}}, now, limit)
end
