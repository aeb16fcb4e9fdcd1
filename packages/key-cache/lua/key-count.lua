-- One request counted in a window (a key found by the keys service after a cache miss).
-- KEYS: the window counter. ARGV: counter ttl ms. Returns the count.
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
