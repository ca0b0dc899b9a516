-- open: checks that a namespace is in this version's data layout and fixes
-- its bucket count, for a backend that opens it.
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:meta"    hash: buckets, layout
-- KEYS[3]  "{ns}:topics"  set of live topics
-- ARGV[1]  bucket count to record when the namespace has none
-- ARGV[2]  the layout this backend writes
-- Reply:   {"OK", buckets} with the namespace's bucket count (the first
--          opener's), {"OLD_LAYOUT"} when it holds jobs written in the
--          layout before layouts were recorded, or {"NEWER_LAYOUT", layout}.
--          A namespace with no jobs in the old layout is taken over.
local meta, topics = KEYS[2], KEYS[3]
local f = redis.call('HMGET', meta, 'buckets', 'layout')
if not f[1] then
  redis.call('HSET', meta, 'buckets', ARGV[1], 'layout', ARGV[2])
  return {'OK', ARGV[1]}
end
if not f[2] then
  if redis.call('SCARD', topics) > 0 then return {'OLD_LAYOUT'} end
  redis.call('HSET', meta, 'layout', ARGV[2])
  return {'OK', f[1]}
end
if tonumber(f[2]) > tonumber(ARGV[2]) then return {'NEWER_LAYOUT', f[2]} end
return {'OK', f[1]}
