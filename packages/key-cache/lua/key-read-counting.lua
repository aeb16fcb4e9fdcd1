-- The proxy's hot-path read: the record (HMGET v s d) and this request counted in the key's window
-- (INCR; the window's expiry set by its first request), as ONE command — one round trip, one command
-- for Redis to parse and one for the client to encode, where a MULTI-less pipeline of three was before.
-- Only a key the cache knows (`ok`, or `pending`: a known key being changed) is counted: a random or
-- unknown key costs no write (issue 23). KEYS: record hash, window counter. ARGV: counter ttl ms.
-- Returns {v, s, d, count} (count absent when not counted).
local r = redis.call('HMGET', KEYS[1], 'v', 's', 'd')
if r[2] == 'ok' or r[2] == 'pending' then
  local n = redis.call('INCR', KEYS[2])
  if n == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
  r[4] = n
end
return r
