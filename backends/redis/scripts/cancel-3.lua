-- cancel: deletes a job in any state.
-- requires: keys ready index topics job
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:jobs"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- Reply:   {"OK"} or {"NOTFOUND"}
local id = ARGV[1]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
local topic, state = j[TOPIC], j[STATE]
if state == ST_READY then
  redis.call('ZREM', ready_key(topic),
             ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
elseif state == ST_DELAYED then
  delay_off(id, topic)
elseif state == ST_RESERVED then
  lease_off(id, topic)
elseif state == ST_DEAD then
  redis.call('ZREM', dead_key(topic), id)
end
forget(id, topic)
return {'OK'}
