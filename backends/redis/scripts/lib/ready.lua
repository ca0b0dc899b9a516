-- ready.lua — members of a ready set. Ready order is (priority, run_at,
-- seq). Doubles hold 53 bits, too few for all three, so the ready set keeps
-- score 0 and orders by member bytes: a 20-byte big-endian header of three
-- unsigned fields, each biased to be non-negative (priority + 2^31 in 4
-- bytes, run_at + 2^52 in 8, seq in 8), then the id. Big-endian unsigned
-- fields compare bytewise as numbers, and ZPOPMIN on equal scores pops the
-- bytewise smallest member. run_at is clamped to +-2^52 (as the client
-- clamps times), so run_at + 2^52 stays within the 2^53 that a double holds
-- exactly: every microsecond orders.
local READY_HEADER = 20
local RUN_AT_BIAS = 4503599627370496  -- 2^52
local function ready_member(priority, run_at, seq, id)
  local r = math.max(-RUN_AT_BIAS, math.min(RUN_AT_BIAS, run_at))
  return struct.pack('>I4I8I8', priority + 2147483648, r + RUN_AT_BIAS,
                     seq) .. id
end

local function member_id(member) return string.sub(member, READY_HEADER + 1) end
