import { isUuid } from '@tollgate/contracts';
import { lastUsedHashKey } from '@tollgate/key-cache';
import type { RedisClient } from '@tollgate/redis';

// Atomically takes the whole hash: readers after this see nothing pending, writers start a new hash.
const TAKE_SCRIPT = `
local v = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return v
`;

// Puts values back after a failed flush, keeping the newest value per key.
const RESTORE_SCRIPT = `
for i = 1, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if not cur or cur < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
`;

interface LastUsedEntry {
  id: string;
  at: Date;
}

/**
 * The `<prefix>key-last-used` hash (keyId → epoch ms) the proxy writes on every successful
 * authentication; the keys service moves it to Postgres in batches.
 */
export interface LastUsedStore {
  /** Not yet flushed values for these key ids. Best effort: empty when Redis is unreachable. */
  pending(ids: readonly string[]): Promise<Map<string, Date>>;
  /** Atomically removes and returns every pending value (malformed entries are dropped). */
  take(): Promise<LastUsedEntry[]>;
  /** Puts entries back (newest wins) after a failed flush. */
  restore(entries: readonly LastUsedEntry[]): Promise<void>;
}

const parseMs = (value: string | null | undefined): Date | null => {
  if (!value || !/^\d{1,15}$/.test(value)) return null;
  const d = new Date(Number(value));
  return Number.isNaN(d.getTime()) ? null : d;
};

export function createLastUsedStore(redis: RedisClient, prefix: string): LastUsedStore {
  const hashKey = lastUsedHashKey(prefix);
  return {
    async pending(ids) {
      const out = new Map<string, Date>();
      if (ids.length === 0) return out;
      try {
        const values = await redis.hmget(hashKey, ...ids);
        ids.forEach((id, i) => {
          const at = parseMs(values[i]);
          if (at) out.set(id, at);
        });
      } catch {
        // Redis down: responses fall back to the flushed value in Postgres.
      }
      return out;
    },
    async take() {
      const flat = (await redis.eval(TAKE_SCRIPT, 1, hashKey)) as string[];
      const newest = new Map<string, Date>();
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const id = flat[i]!.toLowerCase();
        const at = parseMs(flat[i + 1]);
        if (!isUuid(id) || !at) continue;
        const cur = newest.get(id);
        if (!cur || cur < at) newest.set(id, at);
      }
      return [...newest].map(([id, at]) => ({ id, at }));
    },
    async restore(entries) {
      if (entries.length === 0) return;
      const args = entries.flatMap((e) => [e.id, String(e.at.getTime())]);
      await redis.eval(RESTORE_SCRIPT, 1, hashKey, ...args);
    },
  };
}

/** The later of the flushed and the pending value. */
export function latest(a: Date | null, b: Date | undefined): Date | null {
  if (!b) return a;
  if (!a) return b;
  return a > b ? a : b;
}
