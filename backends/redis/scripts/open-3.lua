-- open: checks that a namespace is in this version's data layout, for a
-- backend that opens it.
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  meta: "{ns}:meta"    hash: layout
-- KEYS[3]  topics: "{ns}:topics"  set of live topics
-- ARGV[1]  layout: the layout this backend writes
-- ARGV[2]  oldest_readable: the oldest layout this backend reads as its own
-- Reply:   {"OK"}; {"OLD_LAYOUT", layout} when it holds jobs written in
--          an earlier layout it cannot read (layout "" for the first one,
--          which was not recorded); {"NEWER_LAYOUT", layout}. A namespace
--          without jobs in an earlier layout, or in one from ARGV[2] on, is
--          taken over.
local meta, topics = KEYS[2], KEYS[3]
local f = redis.call('HMGET', meta, 'buckets', 'layout')
if not f[1] and not f[2] then
  redis.call('HSET', meta, 'layout', ARGV[1])
  return {'OK'}
end
local layout = tonumber(f[2]) or 0
local ours = tonumber(ARGV[1])
if layout > ours then return {'NEWER_LAYOUT', f[2]} end
if layout < ours then
  if layout < tonumber(ARGV[2]) and redis.call('SCARD', topics) > 0 then
    return {'OLD_LAYOUT', f[2] or ''}
  end
  -- Layouts before 4 kept a bucket count here; nothing reads it now.
  redis.call('HDEL', meta, 'buckets')
  redis.call('HSET', meta, 'layout', ARGV[1])
end
return {'OK'}
