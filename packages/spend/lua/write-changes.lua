-- The one HDEL and one HSET of a settle or commit on hash `h`: the fields in `dels`, then `sets` with
-- `_held` (the running sum `held`) when `writeHeld`. Inlined text, not a Lua function: a helper is
-- re-created on every script call.
if #dels > 0 then redis.call('HDEL', h, unpack(dels)) end
if writeHeld then sets[#sets + 1] = '_held'; sets[#sets + 1] = held end
if #sets > 0 then redis.call('HSET', h, unpack(sets)) end
