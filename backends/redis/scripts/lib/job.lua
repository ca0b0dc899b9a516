-- job.lua — a job's record: the value of its id in the hash JOBS, one
-- MessagePack value after another (cmsgpack.pack(v1, v2, ...)), in this
-- order (the C++ side decodes it, replies.h kRecordFields):
-- requires: keys
local TOPIC, STATE, PRIORITY, MAX_ATTEMPTS, TTR = 1, 2, 3, 4, 5
-- BACKOFF_KIND (0 fixed, 1 exponential), BACKOFF_BASE, BACKOFF_MAX = 6, 7, 8
local ENQUEUED_AT, RUN_AT, SEQ_NO, PAYLOAD = 9, 10, 11, 12
local ATTEMPTS, DEADLINE, TOKEN, LAST_ERROR = 13, 14, 15, 16
-- EXPIRE_AT (µs), DISCARD (1 or nil), UNIQUE_FOR (µs) = 17, 18, 19
local EXPIRE_AT, DISCARD, UNIQUE_FOR = 17, 18, 19
-- KEEP_FOR (µs), KEEP_AT_MOST = 20, 21: retention once acknowledged
-- (done.lua); FINISHED_AT (µs) = 22: when the job died or was acknowledged,
-- set while dead or done; RESULT = 23: the worker's result, while done.
local KEEP_FOR, KEEP_AT_MOST, FINISHED_AT, RESULT = 20, 21, 22, 23
-- HOLDER = 24: who holds the lease (ReserveReport::holder), RESERVED_AT
-- (µs) = 25: when it was reserved; set while reserved only (job_pack()
-- drops them from a record that is not).
local HOLDER, RESERVED_AT = 24, 25
-- AFTER = 26: the ids of the jobs it waits for (JobOptions::after), as
-- MessagePack values one after another in one string; ON_FAILURE = 27: its
-- on_dependency_failure (0 fail, 1 cancel, 2 run); PENDING = 28: how many
-- of them it still waits for, while waiting, in a record written by layout
-- 8 only (later ones keep that count in PENDING_COUNTS, keys.lua). Only a
-- job with dependencies has them (depend.lua).
local AFTER, ON_FAILURE, PENDING = 26, 27, 28
-- BATCH_OF = 29: the batch a job joined (JobOptions::batch), until its
-- finish is counted there (batch.lua). A batch's completion job holds the
-- batch itself: BATCH_CLOSED (0 or 1), BATCH_TOTAL, BATCH_DONE, BATCH_DEAD
-- and BATCH_CANCELLED = 30..34, its jobs and how they finished.
local BATCH_OF, BATCH_CLOSED, BATCH_TOTAL = 29, 30, 31
local BATCH_DONE, BATCH_DEAD, BATCH_CANCELLED = 32, 33, 34
-- Times and ttr are integer µs. Priority to backoff (3..8) are the job's
-- fixed settings, packed by the C++ side ("spec", an ARGV of add) and
-- copied in whole; BACKOFF_KIND carries the jitter too (src/common/backoff_code.h).
-- A record ends after PAYLOAD until the first reservation; then
-- ATTEMPTS..LAST_ERROR follow, nil (one byte each) where unset. A job that
-- expires or has a dedup window has all of them and EXPIRE_AT..UNIQUE_FOR
-- from the start, a job with a keep_for KEEP_FOR and KEEP_AT_MOST too.
-- TOKEN is the lease's while reserved and the order of acknowledgement
-- while done (done.lua). One
-- value in one shared hash instead of a hash per job: no key, no object,
-- no field names per job, and MessagePack writes small integers in one
-- byte and times in nine (see README.md, "Footprint").
--
-- STATE values, as kRecordStates in replies.h:
local ST_DELAYED, ST_READY, ST_RESERVED, ST_DEAD, ST_DONE = 0, 1, 2, 3, 4
local ST_WAITING = 5
local STATE_NAMES = {[0] = 'delayed', 'ready', 'reserved', 'dead', 'done',
                     'waiting'}

-- The record of `id` as a table indexed by the names above, or nil.
local function job_read(id)
  local r = redis.call('HGET', JOBS, id)
  if not r then return nil end
  return {cmsgpack.unpack(r)}
end

-- The record of a table as job_read() returns it: up to its last value
-- that is set, and at least to PAYLOAD. A lease's holder goes with the
-- lease.
local function job_pack(j)
  if j[STATE] ~= ST_RESERVED then j[HOLDER], j[RESERVED_AT] = nil, nil end
  for last = BATCH_CANCELLED, ATTEMPTS, -1 do
    if j[last] ~= nil then return cmsgpack.pack(unpack(j, 1, last)) end
  end
  return cmsgpack.pack(unpack(j, 1, PAYLOAD))
end

local function job_write(id, j) redis.call('HSET', JOBS, id, job_pack(j)) end

-- A list as MessagePack values one after another (AFTER, and add's list of
-- dependencies), from `first` on, and back, 512 values at a time: Lua's
-- unpack() and cmsgpack.unpack() both refuse a few thousand values in one
-- call, and a job may wait for 10,000 (kMaxDependencies).
local function list_pack(list, first)
  local parts = {}
  for i = first or 1, #list, 512 do
    parts[#parts + 1] = cmsgpack.pack(unpack(list, i, math.min(i + 511, #list)))
  end
  return table.concat(parts)
end

local function list_unpack(s)
  local list, offset = {}, 0
  while offset >= 0 do
    local got = {cmsgpack.unpack_limit(s, 512, offset)}
    offset = got[1]
    for k = 2, #got do list[#list + 1] = got[k] end
  end
  return list
end
