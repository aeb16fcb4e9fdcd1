-- Puts last-used values back after a failed flush, keeping the newest value per key.
-- KEYS: the hash. ARGV: key id, epoch ms, key id, epoch ms, …
for i = 1, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if not cur or cur < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
