-- spec.lua — a job's fixed settings. The client packs them into one hash
-- field, "spec" = "priority:max_attempts:ttr_us:kind:base_us:max_us"
-- (kind:base_us:max_us is the backoff), and only the C++ side reads most of
-- it: one field instead of five makes every write and every full read of a
-- job cheaper. Scripts take out the three numbers they need. The payload
-- keeps a field of its own, so a job with a payload of up to 64 bytes stays
-- in Redis's compact hash encoding (hash-max-listpack-value).
local function spec_priority(spec)
  return tonumber(string.match(spec, '^(-?%d+):'))
end

local function spec_max_attempts(spec)
  return tonumber(string.match(spec, '^-?%d+:(%d+):'))
end

local function spec_ttr(spec)
  return tonumber(string.match(spec, '^-?%d+:%d+:(%d+):'))
end
