-- reserve: promotes the topic's due jobs (all of them, unless a limit is
-- given), then reserves up to N ready jobs of one topic in ready
-- order, each with a fresh fencing token.
-- requires: clock promote snapshot
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
-- Reply:   {"OK", moved, {snapshot...}, ...}: moved is the list of jobs the
--          promotion step moved, {kind, id, topic, attempts} each as in
--          promote_due; then one snapshot (see lib/snapshot.lua) per lease,
--          in reserve order, holding the new token and deadline.
local now, _, now_text = clock(ARGV[1], ARGV[2])
local topic = ARGV[3]
local moved = promote_topic(topic, now_text, tonumber(ARGV[6]),
                            tonumber(ARGV[5]))

local popped = redis.call('ZPOPMIN', KEYS[2], ARGV[4])
local out = {'OK', moved}
if #popped == 0 then return out end
local n = #popped / 2
local token = redis.call('INCRBY', KEYS[3], int_text(n)) - n
-- Both lease indexes get one ZADD for the whole batch.
local leases = {}
for i = 1, #popped, 2 do
  local id = member_id(popped[i])
  local v = snapshot(id)
  -- v[1] is the id, then SNAPSHOT_FIELDS: v[6] attempts, v[8] ttr.
  -- A member without a job cannot occur while every transition goes through
  -- these scripts; should one appear it is dropped, not reserved.
  if v[2] then
    token = token + 1
    local deadline = int_text(now + tonumber(v[8]))
    local attempts = int_text(tonumber(v[6]) + 1)
    local token_text = int_text(token)
    redis.call('HSET', job_key(id), 'state', 'reserved', 'attempts', attempts,
               'token', token_text, 'deadline', deadline)
    leases[#leases + 1] = deadline
    leases[#leases + 1] = id
    v[4] = 'reserved'
    v[6] = attempts
    v[12] = deadline
    v[14] = token_text
    out[#out + 1] = v
  end
end
if #leases > 0 then
  call_many('ZADD', RESERVED, leases)
  call_many('ZADD', treserved_key(topic), leases)
end
return out
