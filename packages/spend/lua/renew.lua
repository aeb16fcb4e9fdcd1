-- Lease renewal for the live reservations of one proxy process (one call for all of them).
-- KEYS: owner hashes. ARGV: now, lease ms, hash ttl s, then per KEYS[i] four values: request id,
-- amount, kind ('k' key hash / 't' team hash / 'a' account hash) and, for a key or a team, its
-- limit ('' = none) and period field joined as "<limit>|<period>".
-- A live reservation gets a new expiry. One that lapsed (the process could not renew in time) is held
-- again, unless the worker already counted the request (tombstone) or it was settled (pending); if
-- holding it again puts the owner over its limit or credits (others were admitted into the gap), its
-- index is returned so the proxy stops that request: the hold stays (conservative) and no new work
-- is admitted on top of it.
-- Returns {renewed, over index...}.
--#include arith
--#include holds

local now = tonumber(ARGV[1])
local expires = now + tonumber(ARGV[2])
local expiresAt = string.format('%d', expires)
local ttl = ARGV[3]
local renewed = 0
local out = {0}
local seen, touched = {}, {}
for i = 1, #KEYS do
  local h = KEYS[i]
  local req = ARGV[4 * i]
  local amt = ARGV[4 * i + 1]
  local kind = ARGV[4 * i + 2]
  local cap = ARGV[4 * i + 3]
  local v = redis.call('HGET', h, 'r:' .. req)
  if v then
    redis.call('HSET', h, 'r:' .. req, units(v) .. '|' .. expiresAt)
    renewed = renewed + 1
  elseif redis.call('HEXISTS', h, 't:' .. req) == 0 and redis.call('HEXISTS', h, 'p:' .. req) == 0 then
    hold(h, 'r:' .. req, amt, expires)
    local held = amount(redis.call('HGET', h, '_held'))
    local over = false
    if amt == '0' then
      over = false
    elseif kind == 'k' or kind == 't' then
      local j = string.find(cap, '|', 1, true)
      local limit = string.sub(cap, 1, j - 1)
      if limit ~= '' then
        over = gt(add(amount(redis.call('HGET', h, string.sub(cap, j + 1))), held), limit)
      end
    else
      local acct = redis.call('HMGET', h, 'postpaid', 'credits', 'usage')
      if acct[1] ~= '1' then over = gt(add(amount(acct[3]), held), amount(acct[2])) end
    end
    if over then out[#out + 1] = i end
  end
  if not seen[h] then
    seen[h] = true
    touched[#touched + 1] = h
  end
end
-- Each hash's TTL once (a process's leases mostly share a few hashes).
for _, h in ipairs(touched) do redis.call('EXPIRE', h, ttl) end
out[1] = renewed
return out
