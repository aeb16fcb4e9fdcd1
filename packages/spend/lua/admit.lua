-- KEYS: key hash, account hash, then in this order the ones the ARGV asks for:
--   [key-cache record hash, rate-limit window counter] (ARGV[11] ~= ''),
--   [key token-rate counter] (ARGV[14] ~= ''), [team hash] (ARGV[17] ~= ''),
--   [team token-rate counter] (ARGV[19] ~= '').
-- ARGV: 1 now, 2 request id, 3 worst case units, 4 key limit units ('' = no limit), 5 key period field,
--       6 reservation ttl ms, 7 key (and team) refresh ms, 8 account refresh ms, 9 gc interval ms,
--       10 hash ttl s, 11 record version ('' = no check), 12 counter ttl ms, 13 rate limit ('' = none),
--       14 key tokens-per-minute limit ('' = none), 15 worst-case tokens, 16 token counter ttl ms,
--       17 team limit units ('' = no team hold), 18 team period field,
--       19 team tokens-per-minute limit ('' = none). Trailing ones may be absent (= '').
-- Returns {code, keyTracked, accountTracked, keyFlag, accountFlag, expiredPending, count, teamTracked
-- or teamFlag, staleTeam}:
--   code 0 admitted (flags = stale, refresh in background), 1 key limit reached,
--   2 credits exhausted, 3 rebuild needed (flags = which hash is missing, or was unbuilt by its
--   sweep because a reservation lapsed: see gc; [8] = the team's), 7 the team's limit reached
--   (issue 29); expiredPending: pending costs the sweeps of this call dropped after their TTL.
-- With the check keys (the proxy's checked admission, no separate key-cache read): first the key's
-- cached record must still be at the caller's version in state ok — else code 4 (stale, nothing
-- counted or held) — then the request is counted in the key's window (count), code 5 when that is
-- over the rate limit (nothing held), and only then the admission.
-- The team (issue 29) is a third owner beside key and account, decided and reserved in the same
-- atomic step: `spent[team period] + held + worst case <= team limit`, like the key's.
-- Tokens per minute (issue 29): the key's (and the team's) counter of the current minute plus this
-- request's worst-case tokens must fit under the limit — else code 6 (key) / 8 (team), nothing
-- charged or held — and an admitted request (code 0) adds its worst-case tokens to both counters in
-- this call; settle gives back what the request did not use (settle.lua).
--#include arith
--#include holds

local count = 0
local checked = (ARGV[11] or '') ~= ''
local nk = 2
if checked then
  nk = 4
  local rec = redis.call('HMGET', KEYS[3], 'v', 's')
  if rec[1] ~= ARGV[11] or rec[2] ~= 'ok' then return {4, 0, 0, 0, 0, 0, 0} end
  count = redis.call('INCR', KEYS[4])
  if count == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[12]) end
  if ARGV[13] ~= '' and count > ARGV[13] + 0 then return {5, 0, 0, 0, 0, 0, count} end
end
local keyTpm, teamHash, teamTpm = false, false, false
if (ARGV[14] or '') ~= '' then nk = nk + 1; keyTpm = KEYS[nk] end
if (ARGV[17] or '') ~= '' then nk = nk + 1; teamHash = KEYS[nk] end
if (ARGV[19] or '') ~= '' then nk = nk + 1; teamTpm = KEYS[nk] end
local tokens = (keyTpm or teamTpm) and (ARGV[15] + 0) or 0
if keyTpm and tonumber(redis.call('GET', keyTpm) or '0') + tokens > ARGV[14] + 0 then
  return {6, 0, 0, 0, 0, 0, count}
end
if teamTpm and tonumber(redis.call('GET', teamTpm) or '0') + tokens > ARGV[19] + 0 then
  return {8, 0, 0, 0, 0, 0, count}
end
local function decide()
-- Numbers from ARGV and fields are read by Lua's arithmetic (one C call fewer than tonumber).
local now = ARGV[1] + 0
local req = ARGV[2]
local worst = ARGV[3]
local limited = ARGV[4] ~= ''
local rf = 'r:' .. req
-- Everything the decision reads, one HMGET per hash (the hot path: see docs/architecture.md).
local a = redis.call('HMGET', KEYS[2], '_ok', 'postpaid', 'credits', 'usage', '_held', '_gc', rf)
local k = {false, false, false, false, false}
if limited then k = redis.call('HMGET', KEYS[1], '_ok', ARGV[5], '_held', '_gc', rf) end
local t = {false, false, false, false, false}
if teamHash then t = redis.call('HMGET', teamHash, '_ok', ARGV[18], '_held', '_gc', rf) end
local needKey = limited and not k[1]
local needAcct = not a[1]
local needTeam = teamHash and not t[1]
if needKey or needAcct or needTeam then
  return {3, 0, 0, needKey and 1 or 0, needAcct and 1 or 0, 0, 0, needTeam and 1 or 0}
