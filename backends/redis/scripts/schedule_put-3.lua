-- schedule_put: stores a schedule's definition under its name. Its
-- done_through stays unless the schedule is new or its spec or time zone
-- changes (then it is `now`: occurrences count from then on); its revision
-- goes up by one. Announced to subscribers ("s<name>", see news.lua).
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  schedules: "{ns}:schedules"        the names of all schedules
-- KEYS[3]  schedule: "{ns}:schedule:<name>"  the schedule's hash
-- ARGV[1]  now: µs, caller's clock
-- ARGV[2]  name: the schedule's name
-- ARGV[3..] definition: field, value pairs of the definition, among them
--          spec and time_zone
-- Reply:   {"OK"}
local old = redis.call('HMGET', KEYS[3], 'spec', 'time_zone', 'done_through',
                       'revision')
local fields = {}
local def = {}
for i = 3, #ARGV, 2 do
  def[ARGV[i]] = ARGV[i + 1]
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
local done = ARGV[1]
if old[4] and old[1] == def.spec and old[2] == def.time_zone then
  done = old[3]
end
fields[#fields + 1] = 'done_through'
fields[#fields + 1] = done
fields[#fields + 1] = 'revision'
fields[#fields + 1] = tostring((tonumber(old[4]) or 0) + 1)
redis.call('HSET', KEYS[3], unpack(fields))
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SPUBLISH', NEWS, 's' .. ARGV[2])
return {'OK'}
