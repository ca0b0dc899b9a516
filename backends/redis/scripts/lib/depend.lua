-- depend.lua — jobs that wait for others (JobOptions::after). A waiting
-- job (ST_WAITING) is in its topic's waiting set, scored by its SEQ_NO, and
-- in the dependants set of each job it still waits for; its record holds
-- AFTER, ON_FAILURE and PENDING (job.lua). Each transition of a dependency
-- settles its dependants in the same script: settle() after an ack (met),
-- a death (failed) or a departure without ack (gone). A job and the jobs
-- it waits for live in one slot (a sharded namespace refuses others), so
-- every key here is the script's own. Settling a job also counts its
-- finish in its batch (batch.lua), and so does settling each dependant
-- that goes dead or is deleted. A job sent dead so is counted dead
-- (counts.lua), so every script that settles takes ARGV[3] counts.
-- settle() returns what it settled, for the script's reply (settled.lua).
-- requires: keys calls job index ready news schedule bury topics held batch counts settled

local DEP_FAIL, DEP_CANCEL, DEP_RUN = 0, 1, 2

-- The ids a record's AFTER names, as a list.
local function after_ids(j)
  if not j[AFTER] then return {} end
  return list_unpack(j[AFTER])
end

-- Takes the waiting job `id` (record `j`) out of its topic's waiting set
-- and out of the dependants sets of the jobs it waits for.
local function unwait(id, j)
  redis.call('ZREM', twaiting_key(j[TOPIC]), id)
  for _, d in ipairs(after_ids(j)) do
    redis.call('SREM', dependants_key(d), id)
  end
  redis.call('HDEL', PENDING_COUNTS, id)
  j[PENDING] = nil
end

-- Counts one dependency of the waiting job `id` off. Returns its record
-- when that was the last (the job is free to run), nil while it still
-- waits. Only the last one reads and rewrites the record. A record written
-- by layout 8 holds its own count (PENDING) and has none in
-- PENDING_COUNTS; it counts off there.
local function count_off(id)
  if redis.call('HINCRBY', PENDING_COUNTS, id, -1) > 0 then return nil end
  redis.call('HDEL', PENDING_COUNTS, id)
  local j = job_read(id)
  if not (j and j[STATE] == ST_WAITING) then return nil end
  if j[PENDING] then
    j[PENDING] = j[PENDING] - 1
    if j[PENDING] > 0 then
      job_write(id, j)
      return nil
    end
    j[PENDING] = nil
  end
  return j
end

-- The last error of a job failed by dependency `dep` (contract_errors.h).
local function dependency_error(dep, outcome)
  if outcome == 'failed' then
    return "dependency '" .. dep .. "' failed"
  end
  return "dependency '" .. dep .. "' was cancelled"
end

-- Settles every job that waits for `id` after `outcome` ('met', 'failed'
-- or 'gone') at `now` (a number), and in turn the dependants of each one
-- that goes dead or is deleted so. `j`, the job's record as it finished
-- (nil for an ack, which counts its batch itself), and each such
-- dependant are counted in their batches. A list of work rather than
-- recursion: Lua's C stack bounds the depth of nested redis.call()s.
-- Returns the settled entries, in the order settled.
local function settle(id, outcome, now, j)
  local out = {}
  local function add(entry)
    if entry then out[#out + 1] = entry end
  end
  if j then add(finish_in_batch(id, j, outcome, now)) end
  local work = {{id, outcome}}
  while #work > 0 do
    local item = table.remove(work)
    local dep, what = item[1], item[2]
    local key = dependants_key(dep)
    local waiters = redis.call('SMEMBERS', key)
    if #waiters > 0 then redis.call('DEL', key) end
    -- Sorted, so the dead set's order does not depend on the set's hashing.
    table.sort(waiters)
    for _, w in ipairs(waiters) do
      -- A met dependency needs no look at the record until the last.
      local j = what ~= 'met' and job_read(w)
      if what == 'met' or (j and j[STATE] == ST_WAITING) then
        if what == 'met' or j[ON_FAILURE] == DEP_RUN then
          local free = count_off(w)
          if free then
            redis.call('ZREM', twaiting_key(free[TOPIC]), w)
            add(settled_entry(schedule(w, free, free[RUN_AT], now), w,
                              free[TOPIC]))
          end
        else
          unwait(w, j)
          if j[ON_FAILURE] == DEP_CANCEL then
            hold_id(w, j, now)
            forget(w, j[TOPIC])
            add(settled_entry('cancelled', w, j[TOPIC]))
            add(finish_in_batch(w, j, 'gone', now))
            table.insert(work, {w, 'gone'})
          else
            j[LAST_ERROR] = dependency_error(dep, what)
            bury(w, j, now)
            count('k', j[TOPIC], 1, now)
            add(settled_entry('dead', w, j[TOPIC], j[LAST_ERROR]))
            add(finish_in_batch(w, j, 'failed', now))
            table.insert(work, {w, 'failed'})
          end
        end
      end
    end
  end
  return out
end

-- What becomes of a new job that waits for the jobs `after` names
-- ({policy, id...}, as add is given it), `state_of(id)` telling each one's
-- state (a number, or 'gone' for a job of the batch that was not stored):
-- 'wait' and the ids still pending; 'run' (none pending); or 'cancel' or
-- 'fail' and the last error, as a dependency's death or departure would
-- settle it now. The first failed dependency decides.
local function await_fate(after, state_of)
  local policy = after[1]
  local pending = {}
  for k = 2, #after do
    local st = state_of(after[k])
    if st == ST_DEAD or st == 'gone' then
      if policy ~= DEP_RUN then
        local why = dependency_error(after[k],
                                     st == ST_DEAD and 'failed' or 'gone')
        return policy == DEP_CANCEL and 'cancel' or 'fail', why
      end
    elseif st ~= ST_DONE then
      pending[#pending + 1] = after[k]
    end
  end
  if #pending > 0 then return 'wait', pending end
  return 'run', nil
end
