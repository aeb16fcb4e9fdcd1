-- Settles many requests in one call (the proxy batches the settles of a few milliseconds; see
-- `settleLingerMs`). KEYS: the owner hashes involved (key, team, account hashes), then the
-- token-rate counters to correct. ARGV: hash ttl s, number of owner hashes H, then per hash of KEYS
-- in order: n, then n triples request id, cost units, pending expiry ms; then per counter of KEYS
-- (after the H hashes) the tokens to give back. A request appears at most once per hash in a call
-- (the store splits calls so).
-- Per member exactly what a settle of that request alone does: drop the reservation and, unless a
-- tombstone says the worker already counted the request, leave the real cost as `p:<request>` (a
-- zero cost leaves nothing). Per hash: one HMGET of every field the members read, one HDEL and one
-- HSET of what changed (`_held` once, with the running sum in member order). Returns the indexes
-- of hashes that could not be read (wrong type): their members were not settled, the others were.
-- Token-rate correction (issue 29): admission charged each request's worst-case tokens to its key's
-- (and team's) counter of the admission minute; settle gives back the difference to the tokens the
-- request used (never below zero; a counter already expired, its minute over, is left alone).
--#include arith
local ttl = ARGV[1]
local nh = tonumber(ARGV[2])
local i = 3
local failed = {}
for hi = 1, nh do
  local h = KEYS[hi]
  local n = tonumber(ARGV[i])
  local names = {'_held', '_ok'}
  for m = 0, n - 1 do
    local req = ARGV[i + 1 + 3 * m]
    local b = 3 + 3 * m
    names[b] = 'r:' .. req
    names[b + 1] = 't:' .. req
    names[b + 2] = 'p:' .. req
  end
  -- A hash that cannot be read (not a hash) fails its own members only: reported, nothing written.
  local v = redis.pcall('HMGET', h, unpack(names))
  if v.err then
    failed[#failed + 1] = hi
  else
    local held = amount(v[1])
    local writeHeld = false
    local dels, sets = {}, {}
    for m = 0, n - 1 do
      local b = 3 + 3 * m
      local r, t, p = v[b], v[b + 1], v[b + 2]
      local cost = ARGV[i + 2 + 3 * m]
      if r then
        dels[#dels + 1] = names[b]
        local ra = units(r)
        if ra ~= '0' then held = sub(held, ra); writeHeld = true end
      end
      if t then
        -- The worker already counted the request (tombstone): no pending cost.
        dels[#dels + 1] = names[b + 1]
      else
        if p then
          local pa = units(p)
          if pa ~= '0' then held = sub(held, pa); writeHeld = true end
        end
        if cost == '0' then
          if p then dels[#dels + 1] = names[b + 2] end
        else
          sets[#sets + 1] = names[b + 2]
          sets[#sets + 1] = cost .. '|' .. ARGV[i + 3 + 3 * m]
          held = add(held, cost)
          writeHeld = true
        end
      end
    end
    --#include write-changes
    -- An existing hash keeps its TTL (refreshed by admit's sweep); one that vanished meanwhile (flush,
    -- eviction) and was just re-created by the HSET above gets one, so it cannot linger forever.
    if not v[2] then redis.call('EXPIRE', h, ttl) end
  end
  i = i + 1 + 3 * n
end
for c = nh + 1, #KEYS do
  local back = tonumber(ARGV[i])
  i = i + 1
  if back > 0 and redis.call('EXISTS', KEYS[c]) == 1 then
    local left = redis.call('DECRBY', KEYS[c], back)
    if left < 0 then redis.call('INCRBY', KEYS[c], -left) end
  end
end
return failed
