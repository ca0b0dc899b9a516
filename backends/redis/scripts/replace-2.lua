-- replace: debounce. A live delayed or ready job of the given topic gets a
-- new payload and run_at in one step; its other settings, enqueue order and
-- attempts stay. Announced as add would announce it.
-- requires: clock keys calls ready index job news schedule
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  id: the job's id
-- ARGV[4]  topic: the topic
-- ARGV[5]  run_at: µs
-- ARGV[6]  payload: the new payload
-- Reply:   {"OK", state} (the state it is now in), {"NOTFOUND"},
--          {"BUSY", state} (reserved or dead) or {"OTHERTOPIC", topic}
local now, shift = clock(ARGV[1], ARGV[2])
local id = ARGV[3]
local j = job_read(id)
if not j then return {'NOTFOUND'} end
if j[TOPIC] ~= ARGV[4] then return {'OTHERTOPIC', j[TOPIC]} end
if j[STATE] == ST_READY then
  redis.call('ZREM', ready_key(j[TOPIC]),
             ready_member(j[PRIORITY], j[RUN_AT], j[SEQ_NO], id))
elseif j[STATE] == ST_DELAYED then
  delay_off(id, j[TOPIC])
else
  return {'BUSY', STATE_NAMES[j[STATE]]}
end
j[PAYLOAD] = ARGV[6]
return {'OK', schedule(id, j, tonumber(ARGV[5]) + shift, now)}
