-- cancel: deletes a job in any state.
-- requires: keys ready index topics spec
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:job:<id>"
-- KEYS[3]  "{ns}:reserved"
-- ARGV[1]  id
-- Reply:   {"OK"} or {"NOTFOUND"}
local id, jk = ARGV[1], KEYS[2]
local f = redis.call('HMGET', jk, 'topic', 'state', 'spec', 'run_at', 'seq',
                     'bucket')
if not f[1] then return {'NOTFOUND'} end
local topic, state = f[1], f[2]
if state == 'ready' then
  redis.call('ZREM', ready_key(topic),
             ready_member(spec_priority(f[3]), tonumber(f[4]), tonumber(f[5]),
                          id))
elseif state == 'delayed' then
  delay_off(id, topic, f[6])
elseif state == 'reserved' then
  lease_off(id, topic)
elseif state == 'dead' then
  redis.call('ZREM', dead_key(topic), id)
end
forget(jk, topic)
return {'OK'}
