-- news.lua — announcements to the schedulers of other processes, published
-- with SPUBLISH on the channel NEWS ("{ns}:news"; sharded pub/sub, so on a
-- Redis Cluster it lives in the namespace's slot and a script may publish
-- to it). Only edges are announced, so a busy queue pays almost nothing:
--   "r<topic>"  the topic's ready set was empty and gets a job
--   "s<name>"   a schedule was stored or removed (schedule_put-3.lua,
--               schedule_remove-3.lua)
--   "d<µs>"     something comes due at that time, maybe earlier than any
--               subscriber knew
-- Subscribers hear a message only after the script that sent it has run, so
-- news always follows the change it tells of.
--
-- HORIZON ("{ns}:horizon", µs) is the earliest due time subscribers know
-- of: the last one announced, or the one next_due last computed (and read
-- to its caller). Invariant: while the horizon lies in the future, every
-- stored due time that no subscriber heard of is >= horizon, so any change
-- that makes something due earlier than every subscriber knew is announced.
-- A horizon that has passed says nothing (the subscriber that woke for it
-- reads next_due, which sets it again), so it is replaced by the next time
-- stored. A missing key means no subscriber knows of anything due.
-- reserve spells announce_due() out (and must change with it).
-- requires: keys calls

-- Topics whose ready set this call has looked at (once per topic per call).
local ready_seen = {}

-- Call before adding a job to `topic`'s ready set: announces the topic when
-- its set was empty before this call's first addition to it.
local function note_ready(topic)
  if ready_seen[topic] then return end
  ready_seen[topic] = true
  if redis.call('EXISTS', ready_key(topic)) == 0 then
    redis.call('SPUBLISH', NEWS, 'r' .. topic)
  end
end

-- Call after a reservation of `topic` ended (and left its reserved set):
-- when the topic's concurrency cap (LIMITS) was full, workers it held back
-- may go on, so a topic with ready jobs is announced. ack spells this out.
local function note_slot_freed(topic)
  local limit = redis.call('HGET', LIMITS, topic)
  if not limit then return end
  local cap = tonumber(string.match(limit, '^%d+:%d+:%d+:(%d+):'))
  if cap > 0 and redis.call('ZCARD', treserved_key(topic)) + 1 >= cap and
     redis.call('EXISTS', ready_key(topic)) == 1 then
    redis.call('SPUBLISH', NEWS, 'r' .. topic)
  end
end

-- Call after storing a run_at or lease deadline `at` (a number, µs): when it
-- is earlier than the horizon, or the horizon is missing or has passed
-- (`now`, a number), makes it the horizon and announces it.
local function announce_due(at, now)
  local h = tonumber(redis.call('GET', HORIZON))
  if h and at >= h and h > now then return end
  local text = int_text(at)
  redis.call('SET', HORIZON, text)
  redis.call('SPUBLISH', NEWS, 'd' .. text)
end
