-- topics.lua — the set of live topics, and deleting a job.
-- requires: keys

-- A topic is listed while one of its six sets holds a job (done and
-- waiting jobs too). Redis deletes a sorted set when its last member goes,
-- so EXISTS over the six tells.
local function topic_empty(topic)
  return redis.call('EXISTS', ready_key(topic), tdelayed_key(topic),
                    treserved_key(topic), dead_key(topic),
                    tdone_key(topic), twaiting_key(topic)) == 0
end

-- Removes a job, already out of every index, from the store: its record,
-- and its topic from the topic set when it was the topic's last job.
local function forget(id, topic)
  redis.call('HDEL', JOBS, id)
  if topic_empty(topic) then redis.call('SREM', TOPICS, topic) end
end