end
local staleKey = (limited and now - k[1] - ARGV[7] > 0) and 1 or 0
local staleAcct = (now - a[1] - ARGV[8] > 0) and 1 or 0
local staleTeam = (teamHash and now - t[1] - ARGV[7] > 0) and 1 or 0
local postpaid = a[2] == '1'
-- The sweep for expired holds, when due (every gc interval): it changes _held, so read it again.
local expired = 0
-- The hash's TTL is refreshed with the sweep (at least every gc interval while the hash is used),
-- not on every admit: an HSET keeps the TTL of an existing hash. A sweep that dropped a lapsed
-- reservation unbuilt the hash (see gc): the decision waits for its rebuild from Postgres (code 3).
local function swept(h, held, gcAt, old)
  if gcAt and gcAt - now > 0 then return amount(held), old, false, 0 end
  local p, l = gc(h, now, ARGV[9] + 0)
  expired = expired + p
  local v = redis.call('HMGET', h, '_held', rf)
  return amount(v[1]), v[2], true, l
end
local kHeld, kOld, kSwept, kLapsed, aHeld, aOld, aSwept, aLapsed, tHeld, tOld, tSwept, tLapsed
if limited then kHeld, kOld, kSwept, kLapsed = swept(KEYS[1], k[3], k[4], k[5]) end
if not postpaid then aHeld, aOld, aSwept, aLapsed = swept(KEYS[2], a[5], a[6], a[7]) end
if teamHash then tHeld, tOld, tSwept, tLapsed = swept(teamHash, t[3], t[4], t[5]) end
if (kLapsed or 0) + (aLapsed or 0) + (tLapsed or 0) > 0 then
  return {3, 0, 0, (kLapsed or 0) > 0 and 1 or 0, (aLapsed or 0) > 0 and 1 or 0, expired, 0,
    (tLapsed or 0) > 0 and 1 or 0}
end
if limited then
  if gt(add(add(amount(k[2]), kHeld), worst), ARGV[4]) then
    return {1, 0, 0, staleKey, staleAcct, expired, 0, 0, staleTeam}
  end
end
if teamHash then
  if gt(add(add(amount(t[2]), tHeld), worst), ARGV[17]) then
    return {7, 0, 0, staleKey, staleAcct, expired, 0, 0, staleTeam}
  end
end
if not postpaid then
  local credits = amount(a[3])
  -- Out of credits, or this request's own worst case does not fit in what is left.
  local used = add(amount(a[4]), aHeld)
  if (not gt(credits, used)) or gt(add(used, worst), credits) then
    return {2, 0, 0, staleKey, staleAcct, expired, 0, 0, staleTeam}
  end
end
-- hold() with what was read: the reservation and the new _held in one HSET.
local expiresAt = string.format('%d', now + ARGV[6])
local function reserve(h, held, old)
  if old then
    local oa = units(old)
    if oa ~= '0' then held = sub(held, oa) end
  end
  if worst == '0' then
    if old then
      redis.call('HDEL', h, rf)
      if units(old) ~= '0' then redis.call('HSET', h, '_held', held) end
    end
    return
  end
  redis.call('HSET', h, rf, worst .. '|' .. expiresAt, '_held', add(held, worst))
end
local ttl = ARGV[10]
if limited then
  reserve(KEYS[1], kHeld, kOld)
  if kSwept then redis.call('EXPIRE', KEYS[1], ttl) end
end
if not postpaid then
  reserve(KEYS[2], aHeld, aOld)
  if aSwept then redis.call('EXPIRE', KEYS[2], ttl) end
end
if teamHash then
  reserve(teamHash, tHeld, tOld)
  if tSwept then redis.call('EXPIRE', teamHash, ttl) end
end
return {0, limited and 1 or 0, postpaid and 0 or 1, staleKey, staleAcct, expired, 0,
  teamHash and 1 or 0, staleTeam}
end
local r = decide()
r[7] = count
if r[1] == 0 and tokens > 0 then
  for _, c in ipairs({keyTpm, teamTpm}) do
    if c and redis.call('INCRBY', c, tokens) == tokens then redis.call('PEXPIRE', c, ARGV[16]) end
  end
end
return r
