/**
 * The settle and commit scripts as they were before the batched settle (issue 11, main at 36e1744),
 * verbatim: one request per settle call, one HGET/HSET/HDEL per step. Tests only: the reference the
 * batched scripts must match field for field (settle-batch.test.ts).
 */
const PRELUDE = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
-- a + b for non-negative decimal integer strings, exact at any length. Below 10^15 (operands of at
-- most 15 digits: $100,000 in units) both the operands and their sum are exact in a Lua double
-- (< 2^53), so the digit loop, the costliest part of the scripts, is only for larger amounts.
local function add(a, b)
  if #a < 16 and #b < 16 then return string.format('%d', tonumber(a) + tonumber(b)) end
  local out, carry = {}, 0
  local i, j = #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + string.byte(a, i) - 48; i = i - 1 end
    if j > 0 then d = d + string.byte(b, j) - 48; j = j - 1 end
    out[#out + 1] = string.char(48 + d % 10)
    carry = (d - d % 10) / 10
  end
  local r = string.gsub(string.reverse(table.concat(out)), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- a - b for non-negative decimal integer strings (a >= b; '0' when b > a), exact at any length.
local function sub(a, b)
  if not gt(a, b) then return '0' end
  if #a < 16 then return string.format('%d', tonumber(a) - tonumber(b)) end
  local out, borrow = {}, 0
  local i, j = #a, #b
  while i > 0 do
    local d = string.byte(a, i) - 48 - borrow
    if j > 0 then d = d - (string.byte(b, j) - 48); j = j - 1 end
    if d < 0 then d = d + 10; borrow = 1 else borrow = 0 end
    out[#out + 1] = string.char(48 + d)
    i = i - 1
  end
  local r = string.gsub(string.reverse(table.concat(out)), '^0+', '')
  if r == '' then return '0' end
  return r
end
-- An amount field as a canonical non-negative decimal string (missing or negative -> '0').
local function amount(v)
  if (not v) or v == '' or string.sub(v, 1, 1) == '-' then return '0' end
  local r = string.gsub(v, '^0+', '')
  if r == '' then return '0' end
  return r
end
local function setmax(h, f, v)
  local cur = redis.call('HGET', h, f)
  if (not cur) or gt(v, cur) then redis.call('HSET', h, f, v) end
end
local function split(v)
  local i = string.find(v, '|', 1, true)
  return string.sub(v, 1, i - 1), tonumber(string.sub(v, i + 1))
end
local function drop(h, f)
  local v = redis.call('HGET', h, f)
  if not v then return false end
  local c = string.sub(f, 1, 2)
  if c == 'r:' or c == 'p:' then
    local amt = split(v)
    if amt ~= '0' then redis.call('HSET', h, '_held', sub(amount(redis.call('HGET', h, '_held')), amt)) end
  end
  redis.call('HDEL', h, f)
  return true
end
local function hold(h, f, amt, expires)
  drop(h, f)
  if amt == '0' then return end
  redis.call('HSET', h, f, amt .. '|' .. string.format('%d', expires))
  redis.call('HSET', h, '_held', add(amount(redis.call('HGET', h, '_held')), amt))
end
-- Drops expired holds and tombstones; returns how many pending costs (p:) expired uncounted.
local function gc(h, now, every)
  local nxt = redis.call('HGET', h, '_gc')
  if nxt and tonumber(nxt) > now then return 0 end
  redis.call('HSET', h, '_gc', string.format('%d', now + every))
  local all = redis.call('HGETALL', h)
  local pending = 0
  for i = 1, #all, 2 do
    local f = all[i]
    local c = string.sub(f, 1, 2)
    if c == 'r:' or c == 'p:' or c == 't:' then
      local _, exp = split(all[i + 1])
      if exp <= now then
        drop(h, f)
        if c == 'p:' then pending = pending + 1 end
      end
    end
  end
  return pending
end
`;

const SETTLE = `${PRELUDE}
local now = tonumber(ARGV[1])
local req = ARGV[2]
local cost = ARGV[3]
local rf, tf, pf = 'r:' .. req, 't:' .. req, 'p:' .. req
local function settle(h)
  local v = redis.call('HMGET', h, '_held', rf, tf, pf, '_ok')
  local held = amount(v[1])
  local changed = false
  if v[2] then
    local ra = split(v[2])
    if ra ~= '0' then held = sub(held, ra); changed = true end
  end
  if v[3] then
    -- The worker already counted the request (tombstone): no pending cost.
    redis.call('HDEL', h, rf, tf)
    if changed then redis.call('HSET', h, '_held', held) end
    return
  end
  if v[4] then
    local pa = split(v[4])
    if pa ~= '0' then held = sub(held, pa); changed = true end
  end
  if cost == '0' then
    if v[2] or v[4] then redis.call('HDEL', h, rf, pf) end
    if changed then redis.call('HSET', h, '_held', held) end
  else
    if v[2] then redis.call('HDEL', h, rf) end
    redis.call('HSET', h, pf, cost .. '|' .. string.format('%d', now + tonumber(ARGV[4])), '_held', add(held, cost))
  end
  -- An existing hash keeps its TTL (refreshed by admit's sweep); one that vanished meanwhile (flush,
  -- eviction) and was just re-created by the HSET above gets one, so it cannot linger forever.
  if not v[5] then redis.call('EXPIRE', h, tonumber(ARGV[7])) end
end
if ARGV[5] == '1' then settle(KEYS[1]) end
if ARGV[6] == '1' then settle(KEYS[2]) end
return 0
`;

const COMMIT = `${PRELUDE}
local h = KEYS[1]
if redis.call('EXISTS', h) == 0 then return 0 end
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  setmax(h, ARGV[5 + 2 * i], ARGV[6 + 2 * i])
end
local tomb = string.format('%d', now + tonumber(ARGV[2]))
for i = 5 + 2 * n, #ARGV do
  local req = ARGV[i]
  drop(h, 'p:' .. req)
  if drop(h, 'r:' .. req) then redis.call('HSET', h, 't:' .. req, '0|' .. tomb) end
end
redis.call('EXPIRE', h, tonumber(ARGV[3]))
return 1
`;

export const reference = { settle: SETTLE, commit: COMMIT } as const;
