-- stats: how many jobs of a topic are in each state, read at one instant.
-- Writes: nothing
--
-- KEYS[1]  key prefix "{ns}:"
-- KEYS[2]  "{ns}:tdelayed:<topic>"
-- KEYS[3]  "{ns}:ready:<topic>"
-- KEYS[4]  "{ns}:treserved:<topic>"
-- KEYS[5]  "{ns}:dead:<topic>"
-- KEYS[6]  "{ns}:tdone:<topic>"
-- Reply:   {"OK", delayed, ready, reserved, dead, done}
return {'OK', redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]),
        redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', KEYS[5]),
        redis.call('ZCARD', KEYS[6])}
