-- reserve: promotes the topic's due jobs (all of them, unless a limit is
-- given), then reserves up to N ready jobs of one topic in ready
-- order, each with a fresh fencing token.
-- requires: clock calls keys ready spec
-- loads: promote
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:ready:<topic>"
-- KEYS[3]  "{ns}:token"   fencing token counter
-- ARGV[1]  now (µs)
-- ARGV[2]  "1" to use the server's TIME
-- ARGV[3]  topic
-- ARGV[4]  max jobs to reserve (>= 1)
-- ARGV[5]  dead cap per topic
-- ARGV[6]  most jobs to promote first (0: all that are due)
-- Reply:   {"OK", moved, lease...}: moved is the list of jobs the
--          promotion step moved, {kind, id, topic, attempts} each as in
--          promote_due; then one entry per lease, in reserve order:
--          {spec, payload, attempts, enqueued_at, run_at, last_error,
--          deadline, token, id} (spec: see lib/spec.lua). The topic
--          and the state ("reserved") are the caller's to fill in, so they
--          are neither read nor sent.
local now, _, now_text = clock(ARGV[1], ARGV[2])
local topic = ARGV[3]
-- Most calls find nothing due: two one-entry range queries tell, and the
-- promotion proper (which reads scores and merges the sets) runs, and its
-- helpers are built, only when one of them found something.
local moved = {}
if #redis.call('ZRANGEBYSCORE', tdelayed_key(topic), '-inf', now_text,
               'LIMIT', '0', '1') > 0 or
   #redis.call('ZRANGEBYSCORE', treserved_key(topic), '-inf', now_text,
               'LIMIT', '0', '1') > 0 then
  moved = load_promote().promote_topic(topic, now_text, tonumber(ARGV[6]),
                                        tonumber(ARGV[5]))
end

local popped = redis.call('ZPOPMIN', KEYS[2], ARGV[4])
local out = {'OK', moved}
if #popped == 0 then return out end
local n = #popped / 2
local token = redis.call('INCRBY', KEYS[3], int_text(n)) - n
-- Both lease indexes get one ZADD for the whole batch.
local leases = {}
for i = 1, #popped, 2 do
  local id = member_id(popped[i])
  local jk = job_key(id)
  local v = redis.call('HMGET', jk, 'spec', 'payload', 'attempts',
                       'enqueued_at', 'run_at', 'last_error')
  -- A member without a job cannot occur while every transition goes through
  -- these scripts; should one appear it is dropped, not reserved.
  if v[1] then
    token = token + 1
    -- ttr from now, or from run_at when the caller's clock is behind the
    -- one that found the job due.
    local deadline = int_text(math.max(now, tonumber(v[5])) + spec_ttr(v[1]))
    local attempts = int_text((tonumber(v[3]) or 0) + 1)
    local token_text = int_text(token)
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
if #leases > 0 then
  call_many('ZADD', RESERVED, leases)
  call_many('ZADD', treserved_key(topic), leases)
end
return out
