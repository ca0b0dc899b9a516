-- shard_meta: checks that a namespace is opened with the number of shards
-- it was first opened with (RedisOptions::shards), and records it for a
-- sharded namespace. Run on every shard, shard 0 first.
-- requires: keys
--
-- KEYS[1]  prefix: key prefix "{ns}:" (of shard k > 0: "{ns#k}:")
-- KEYS[2]  meta: "{ns}:meta" hash: shards, shard (and layout, see open-3.lua)
-- KEYS[3]  topics: "{ns}:topics"  set of live topics
-- KEYS[4]  limits: "{ns}:limits"  hash of limited topics
-- KEYS[5]  paused: "{ns}:paused"  set of paused topics
-- ARGV[1]  shards: the namespace's shards, as the opener says ("1" unsharded)
-- ARGV[2]  shard: this shard's index
-- Reply:   {"OK"}, or {"SHARDS", shards, shard} (nothing written) when the
--          shard records another count or index; a shard that records
--          none but holds jobs, limits or paused topics was written
--          unsharded, as shard 0 of 1
local f = redis.call('HMGET', KEYS[2], 'shards', 'shard')
if f[1] then
  if f[1] ~= ARGV[1] or f[2] ~= ARGV[2] then
    return {'SHARDS', f[1], f[2] or '0'}
  end
  return {'OK'}
end
-- An unsharded namespace records nothing: its keys stay as they always were.
if ARGV[1] == '1' then return {'OK'} end
if redis.call('SCARD', KEYS[3]) > 0 or
   redis.call('EXISTS', KEYS[4], KEYS[5]) > 0 then
  return {'SHARDS', '1', '0'}
end
redis.call('HSET', KEYS[2], 'shards', ARGV[1], 'shard', ARGV[2])
return {'OK'}
