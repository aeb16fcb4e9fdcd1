-- Rebuild step 1. KEYS: owner hash. ARGV: at ms, hash ttl s.
redis.call('HSET', KEYS[1], '_rb', ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 0
