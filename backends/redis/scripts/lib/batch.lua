-- batch.lua — batches (delayq/batch.h). A batch is its completion job's
-- record: the job waits (ST_WAITING, in its topic's waiting set) and holds
-- BATCH_CLOSED..BATCH_CANCELLED (job.lua); the batch leaves with it,
-- whichever way. A job of the batch holds BATCH_OF until the script that
-- first finishes it (ack, death, departure) counts it here, in that same
-- call; the count that leaves a closed batch with nothing pending releases
-- the completion job, as a dependency's last ack releases a waiting job.
-- The jobs of a batch and its completion job live in one slot (a sharded
-- namespace refuses others), so every key here is the script's own.
--
-- A batch that left the store (its completion job cancelled while waiting)
-- leaves its unfinished jobs holding BATCH_OF; a batch opened later under
-- the same id must not count them. Each job's SEQ_NO comes from the slot's
-- one counter, as it is stored, and never changes: a job of the batch was
-- added after its completion job, and a later batch of the id opened after
-- every job of the earlier one. So a job counts in the batch only when its
-- SEQ_NO is above the completion job's: one comparison when the job
-- finishes, rather than clearing BATCH_OF in every job of the batch (up to
-- 10,000 and more) in the script that drops it. Records of layout 9 hold
-- the same values, so no layout changes.
-- The steps that release a completion job return its settled entry
-- (settled.lua), nil when they release none.
-- requires: keys job schedule settled

-- The count each way of finishing adds to (depend.lua's outcomes).
local BATCH_COUNT = {met = BATCH_DONE, failed = BATCH_DEAD,
                     gone = BATCH_CANCELLED}

-- Whether completion record `c` is a closed batch with nothing pending.
local function batch_complete(c)
  return c[BATCH_CLOSED] == 1 and
         c[BATCH_TOTAL] == c[BATCH_DONE] + c[BATCH_DEAD] + c[BATCH_CANCELLED]
end

-- Writes completion record `c` of batch `id` back, releasing the waiting
-- job (ready, or delayed until its run_at) when its batch is complete.
local function batch_write(id, c, now)
  if c[STATE] == ST_WAITING and batch_complete(c) then
    redis.call('ZREM', twaiting_key(c[TOPIC]), id)
    return settled_entry(schedule(id, c, c[RUN_AT], now), id, c[TOPIC])
  end
  job_write(id, c)
  return nil
end

-- Counts a job of batch `batch`, stored as `seq` (its SEQ_NO), that
-- finished with `outcome` ('met', 'failed' or 'gone'; 'withdrawn' takes it
-- out of the batch, as if it had never joined) at `now` (a number). A
-- batch whose completion job has left the store counts nothing, nor does
-- a later batch of the same id (see above).
local function count_in_batch(batch, seq, outcome, now)
  local c = job_read(batch)
  if not c or not c[BATCH_TOTAL] or c[SEQ_NO] >= seq then return nil end
  if outcome == 'withdrawn' then
    c[BATCH_TOTAL] = c[BATCH_TOTAL] - 1
  else
    local k = BATCH_COUNT[outcome]
    c[k] = c[k] + 1
  end
  return batch_write(batch, c, now)
end

-- Counts job `id` (record `j`, as it finished with `outcome`) in its batch
-- when it has one and was not counted yet. A dead job stays in the store:
-- its record is written again without BATCH_OF, so a kick and a later ack
-- do not count it twice.
local function finish_in_batch(id, j, outcome, now)
  local batch = j[BATCH_OF]
  if not batch then return nil end
  j[BATCH_OF] = nil
  if outcome == 'failed' then job_write(id, j) end
  return count_in_batch(batch, j[SEQ_NO], outcome, now)
end
