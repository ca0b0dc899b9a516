-- open: checks that a namespace is in this version's data layout and fixes
-- its bucket count, for a backend that opens it.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:meta"    hash: buckets, layout
-- KEYS[3]  "{ns}:topics"  set of live topics
-- ARGV[1]  bucket count to record when the namespace has none
-- ARGV[2]  the layout this backend writes
-- Reply:   {"OK", buckets} with the namespace's bucket count (the first
--          opener's); {"OLD_LAYOUT", layout} when it holds jobs written in
--          an earlier layout (layout "" for the first one, which was not
--          recorded); {"NEWER_LAYOUT", layout}. A namespace without jobs in
--          an earlier layout is taken over.
local meta, topics = KEYS[2], KEYS[3]
local f = redis.call('HMGET', meta, 'buckets', 'layout')
if not f[1] then
  redis.call('HSET', meta, 'buckets', ARGV[1], 'layout', ARGV[2])
  return {'OK', ARGV[1]}
end
local layout = tonumber(f[2]) or 0
local ours = tonumber(ARGV[2])
if layout > ours then return {'NEWER_LAYOUT', f[2]} end
if layout < ours then
  if redis.call('SCARD', topics) > 0 then return {'OLD_LAYOUT', f[2] or ''} end
  redis.call('HSET', meta, 'layout', ARGV[2])
end
return {'OK', f[1]}
