-- withdraw: deletes jobs that an add of a sharded namespace stored on one
-- shard before another shard refused its part (see README.md, Sharded
-- namespaces). As cancel, in any state, but holding no id in a dedup
-- window: the batch was refused, so its ids must stay free.
-- requires: keys calls ready index topics job news unindex
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  jobs: "{ns}:jobs"
-- KEYS[3]  reserved: "{ns}:reserved"
-- ARGV[1..] ids: job ids
-- Reply:   {"OK", withdrawn}: how many of the ids named a live job
local withdrawn = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  local j = job_read(id)
  if j then
    unindex(id, j)
    forget(id, j[TOPIC])
    withdrawn = withdrawn + 1
  end
end
return {'OK', withdrawn}
