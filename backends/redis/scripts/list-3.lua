-- list: a page of a topic's jobs in one state, in the order they would be
-- Writes: nothing
-- be reserved (ready), become due (delayed), expire (reserved), died in
-- (dead), leave the store (done) or were enqueued (waiting), after a
-- position in that order (keyset paging: the page is found by its key,
-- never by counting what is before).
-- A position is a member and its score: the ready set orders by member
-- alone (all score 0); the others by score, then member, so a page that
-- goes on from the middle of equal scores passes over the members at that
-- score up to the position's own, compared byte by byte (Lua's < compares
-- by the server's locale).
-- requires: ready snapshot done
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  set: the topic's set for the state: "{ns}:ready:<topic>",
--          "{ns}:tdelayed:<topic>", "{ns}:treserved:<topic>",
--          "{ns}:dead:<topic>", "{ns}:tdone:<topic>" or
--          "{ns}:twaiting:<topic>"
-- KEYS[3]  jobs: "{ns}:jobs"
-- ARGV[1]  state: "ready", "delayed", "reserved", "dead", "done" or
--          "waiting"
-- ARGV[2]  limit: most jobs (>= 1)
-- ARGV[3]  after_score: the score of the position the page goes on after,
--          an integer ("" for the first page; ignored for ready jobs)
-- ARGV[4]  after_member: the member at that position ("" for the first
--          page)
-- Reply:   {"OK", {snapshot, member, score}, ...}: each job (see
--          lib/snapshot.lua) with its position
local limit = tonumber(ARGV[2])
local set = KEYS[2]
local page = {}

-- Whether a sorts after b, byte by byte.
local function bytes_after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

if ARGV[1] == 'ready' then
  local from = '-'
  if ARGV[4] ~= '' then from = '(' .. ARGV[4] end
  for _, m in ipairs(redis.call('ZRANGE', set, from, '+', 'BYLEX', 'LIMIT', 0,
                                limit)) do
    table.insert(page, {m, '0'})
  end
else
  local start = 0
  local after_score = nil
  if ARGV[4] ~= '' then
    after_score = tonumber(ARGV[3])
    start = redis.call('ZCOUNT', set, '-inf', '(' .. ARGV[3])
  end
  while #page < limit do
    local got = redis.call('ZRANGE', set, start, start + limit - 1,
                           'WITHSCORES')
    if #got == 0 then break end
    for i = 1, #got, 2 do
      if #page < limit and (after_score == nil or
          tonumber(got[i + 1]) > after_score or
          bytes_after(got[i], ARGV[4])) then
        table.insert(page, {got[i], got[i + 1]})
      end
    end
    start = start + #got / 2
  end
end

local out = {'OK'}
for _, p in ipairs(page) do
  local id = p[1]
  if ARGV[1] == 'ready' then
    id = member_id(id)
  elseif ARGV[1] == 'done' then
    id = done_id(id)
  end
  table.insert(out, {snapshot(id), p[1], p[2]})
end
return out
