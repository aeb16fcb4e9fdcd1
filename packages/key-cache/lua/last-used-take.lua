-- Atomically takes a whole last-used hash (the keys service's flush, services/keys/src/last-used/):
-- readers after this see nothing pending, writers start a new hash. KEYS: the hash.
local v = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return v
