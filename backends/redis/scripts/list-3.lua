-- list: up to `limit` jobs of a topic in one state, in the order they would
-- Writes: nothing
-- be reserved (ready), become due (delayed), expire (reserved), died in
-- (dead) or leave the store (done).
-- requires: ready snapshot done
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  set: the topic's set for the state: "{ns}:ready:<topic>",
--          "{ns}:tdelayed:<topic>", "{ns}:treserved:<topic>",
--          "{ns}:dead:<topic>" or "{ns}:tdone:<topic>"
-- KEYS[3]  jobs: "{ns}:jobs"
-- ARGV[1]  state: "ready", "delayed", "reserved", "dead" or "done"
-- ARGV[2]  limit: most jobs (>= 1)
-- Reply:   {"OK", snapshot, ...} (see lib/snapshot.lua)
local out = {'OK'}
local members = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
for _, m in ipairs(members) do
  local id = m
  if ARGV[1] == 'ready' then
    id = member_id(m)
  elseif ARGV[1] == 'done' then
    id = done_id(m)
  end
  table.insert(out, snapshot(id))
end
return out
