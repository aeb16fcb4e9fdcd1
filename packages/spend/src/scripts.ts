import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * The Lua scripts of the spend layout (see README.md for the design). Every amount is a
 * non-negative integer count of money units (1e-10 USD) written as a decimal string; the scripts
 * never do arithmetic on amounts in Lua numbers, so stored values stay exact int64s.
 *
 * Amounts are added, subtracted and compared as decimal strings (`add`, `sub`, `gt`), and `_held` is
 * written as the exact string sum (not HINCRBY, which is bounded by int64 ≈ 922 million USD), so
 * admission is exact at any amount; Lua numbers (doubles) are only used for timestamps.
 *
 * Owner hash fields (one hash per key, one per account):
 *   _ok      epoch ms the hash was (re)built from Postgres; absent = unknown, must be rebuilt
 *   _rb      a rebuild is under way (placeholder written before Postgres is read)
 *   _held    sum of the amounts of live r:/p: fields
 *   _gc      epoch ms of the next sweep for expired holds
 *   r:<req>  "<units>|<expires ms>" reservation made by admit (worst case); a short lease the proxy
 *            renews while the request lives (RENEW), so a crashed proxy's holds lapse within seconds
 *   p:<req>  "<units>|<expires ms>" pending cost left by settle until the worker counts it
 *   t:<req>  "0|<expires ms>" tombstone: the worker counted <req> before the proxy settled it
 *   key hash:     <period> (d2026-11-20, w2026-W47, m2026-11, all) -> committed spend
 *   account hash: usage, credits, postpaid (0/1), _v (settings version in Postgres)
 */
/**
 * What a script costs Redis is mostly per C call (bench/spend-scripts.ts, callgrind): every
 * `redis.call`, `tonumber`, `string.*` call and new string or table is about 1–6 thousand
 * instructions, every KEYS/ARGV element about 1 thousand, every helper defined in a script body a
 * closure made on every call. So the helpers below avoid C calls on the common path (canonical
 * amounts below 10^15 units), each script defines only the helpers it uses, and constants are not
 * parsed from ARGV more than once.
 */
const ARITH = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
-- a + b for non-negative decimal integer strings, exact at any length. Below 10^15 (operands of at
-- most 15 digits: $100,000 in units) both the operands and their sum are exact in a Lua double
-- (< 2^53), so the digit loop, the costliest part of the scripts, is only for larger amounts. The
-- operands are decimal strings; Lua's arithmetic reads them (as tonumber would, one C call fewer).
local function add(a, b)
  if #a < 16 and #b < 16 then return string.format('%d', a + b) end
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
  if #a < 16 then return string.format('%d', a - b) end
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
  if not v then return '0' end
  local c = string.byte(v)
  if c == nil or c == 45 then return '0' end
  if c ~= 48 then return v end
  local r = string.gsub(v, '^0+', '')
  if r == '' then return '0' end
  return r
end
-- The amount of a hold "<units>|<expires ms>".
local function units(v)
  return string.sub(v, 1, string.find(v, '|', 1, true) - 1)
end
`;

/** Hold helpers (admit's sweep, renew): a hold's amount and expiry, drop / hold one field. */
const HOLDS = `
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
`;
const PRELUDE = ARITH + HOLDS;

/**
 * KEYS: key hash, account hash [, key-cache record hash, rate-limit window counter].
 * ARGV: now, request id, worst case units, limit units ('' = no limit), period field,
 *       reservation ttl ms, key refresh ms, account refresh ms, gc interval ms, hash ttl s
 *       [, record version, counter ttl ms, rate limit ('' = none)].
 * Returns {code, keyTracked, accountTracked, keyFlag, accountFlag, expiredPending, count}:
 *   code 0 admitted (flags = stale, refresh in background), 1 key limit reached,
 *   2 credits exhausted, 3 rebuild needed (flags = which hash is missing, or was unbuilt by its
 *   sweep because a reservation lapsed: see gc); expiredPending: pending costs the sweeps of this
 *   call dropped after their TTL (never counted by billing).
 * With the two extra keys (the proxy's checked admission, no separate key-cache read): first the
 * key's cached record must still be at the caller's version in state ok — else code 4 (stale, nothing
 * counted or held) — then the request is counted in the key's window (count), code 5 when that is
 * over the rate limit (nothing held), and only then the admission above.
 */
const ADMIT = `${PRELUDE}
local count = 0
if #KEYS > 2 then
  local rec = redis.call('HMGET', KEYS[3], 'v', 's')
  if rec[1] ~= ARGV[11] or rec[2] ~= 'ok' then return {4, 0, 0, 0, 0, 0, 0} end
  count = redis.call('INCR', KEYS[4])
  if count == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[12]) end
  if ARGV[13] ~= '' and count > ARGV[13] + 0 then return {5, 0, 0, 0, 0, 0, count} end
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
local needKey = limited and not k[1]
local needAcct = not a[1]
if needKey or needAcct then return {3, 0, 0, needKey and 1 or 0, needAcct and 1 or 0, 0} end
local staleKey = (limited and now - k[1] - ARGV[7] > 0) and 1 or 0
local staleAcct = (now - a[1] - ARGV[8] > 0) and 1 or 0
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
local kHeld, kOld, kSwept, kLapsed, aHeld, aOld, aSwept, aLapsed
if limited then kHeld, kOld, kSwept, kLapsed = swept(KEYS[1], k[3], k[4], k[5]) end
if not postpaid then aHeld, aOld, aSwept, aLapsed = swept(KEYS[2], a[5], a[6], a[7]) end
if (kLapsed or 0) + (aLapsed or 0) > 0 then
  return {3, 0, 0, (kLapsed or 0) > 0 and 1 or 0, (aLapsed or 0) > 0 and 1 or 0, expired}
