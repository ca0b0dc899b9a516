-- ready.lua — members of a ready set. Ready order is (priority, run_at,
-- seq). Doubles hold 53 bits, too few for all three, so the ready set keeps
-- score 0 and orders by member bytes: three fixed-width hex fields, each
-- biased to be non-negative, then the id. ZPOPMIN on equal scores pops the
-- lexicographically smallest member.
local READY_HEADER = 40
local function ready_member(priority, run_at, seq, id)
  return string.format('%08x%016x%016x', priority + 2147483648,
                       run_at + 9007199254740992, seq) .. id
end

local function member_id(member) return string.sub(member, READY_HEADER + 1) end
