-- Writes a key's cache record (packages/key-cache/src/index.ts `write`).
-- KEYS: the record hash. ARGV: version, state, data, ttl (s), mode.
-- mode 'cas': write if no entry or the entry's version <= ARGV version; 'nx': write only if there is
-- no entry (the negative cache).
local cur = redis.call('HGET', KEYS[1], 'v')
if ARGV[5] == 'nx' then
  if cur then return 0 end
elseif cur and tonumber(cur) > tonumber(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 's', ARGV[2], 'd', ARGV[3])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
