-- Rebuild step 2 for a key. KEYS: key hash. ARGV: at ms, hash ttl s, current day/week/month period,
-- n, then n period/total pairs read from Postgres after step 1. Old period fields are pruned.
local h = KEYS[1]
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local cur = { d = ARGV[3], w = ARGV[4], m = ARGV[5] }
local fields = redis.call('HKEYS', h)
for _, f in ipairs(fields) do
  local c = string.sub(f, 1, 1)
  local p = cur[c]
  if p and string.sub(f, 2, 2) ~= ':' and #f == #p and f < p then redis.call('HDEL', h, f) end
end
local n = tonumber(ARGV[6])
for i = 0, n - 1 do
  local f, v = ARGV[7 + 2 * i], ARGV[8 + 2 * i]
  local old = redis.call('HGET', h, f)
  if (not old) or gt(v, old) then redis.call('HSET', h, f, v) end
end
redis.call('HSET', h, '_ok', ARGV[1])
redis.call('HDEL', h, '_rb')
redis.call('EXPIRE', h, tonumber(ARGV[2]))
return 0
