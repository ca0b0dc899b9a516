-- cancel: deletes a job in any state.
-- requires: keys calls ready index topics job held news
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:jobs"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  now (µs)
-- ARGV[2]  clock mode (see lib/clock.lua; only for dedup windows)
-- ARGV[3]  id
-- Reply:   {"OK"} or {"NOTFOUND"}
local now = hold_clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
local topic, state = j[TOPIC], j[STATE]
if state == ST_READY then
  redis.call('ZREM', ready_key(topic),
             ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
  expiry_off(id, j)
elseif state == ST_DELAYED then
  delay_off(id, topic)
  expiry_off(id, j)
elseif state == ST_RESERVED then
  lease_off(id, topic)
  note_slot_freed(topic)
elseif state == ST_DEAD then
  redis.call('ZREM', dead_key(topic), id)
end
hold_id(id, j, now)
forget(id, topic)
return {'OK'}
