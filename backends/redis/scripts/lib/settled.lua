-- settled.lua — how a script tells its caller of the jobs it settled
-- (delayq/backend.h's Settled): a dependant released, sent dead or deleted
-- when a job it waited for was acked, died or left (depend.lua), or a
-- batch's completion job released (batch.lua). Each is an entry
-- {word, state, id, topic, error}: word is "settled"; state is "ready",
-- "delayed", "dead" or "cancelled"; error is the last error of a dead one
-- ("" for the others).
-- A reply carries them after its own words, a transition after its four
-- fields (the jobs that move settled), a moved list among its transitions.

-- The entry of job `id` of `topic`, settled as `state`.
local function settled_entry(state, id, topic, error)
  return {'settled', state, id, topic, error or ''}
end

-- Appends the entries of `list` to `reply` and returns `reply`.
local function with_settled(reply, list)
  for _, e in ipairs(list) do reply[#reply + 1] = e end
  return reply
end
