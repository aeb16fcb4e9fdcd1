-- Rebuild step 2 for an account, and every credits/postpaid change. KEYS: account hash.
-- ARGV: mode ('load' | 'settings'), at ms, hash ttl s, usage units, credits units, postpaid 0/1, version.
-- Settings only move forward (version); usage only grows. 'settings' leaves a missing hash alone.
local h = KEYS[1]
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
if ARGV[1] == 'settings' and redis.call('EXISTS', h) == 0 then return 0 end
local v = redis.call('HGET', h, '_v')
if (not v) or tonumber(ARGV[7]) >= tonumber(v) then
  redis.call('HSET', h, 'credits', ARGV[5], 'postpaid', ARGV[6], '_v', ARGV[7])
end
if ARGV[1] == 'load' then
  local u = redis.call('HGET', h, 'usage')
  if (not u) or gt(ARGV[4], u) then redis.call('HSET', h, 'usage', ARGV[4]) end
  redis.call('HSET', h, '_ok', ARGV[2])
  redis.call('HDEL', h, '_rb')
  redis.call('EXPIRE', h, tonumber(ARGV[3]))
end
return 1
