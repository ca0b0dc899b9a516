-- schedules: every schedule, read at one instant.
-- Writes: nothing
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  schedules: "{ns}:schedules"
-- Reply:   {"OK", name, {field, value, ...}, name, {...}, ...} in no order
local out = {'OK'}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGETALL', schedule_key(name))
end
return out
