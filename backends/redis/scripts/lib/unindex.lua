-- unindex.lua — takes a job out of the index of its state, and out of its
-- expiry index, before the job is deleted (cancel, withdraw); a waiting
-- job out of the dependants sets too.
-- requires: keys job ready index news done depend

local function unindex(id, j)
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
  elseif state == ST_DONE then
    done_off(topic, {done_member(j[TOKEN], id)})
  elseif state == ST_WAITING then
    unwait(id, j)
  end
end
