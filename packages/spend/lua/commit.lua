-- The billing worker, after its transaction committed. KEYS: one owner hash.
-- ARGV: now, tombstone ttl ms, hash ttl s, n, then n field/value pairs (committed totals, raised
-- monotonically), then request ids of the batch for this owner. Skips a missing hash: it is rebuilt
-- from Postgres (which already holds this commit) before anyone reads it.
-- Per request: its pending cost (p:) is dropped, and an unsettled reservation (r:) is dropped and
-- leaves a tombstone (t:) so the late settle adds nothing. One HMGET of every field it reads, one
-- HDEL and one HSET of what changed (`_held` once, less the sum of the dropped amounts).
--#include arith
local h = KEYS[1]
if redis.call('EXISTS', h) == 0 then return 0 end
local n = tonumber(ARGV[4])
local first = 5 + 2 * n
local names = {'_held'}
for i = 0, n - 1 do names[2 + i] = ARGV[5 + 2 * i] end
local base = 2 + n - 2 * first
for i = first, #ARGV do
  local req = ARGV[i]
  names[base + 2 * i] = 'p:' .. req
  names[base + 2 * i + 1] = 'r:' .. req
end
local v = redis.call('HMGET', h, unpack(names))
local sets, dels, raised = {}, {}, {}
for i = 0, n - 1 do
  local f, val = ARGV[5 + 2 * i], ARGV[6 + 2 * i]
  local cur = raised[f]
  if cur == nil then cur = v[2 + i] end
  if (not cur) or gt(val, cur) then
    raised[f] = val
    sets[#sets + 1] = f
    sets[#sets + 1] = val
  end
end
local held = amount(v[1])
local writeHeld = false
local tomb
local gone = {}
for i = first, #ARGV do
  local j = base + 2 * i
  local pf, rf = names[j], names[j + 1]
  local p, r = v[j], v[j + 1]
  if p and not gone[pf] then
    gone[pf] = true
    dels[#dels + 1] = pf
    local amt = units(p)
    if amt ~= '0' then held = sub(held, amt); writeHeld = true end
  end
  if r and not gone[rf] then
    gone[rf] = true
    dels[#dels + 1] = rf
    local amt = units(r)
    if amt ~= '0' then held = sub(held, amt); writeHeld = true end
    tomb = tomb or ('0|' .. string.format('%d', ARGV[1] + ARGV[2]))
    sets[#sets + 1] = 't:' .. ARGV[i]
    sets[#sets + 1] = tomb
  end
end
--#include write-changes
redis.call('EXPIRE', h, ARGV[3])
return 1
