import { isUuid } from '@tollgate/contracts';
import {
  LAST_USED_SCRIPTS,
  lastUsedHashKey,
  lastUsedHashKeys,
  legacyLastUsedHashKey,
} from '@tollgate/key-cache';
import type { RedisClient } from '@tollgate/redis';

const { take: TAKE_SCRIPT, restore: RESTORE_SCRIPT } = LAST_USED_SCRIPTS;

interface LastUsedEntry {
  id: string;
  at: Date;
}

/**
 * The `<prefix>key-last-used:{<bucket>}` hashes (keyId → epoch ms, 16 buckets by key id, each its own
 * slot on a Redis Cluster) the proxy writes on successful authentications; the keys service moves
 * them to Postgres in batches. The single `<prefix>key-last-used` hash of older releases is drained
 * with them, so an upgrade loses nothing.
 */
export interface LastUsedStore {
  /** Not yet flushed values for these key ids. Best effort: empty when Redis is unreachable. */
  pending(ids: readonly string[]): Promise<Map<string, Date>>;
  /**
   * Removes and returns every pending value, each hash atomically (malformed entries are dropped).
   * A hash that cannot be reached keeps its values for the next flush; throws only if none could.
   */
  take(): Promise<LastUsedEntry[]>;
  /** Puts entries back (newest wins) after a failed flush. */
  restore(entries: readonly LastUsedEntry[]): Promise<void>;
}

const parseMs = (value: string | null | undefined): Date | null => {
  if (!value || !/^\d{1,15}$/.test(value)) return null;
  const d = new Date(Number(value));
  return Number.isNaN(d.getTime()) ? null : d;
};

/** Groups values by the hash that holds them. */
function byHash<T>(prefix: string, items: readonly T[], idOf: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = lastUsedHashKey(prefix, idOf(item));
    const group = out.get(key);
    if (group) group.push(item);
    else out.set(key, [item]);
  }
  return out;
}

export function createLastUsedStore(redis: RedisClient, prefix: string): LastUsedStore {
  const flushed = [...lastUsedHashKeys(prefix), legacyLastUsedHashKey(prefix)];
  return {
    async pending(ids) {
      const out = new Map<string, Date>();
      if (ids.length === 0) return out;
      try {
        // One HMGET per bucket holding one of the ids, concurrently (one round trip's latency).
        const groups = [...byHash(prefix, ids, (id) => id)];
        const values = await Promise.all(groups.map(([key, group]) => redis.hmget(key, ...group)));
        for (const [g, [, group]] of groups.entries()) {
          for (const [i, id] of group.entries()) {
            const at = parseMs(values[g]![i]);
            if (at) out.set(id, at);
          }
        }
      } catch {
        // Redis down: responses fall back to the flushed value in Postgres.
      }
      return out;
    },
    async take() {
      const settled = await Promise.allSettled(flushed.map((key) => redis.eval(TAKE_SCRIPT, 1, key)));
      const taken = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value as string[]] : []));
      const failed = settled.find((r) => r.status === 'rejected');
      if (taken.length === 0 && failed) throw failed.reason;
      const newest = new Map<string, Date>();
      for (const flat of taken) {
        for (let i = 0; i + 1 < flat.length; i += 2) {
          const id = flat[i]!.toLowerCase();
          const at = parseMs(flat[i + 1]);
          if (!isUuid(id) || !at) continue;
          const cur = newest.get(id);
          if (!cur || cur < at) newest.set(id, at);
        }
      }
      return [...newest].map(([id, at]) => ({ id, at }));
    },
    async restore(entries) {
      const groups = byHash(prefix, entries, (e) => e.id);
      await Promise.all(
        [...groups].map(([key, group]) =>
          redis.eval(RESTORE_SCRIPT, 1, key, ...group.flatMap((e) => [e.id, String(e.at.getTime())])),
        ),
      );
    },
  };
}

/** The later of the flushed and the pending value. */
export function latest(a: Date | null, b: Date | undefined): Date | null {
  if (!b) return a;
  if (!a) return b;
  return a > b ? a : b;
}
