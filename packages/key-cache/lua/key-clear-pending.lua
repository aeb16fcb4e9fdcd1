-- Removes a pending marker left by a change that rolled back (only if still at that version).
-- KEYS: the record hash. ARGV: version.
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] and redis.call('HGET', KEYS[1], 's') == 'pending' then
  return redis.call('DEL', KEYS[1])
end
return 0
