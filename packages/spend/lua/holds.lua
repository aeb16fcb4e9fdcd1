-- Hold helpers (admit's sweep, renew): a hold's amount and expiry, drop / hold one field.
local function split(v)
  local i = string.find(v, '|', 1, true)
  return string.sub(v, 1, i - 1), tonumber(string.sub(v, i + 1))
end
local function drop(h, f)
  local v = redis.call('HGET', h, f)
  if not v then return false end
  local c = string.sub(f, 1, 2)
  if c == 'r:' or c == 'p:' then
    local amt = units(v)
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
-- Drops expired holds and tombstones; returns how many pending costs (p:) expired uncounted, and
-- how many reservations (r:) lapsed. A lapsed reservation is a request its proxy never settled (the
-- proxy died, or could not reach Redis — the settle failed): billing may have committed its cost to
-- Postgres while its Redis update failed too (Redis unreachable), so once the hold is gone the
-- counters may be short of Postgres. The hash is marked unbuilt (_ok removed): the next admission
-- rebuilds it from Postgres (a monotonic max) before deciding, never on the short counters.
local function gc(h, now, every)
  local nxt = redis.call('HGET', h, '_gc')
  if nxt and tonumber(nxt) > now then return 0, 0 end
  redis.call('HSET', h, '_gc', string.format('%d', now + every))
  local all = redis.call('HGETALL', h)
  local pending, lapsed = 0, 0
  for i = 1, #all, 2 do
    local f = all[i]
    local c = string.sub(f, 1, 2)
    if c == 'r:' or c == 'p:' or c == 't:' then
      local _, exp = split(all[i + 1])
      if exp <= now then
        drop(h, f)
        if c == 'p:' then pending = pending + 1 end
        if c == 'r:' then lapsed = lapsed + 1 end
      end
    end
  end
  if lapsed > 0 then redis.call('HDEL', h, '_ok') end
  return pending, lapsed
end
