-- promote_due: moves up to `limit` due jobs across all topics: delayed jobs
-- whose run_at came become ready; reservations past their deadline become
-- ready again, or dead ("lease expired") when their attempts are used up.
-- Done jobs whose time is up (up to `limit` more) leave the store first;
-- they are no transitions, but `more` tells when some are still leaving.
-- requires: clock promote done
--
-- KEYS[1]  prefix: key prefix "{ns}:"
-- KEYS[2]  reserved: "{ns}:reserved"
-- KEYS[3]  jobs: "{ns}:jobs"
-- KEYS[4]  due: "{ns}:due"
-- ARGV[1]  now: µs
-- ARGV[2]  clock_mode: (see lib/clock.lua)
-- ARGV[3]  counts: '0' none, else the window in seconds (lib/counts.lua)
-- ARGV[4]  limit: most jobs (>= 1)
-- Reply:   {"OK", more (0/1), {kind, id, topic, attempts}, ...} where kind is
--          "promoted", "expired", "dead", "lapsed" or "discarded"; after
--          its four fields, a job that went dead or away carries the
--          entries of the jobs that waited for it that it settled
--          (lib/settled.lua)
local _, _, now_text = clock(ARGV[1], ARGV[2])
local leaving = drop_leaving(now_text, tonumber(ARGV[4]))
local out, more = promote_due(now_text, tonumber(ARGV[4]))
local reply = {'OK', math.max(more, leaving)}
for _, t in ipairs(out) do table.insert(reply, t) end
return reply
