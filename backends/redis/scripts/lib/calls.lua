-- calls.lua — arguments for redis.call().
--
-- Numbers passed to redis.call() travel as text: Redis formats a Lua number
-- argument with "%.17g", which costs several times the call's own work for
-- a 16-digit time, so scripts pass the caller's text through where they can
-- and format computed integers once with int_text().
local function int_text(n) return string.format('%d', n) end

-- redis.call(cmd, key, args...) in slices of at most 512 args (even, so
-- score/member pairs stay together), so a large batch never passes more
-- values than unpack() can spread. Without `key` the slices alone are the
-- arguments (DEL, EXISTS).
local function call_many(cmd, key, args)
  local n = #args
  for i = 1, n, 512 do
    local j = math.min(i + 511, n)
    if key then
      redis.call(cmd, key, unpack(args, i, j))
    else
      redis.call(cmd, unpack(args, i, j))
    end
  end
end