end
if limited then
  if gt(add(add(amount(k[2]), kHeld), worst), ARGV[4]) then
    return {1, 0, 0, staleKey, staleAcct, expired}
  end
end
if not postpaid then
  local credits = amount(a[3])
  -- Out of credits, or this request's own worst case does not fit in what is left.
  local used = add(amount(a[4]), aHeld)
  if (not gt(credits, used)) or gt(add(used, worst), credits) then
    return {2, 0, 0, staleKey, staleAcct, expired}
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
return {0, limited and 1 or 0, postpaid and 0 or 1, staleKey, staleAcct, expired}
end
local r = decide()
r[7] = count
return r
`;

/**
 * The one HDEL and one HSET of a settle or commit on hash `h`: the fields in `dels`, then `sets` with
 * `_held` (the running sum `held`) when `writeHeld`. Inlined text, not a Lua function: a helper is
 * re-created on every script call.
 */
const WRITE_CHANGES = `if #dels > 0 then redis.call('HDEL', h, unpack(dels)) end
if writeHeld then sets[#sets + 1] = '_held'; sets[#sets + 1] = held end
if #sets > 0 then redis.call('HSET', h, unpack(sets)) end`;

/**
 * Settles many requests in one call (the proxy batches the settles of a few milliseconds; see
 * `settleLingerMs`). KEYS: the owner hashes involved. ARGV: hash ttl s, then per hash of KEYS in
 * order: n, then n triples request id, cost units, pending expiry ms. A request appears at most once
 * per hash in a call (the store splits calls so).
 * Per member exactly what a settle of that request alone does: drop the reservation and, unless a
 * tombstone says the worker already counted the request, leave the real cost as `p:<request>` (a
 * zero cost leaves nothing). Per hash: one HMGET of every field the members read, one HDEL and one
 * HSET of what changed (`_held` once, with the running sum in member order). Returns the indexes
 * of hashes that could not be read (wrong type): their members were not settled, the others were.
 */
const SETTLE = `${ARITH}
local ttl = ARGV[1]
local i = 2
local failed = {}
for hi = 1, #KEYS do
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
    ${WRITE_CHANGES}
    -- An existing hash keeps its TTL (refreshed by admit's sweep); one that vanished meanwhile (flush,
    -- eviction) and was just re-created by the HSET above gets one, so it cannot linger forever.
    if not v[2] then redis.call('EXPIRE', h, ttl) end
  end
  i = i + 1 + 3 * n
end
return failed
`;

/**
 * Lease renewal for the live reservations of one proxy process (one call for all of them).
 * KEYS: owner hashes. ARGV: now, lease ms, hash ttl s, then per KEYS[i] four values: request id,
 * amount, kind ('k' key hash / 'a' account hash) and, for a key, its limit ('' = none) and period
 * field joined as "<limit>|<period>".
 * A live reservation gets a new expiry. One that lapsed (the process could not renew in time) is held
 * again, unless the worker already counted the request (tombstone) or it was settled (pending); if
 * holding it again puts the owner over its limit or credits (others were admitted into the gap), its
 * index is returned so the proxy stops that request: the hold stays (conservative) and no new work
 * is admitted on top of it.
 * Returns {renewed, over index...}.
 */
const RENEW = `${PRELUDE}
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
    elseif kind == 'k' then
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
`;

/**
 * The billing worker, after its transaction committed. KEYS: one owner hash.
 * ARGV: now, tombstone ttl ms, hash ttl s, n, then n field/value pairs (committed totals, raised
 * monotonically), then request ids of the batch for this owner. Skips a missing hash: it is rebuilt
 * from Postgres (which already holds this commit) before anyone reads it.
 * Per request: its pending cost (p:) is dropped, and an unsettled reservation (r:) is dropped and
 * leaves a tombstone (t:) so the late settle adds nothing. One HMGET of every field it reads, one
 * HDEL and one HSET of what changed (`_held` once, less the sum of the dropped amounts).
 */
const COMMIT = `${ARITH}
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
${WRITE_CHANGES}
redis.call('EXPIRE', h, ARGV[3])
return 1
`;

/** Rebuild step 1. KEYS: owner hash. ARGV: at ms, hash ttl s. */
const BEGIN_REBUILD = `
redis.call('HSET', KEYS[1], '_rb', ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 0
`;

/**
 * Rebuild step 2 for a key. KEYS: key hash. ARGV: at ms, hash ttl s, current day/week/month period,
 * n, then n period/total pairs read from Postgres after step 1. Old period fields are pruned.
 */
const LOAD_KEY = `
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
`;

/**
 * Rebuild step 2 for an account, and every credits/postpaid change. KEYS: account hash.
 * ARGV: mode ('load' | 'settings'), at ms, hash ttl s, usage units, credits units, postpaid 0/1, version.
 * Settings only move forward (version); usage only grows. 'settings' leaves a missing hash alone.
 */
const ACCOUNT = `
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
`;

class Script {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: Array<string | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).includes('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

export const scripts = {
  admit: new Script(ADMIT),
  settle: new Script(SETTLE),
  renew: new Script(RENEW),
  commit: new Script(COMMIT),
  beginRebuild: new Script(BEGIN_REBUILD),
  loadKey: new Script(LOAD_KEY),
  account: new Script(ACCOUNT),
} as const;
