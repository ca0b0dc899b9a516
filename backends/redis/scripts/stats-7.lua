-- stats: how many jobs of a topic are in each state, read at one instant.
-- Writes: nothing
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  tdelayed: "{ns}:tdelayed:<topic>"
-- KEYS[3]  ready: "{ns}:ready:<topic>"
-- KEYS[4]  treserved: "{ns}:treserved:<topic>"
-- KEYS[5]  dead: "{ns}:dead:<topic>"
-- KEYS[6]  tdone: "{ns}:tdone:<topic>"
-- KEYS[7]  twaiting: "{ns}:twaiting:<topic>"
-- Reply:   {"OK", delayed, ready, reserved, dead, done, waiting}
return {'OK', redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]),
        redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', KEYS[5]),
        redis.call('ZCARD', KEYS[6]), redis.call('ZCARD', KEYS[7])}
