-- add: stores a batch of new jobs, all or nothing. A job with
-- dependencies is stored waiting, or as their state settles it at once
-- (lib/depend.lua, loaded only for a batch that has such a job). A job
-- may join a batch (delayq/batch.h) that is open, or be the completion job
-- that opens one (lib/batch.lua: the batch is held in its record).
-- requires: clock keys calls ready job news counts
-- loads: depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  seq: "{ns}:seq"     enqueue order counter
-- KEYS[3]  topics: "{ns}:topics"  set of live topics
-- KEYS[4]  jobs: "{ns}:jobs"    the job records
-- KEYS[5]  due: "{ns}:due"     topics by their earliest run_at
-- ARGV[1]  now: µs, caller's clock
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4..] batch: 9 values per job: id, topic, priority, run_at (µs),
--          spec (the record's values PRIORITY..BACKOFF_MAX, MessagePack, see
--          lib/job.lua; it holds the priority too), payload, extras ("" or
--          the record's EXPIRE_AT, DISCARD and UNIQUE_FOR, then KEEP_FOR
--          and KEEP_AT_MOST for a job with a keep_for, MessagePack;
--          EXPIRE_AT on the caller's clock), after ("" or the policy, 0
--          fail, 1 cancel, 2 run, then the ids it waits for, each once,
--          MessagePack), in_batch ("" none, "+" and the id of the batch it
--          joins, or "=" for a completion job, stored waiting and holding
--          its new open batch)
-- Reply:   {"OK"}, {"EXISTS", id}, {"NODEP", id, dependency},
--          {"NOBATCH", batch} or {"CLOSED", batch} (nothing stored): id is
--          the first job of the batch whose id is taken (by a job or a
--          dedup window, see lib/held.lua) or repeats an earlier one, or
--          that waits for a job neither stored nor earlier in the batch;
--          batch the first batch joined that no completion job holds, or
--          that is closed
local now, shift = clock(ARGV[1], ARGV[2])
local n = (#ARGV - 3) / 9
local function arg(i, k) return ARGV[3 + (i - 1) * 9 + k] end

-- One HMGET per 512 ids for the whole batch; an id is taken when it has a
-- record or a dedup window holds it (the windows that passed go first).
local ids = {}
for i = 1, n do ids[i] = arg(i, 1) end
local any_held = redis.call('EXISTS', HELD) == 1
if any_held then
  redis.call('ZREMRANGEBYSCORE', HELD, '-inf', int_text(now))
end
local seen = {}
for i = 1, n, 512 do
  local j = math.min(i + 511, n)
  local got = redis.call('HMGET', JOBS, unpack(ids, i, j))
  for k = i, j do
    if got[k - i + 1] or seen[ids[k]] or
       (any_held and redis.call('ZSCORE', HELD, ids[k])) then
      return {'EXISTS', ids[k]}
    end
    seen[ids[k]] = true
  end
end

-- Every job waited for is stored or earlier in the batch.
local afters = {}  -- batch index -> {policy, id...}
local place = {}  -- id -> batch index
for i = 1, n do
  place[ids[i]] = i
  if arg(i, 8) ~= '' then
    local a = list_unpack(arg(i, 8))
    afters[i] = a
    for k = 2, #a do
      local at = place[a[k]]
      if not (at and at < i) and redis.call('HEXISTS', JOBS, a[k]) == 0 then
        return {'NODEP', ids[i], a[k]}
      end
    end
  end
end
local depend = next(afters) and load_depend()

-- Every batch joined is open: its completion job's record, read once here
-- and written once after the jobs, counts them (lib/batch.lua).
local batches = {}  -- batch id -> its completion job's record
local function joined(i)
  local b = arg(i, 9)
  if string.sub(b, 1, 1) ~= '+' then return nil end
  return string.sub(b, 2)
end
for i = 1, n do
  local b = joined(i)
  if b and not batches[b] then
    local c = job_read(b)
    if not c or not c[BATCH_TOTAL] then return {'NOBATCH', b} end
    if c[BATCH_CLOSED] == 1 then return {'CLOSED', b} end
    batches[b] = c
  end
end
-- The states of the batch's jobs, for its later jobs that wait for them.
local stored_as = {}
local function state_of(id)
  if stored_as[id] then return stored_as[id] end
  local _, state = cmsgpack.unpack(redis.call('HGET', JOBS, id))
  return state
end

local first = redis.call('INCRBY', KEYS[2], int_text(n)) - n
-- Records and index entries are gathered per key and written with one call
-- per key.
local records = {}
local adds = {}
local function add_to(key, score, member)
  local a = adds[key]
  if not a then
    a = {}
    adds[key] = a
  end
  a[#a + 1] = score
  a[#a + 1] = member
end
local topics, ready_keys = {}, {}
local added = {}  -- jobs per topic, for the counts
-- The earliest run_at of each topic's delayed jobs, for DUE; and of the
-- batch: one due announcement per call at most.
local topic_due = {}
local first_due = nil
for i = 1, n do
  local id, topic = arg(i, 1), arg(i, 2)
  local run_at = tonumber(arg(i, 4)) + shift
  -- With no shift the caller's text is passed through (see calls.lua).
  local run_at_text = arg(i, 4)
  if shift ~= 0 then run_at_text = int_text(run_at) end
  local seq = first + i
  added[topic] = (added[topic] or 0) + 1
  local x = nil  -- the extras (see ARGV above)
  if arg(i, 7) ~= '' then
    x = {cmsgpack.unpack(arg(i, 7))}
    if x[1] then x[1] = x[1] + shift end
  end
  local fate, detail = 'run', nil
  if afters[i] then fate, detail = depend.await_fate(afters[i], state_of) end
  local opens, batch = arg(i, 9) == '=', joined(i)
  if batch then
    -- Counted now when it finishes as it is added.
    local c = batches[batch]
    c[BATCH_TOTAL] = c[BATCH_TOTAL] + 1
    if fate == 'fail' then c[BATCH_DEAD] = c[BATCH_DEAD] + 1 end
    if fate == 'cancel' then c[BATCH_CANCELLED] = c[BATCH_CANCELLED] + 1 end
  end
  if fate == 'cancel' then
    -- Deleted as by cancel, before it was stored: only its id is held.
    stored_as[id] = 'gone'
    if x and x[3] and x[3] > 0 then
      redis.call('ZADD', HELD, int_text(now + x[3]), id)
    end
  else
    local rk = ready_keys[topic]
    if not rk then
      rk = ready_key(topic)
      ready_keys[topic] = rk
      topics[#topics + 1] = topic
    end
    local state = ST_DELAYED
    if fate == 'wait' or opens then
      state = ST_WAITING
      add_to(twaiting_key(topic), int_text(seq), id)
      for _, d in ipairs(fate == 'wait' and detail or {}) do
        redis.call('SADD', dependants_key(d), id)
      end
    elseif fate == 'fail' then
      state = ST_DEAD
      add_to(dead_key(topic), int_text(redis.call('INCR', KEYS[2])), id)
      count('k', topic, 1, now)
    elseif run_at <= now then
      state = ST_READY
      note_ready(topic)
      add_to(rk, '0', ready_member(tonumber(arg(i, 3)), run_at, seq, id))
    else
      if not first_due or run_at < first_due then first_due = run_at end
      local d = topic_due[topic]
      if not d or run_at < d[1] then
        topic_due[topic] = {run_at, run_at_text}
      end
      add_to(tdelayed_key(topic), run_at_text, id)
    end
    -- ATTEMPTS..LAST_ERROR are absent until the first reservation, unless
    -- the extras follow them.
    local record = cmsgpack.pack(topic, state) .. arg(i, 5) ..
                   cmsgpack.pack(now, run_at, seq, arg(i, 6))
    if x then
      -- EXPIRE_AT..UNIQUE_FOR, and KEEP_FOR, KEEP_AT_MOST with a keep_for.
      record = record .. cmsgpack.pack(nil, nil, nil, nil,
                                       unpack(x, 1, x[5] and 5 or 3))
      -- A waiting or dead job is not indexed by its expiry.
      if x[1] and (state == ST_DELAYED or state == ST_READY) then
        local text = int_text(x[1])
        add_to(texpire_key(topic), text, id)
        local d = topic_due[topic]
        if not d or x[1] < d[1] then topic_due[topic] = {x[1], text} end
        if not first_due or x[1] < first_due then first_due = x[1] end
      end
    end
    if afters[i] or opens or batch then
      local j = {cmsgpack.unpack(record)}
      if afters[i] then
        j[AFTER] = list_pack(afters[i], 2)
        j[ON_FAILURE] = afters[i][1]
      end
      if fate == 'wait' then
        redis.call('HSET', PENDING_COUNTS, id, #detail)
      end
      if fate == 'fail' then j[LAST_ERROR], j[FINISHED_AT] = detail, now end
      -- A dead job was counted above.
      if batch and fate ~= 'fail' then j[BATCH_OF] = batch end
      if opens then
        j[BATCH_CLOSED], j[BATCH_TOTAL] = 0, 0
        j[BATCH_DONE], j[BATCH_DEAD], j[BATCH_CANCELLED] = 0, 0, 0
      end
      record = job_pack(j)
    end
    stored_as[id] = state
    records[#records + 1] = id
    records[#records + 1] = record
  end
end
call_many('HSET', JOBS, records)
for b, c in pairs(batches) do job_write(b, c) end
for key, a in pairs(adds) do call_many('ZADD', key, a) end
for topic, d in pairs(topic_due) do
  redis.call('ZADD', DUE, 'LT', d[2], topic)
end
call_many('SADD', KEYS[3], topics)
for topic, k in pairs(added) do count('e', topic, k, now) end
if first_due then announce_due(first_due, now) end
return {'OK'}
