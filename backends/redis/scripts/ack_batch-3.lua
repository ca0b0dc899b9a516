-- ack_batch: deletes the jobs of many leases, each acked on its own terms:
-- a lease whose token is not current is refused and the others still go.
-- A job with a keep_for is kept done, without a result (lib/done.lua); the
-- jobs that wait for an acked one are settled (lib/depend.lua), and a job
-- of a batch is counted done there (lib/batch.lua).
-- requires: keys calls job topics held news counts done depend
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  reserved: "{ns}:reserved"
-- KEYS[3]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua; only for dedup windows)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4..] leases: 2 values per lease: id, token
-- Reply:   {"OK", word..., settled...}: one word per lease, in order, "OK"
--          or "STALE" (that lease changed nothing); then the jobs that
--          waited for the acked ones, and the completion jobs of their
--          batches, that it released (lib/settled.lua)
local now = hold_clock(ARGV[1], ARGV[2])
local out = {'OK'}
local n = (#ARGV - 3) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 * i + 2] end
-- Every record with one HMGET per 512 leases.
local records = {}
for i = 1, n, 512 do
  local got = redis.call('HMGET', JOBS, unpack(ids, i, math.min(i + 511, n)))
  for k = 1, #got do records[i + k - 1] = got[k] end
end
-- The acked ids, those of them that leave the store, and the acked ids by
-- topic.
local acked, gone, by_topic, topics = {}, {}, {}, {}
local done = {}
-- The acked jobs that stay done, by topic, in the order of the leases.
local kept = {}
-- The batch of each acked job of one, once per job, and the job's SEQ_NO.
local in_batches = {}
for i = 1, n do
  local id = ids[i]
  local j = records[i] and {cmsgpack.unpack(records[i])}
  -- The same lease twice: the first ack deletes the job, so the second
  -- finds no reservation, as it would have one call later.
  if not j or j[STATE] ~= ST_RESERVED or not j[TOKEN] or
     int_text(j[TOKEN]) ~= ARGV[2 * i + 3] or done[id] then
    out[#out + 1] = 'STALE'
  else
    done[id] = true
    out[#out + 1] = 'OK'
    acked[#acked + 1] = id
    hold_id(id, j, now)
    local topic = j[TOPIC]
    local t = by_topic[topic]
    if not t then
      t = {}
      by_topic[topic] = t
      topics[#topics + 1] = topic
      kept[topic] = {}
    end
    t[#t + 1] = id
    if j[BATCH_OF] then
      in_batches[#in_batches + 1] = {j[BATCH_OF], j[SEQ_NO]}
      j[BATCH_OF] = nil
    end
    if j[KEEP_FOR] and j[KEEP_FOR] > 0 then
      table.insert(kept[topic], {id, j})
    else
      gone[#gone + 1] = id
    end
  end
end
if #topics > 0 then
  local now_text = int_text(now)
  call_many('ZREM', KEYS[2], acked)
  for _, topic in ipairs(topics) do
    call_many('ZREM', treserved_key(topic), by_topic[topic])
  end
  call_many('HDEL', JOBS, gone)
  for _, topic in ipairs(topics) do
    trim_done(topic, now_text)
    for _, k in ipairs(kept[topic]) do keep_done(k[1], k[2], '', now) end
    if topic_empty(topic) then redis.call('SREM', TOPICS, topic) end
    note_slot_freed(topic)
    count('d', topic, #by_topic[topic], now)
  end
  -- One EXISTS per 512 acked jobs tells whether any of them has dependants.
  for i = 1, #acked, 512 do
    local last = math.min(i + 511, #acked)
    local keys = {}
    for k = i, last do keys[#keys + 1] = dependants_key(acked[k]) end
    if redis.call('EXISTS', unpack(keys)) > 0 then
      for k = i, last do with_settled(out, settle(acked[k], 'met', now)) end
    end
  end
  for _, b in ipairs(in_batches) do
    out[#out + 1] = count_in_batch(b[1], b[2], 'met', now)
  end
end
return out
