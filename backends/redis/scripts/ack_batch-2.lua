-- ack_batch: deletes the jobs of many leases, each acked on its own terms:
-- a lease whose token is not current is refused and the others still go.
-- requires: keys calls topics
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:reserved"
-- ARGV     2 values per lease: id, token
-- Reply:   {"OK", word...}: one word per lease, in order, "OK" or "STALE"
--          (that lease changed nothing)
local out = {'OK'}
local gone_ids, gone_keys, by_topic, topics = {}, {}, {}, {}
local done = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local jk = job_key(id)
  local f = redis.call('HMGET', jk, 'state', 'token', 'topic')
  -- The same lease twice: the first ack deletes the job, so the second
  -- finds no reservation, as it would have one call later.
  if f[1] ~= 'reserved' or f[2] ~= ARGV[i + 1] or done[id] then
    out[#out + 1] = 'STALE'
  else
    done[id] = true
    out[#out + 1] = 'OK'
    gone_ids[#gone_ids + 1] = id
    gone_keys[#gone_keys + 1] = jk
    local t = by_topic[f[3]]
    if not t then
      t = {}
      by_topic[f[3]] = t
      topics[#topics + 1] = f[3]
    end
    t[#t + 1] = id
  end
end
if #gone_ids > 0 then
  call_many('ZREM', KEYS[2], gone_ids)
  for _, topic in ipairs(topics) do
    call_many('ZREM', treserved_key(topic), by_topic[topic])
  end
  call_many('DEL', nil, gone_keys)
  for _, topic in ipairs(topics) do
    if topic_empty(topic) then redis.call('SREM', TOPICS, topic) end
  end
end
return out
