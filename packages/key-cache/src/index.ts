import { createHash } from 'node:crypto';
import type { LimitReset } from '@tollgate/money';
import { loadLua, luaDir, type RedisClient } from '@tollgate/redis';

/**
 * The Redis key cache: the one module that defines how an API key's record is cached, used by the
 * keys service (writes) and the proxy (reads). Keyed by the key's SHA-256 digest.
 *
 * Layout: HASH `<prefix>key:{<digest>}` with fields (the digest is the Redis Cluster hash tag)
 *   v  version (the key row's `version`, bumped by every change in Postgres)
 *   s  state: `ok` (d holds the record), `pending` (a change is being committed; do not trust any
 *      cached copy, ask the keys service), `absent` (negative cache: no such key)
 *   d  JSON CachedKey when s = ok
 *
 * Every write is a compare-and-set on the version (Lua), so a cache fill that read Postgres before a
 * change can never overwrite the change: the keys service marks the entry `pending` at the new
 * version before committing, and fills carrying an older version are refused.
 */
export interface CachedKey {
  id: string;
  accountId: string;
  scope: 'inference' | 'management';
  disabled: boolean;
  revoked: boolean;
  /** USD decimal string, or null for no limit. */
  limit: string | null;
  limitReset: LimitReset | null;
  /**
   * Governance (optional: records cached before these existed read as "none"). `expiresAt` is epoch
   * ms (the key stops authenticating at that instant), `allowedModels` ids or `vendor/*` patterns
   * (absent or empty = all), `rateLimitRpm` requests per minute across all proxies.
   */
  expiresAt?: number | null;
  allowedModels?: string[];
  rateLimitRpm?: number | null;
  /** Tokens per minute across all proxies, charged with the admission's worst case (issue 29). */
  rateLimitTpm?: number | null;
  /** Opt-in bodies (issue 28): the proxy captures the prompt and the answer (bounded); absent = no. */
  storeBodies?: boolean;
  /** The key's team (issue 29); absent or null = none. */
  teamId?: string | null;
  /**
   * The team's budget (issue 29), copied into each of its keys' records (a team change bumps the
   * version of every key of the team): USD limit (decimal string, null = none), its reset period,
   * tokens per minute across the team's keys. Absent = none.
   */
  teamLimit?: string | null;
  teamLimitReset?: LimitReset | null;
  teamRateLimitTpm?: number | null;
  version: number;
}

export type CacheLookup =
  | { state: 'hit'; key: CachedKey }
  | { state: 'absent' }
  | { state: 'pending' }
  | { state: 'miss' };

export interface KeyCacheOptions {
  prefix: string;
  /** How long a filled record lives before it is refetched (default 1 day). */
  recordTtlSeconds?: number;
  /** How long a negative entry lives (default 60 s). */
  absentTtlSeconds?: number;
  /** How long a pending marker lives if its change never completes (default 30 s). */
  pendingTtlSeconds?: number;
}

// The scripts (packages/key-cache/lua/, documented there), read once at start-up.
const LUA = luaDir(import.meta.url);
const WRITE_SCRIPT = loadLua('key-write', LUA);
/** The proxy's hot-path read and rate count in one command (lua/key-read-counting.lua). */
const READ_COUNTING_SCRIPT = loadLua('key-read-counting', LUA);
const READ_COUNTING_SHA = createHash('sha1').update(READ_COUNTING_SCRIPT).digest('hex');
const COUNT_SCRIPT = loadLua('key-count', LUA);
const CLEAR_PENDING_SCRIPT = loadLua('key-clear-pending', LUA);

/**
 * The keys service's flush of the last-used hashes (services/keys/src/last-used/): `take` removes and
 * returns a whole hash atomically, `restore` puts values back after a failed flush (newest kept).
 */
export const LAST_USED_SCRIPTS = {
  take: loadLua('last-used-take', LUA),
  restore: loadLua('last-used-restore', LUA),
} as const;

/** A key's request count in the current one-minute window (see `getCounting`). */
export interface RequestCount {
  count: number;
  /** Epoch ms at which the window ends (the count starts again at 0). */
  windowEndMs: number;
}

export const RATE_WINDOW_MS = 60_000;

/** A key's current rate-limit window: its Redis counter, the counter's TTL and when it ends. */
export interface RateWindow {
  counterKey: string;
  counterTtlMs: number;
  windowEndMs: number;
}

export interface KeyCache {
  redisKey(digest: string): string;
  /** The fixed one-minute window `nowMs` falls in (what `getCounting` counts in). */
  rateWindow(digest: string, nowMs: number): RateWindow;
  /** One round trip. Throws if Redis is unreachable: callers must then ask the keys service. */
  get(digest: string): Promise<CacheLookup>;
  /**
   * `get` plus this request counted in the key's fixed one-minute window, in the same round trip
   * (one script: HMGET, INCR, PEXPIRE on the window's first request): the per-key rate limit costs
   * no extra round trip. Counted by
   * digest, which is known before the record is read, so every authenticated request of a key counts
   * in one Redis counter shared by all proxies. Only keys the cache holds (`hit`, `pending`) are
   * counted; `count` is null for a miss or a negative entry. Throws if Redis is unreachable.
   */
  getCounting(digest: string, nowMs: number): Promise<{ lookup: CacheLookup; count: RequestCount | null }>;
  /** Counts one request in the key's window (a key resolved after a miss). Throws if Redis is unreachable. */
  countRequest(digest: string, nowMs: number): Promise<RequestCount>;
  /** Cache fill after reading Postgres; refused (false) if a newer version is cached or pending. */
  fill(digest: string, key: CachedKey): Promise<boolean>;
  /** Negative entry for a digest no key has. Never overwrites an existing entry. */
  fillAbsent(digest: string): Promise<boolean>;
  /** Before committing a change at `version`: makes every reader bypass the cache. */
  markPending(digest: string, version: number): Promise<boolean>;
  /** After committing: the new record, visible to the very next lookup. */
  commit(digest: string, key: CachedKey): Promise<boolean>;
  /** After a change rolled back: drop the pending marker so fills work again. */
  clearPending(digest: string, version: number): Promise<void>;
}

export function createKeyCache(redis: RedisClient, options: KeyCacheOptions): KeyCache {
  const recordTtl = options.recordTtlSeconds ?? 86_400;
  const absentTtl = options.absentTtlSeconds ?? 60;
  const pendingTtl = options.pendingTtlSeconds ?? 30;
  // The digest is the hash tag of the record and of its rate windows: one slot, found from the digest
  // alone (the account is not known before the record is read). docs/architecture.md "Redis keys
  // and hash slots".
  const redisKey = (digest: string) => `${options.prefix}key:{${digest}}`;

  const write = async (
    digest: string,
    version: number,
    state: string,
    data: string,
    ttl: number,
    mode: string,
  ) => (await redis.eval(WRITE_SCRIPT, 1, redisKey(digest), version, state, data, ttl, mode)) === 1;

  const rateWindow = (digest: string, nowMs: number): RateWindow => {
    const window = Math.floor(nowMs / RATE_WINDOW_MS);
    return {
      counterKey: `${options.prefix}rl:{${digest}}:${window}`,
      counterTtlMs: RATE_WINDOW_MS * 2,
      windowEndMs: (window + 1) * RATE_WINDOW_MS,
    };
  };

  return {
    redisKey,
    rateWindow,
    async get(digest) {
      return toLookup(await redis.hmget(redisKey(digest), 'v', 's', 'd'));
    },
    async getCounting(digest, nowMs) {
      const w = rateWindow(digest, nowMs);
      const args = [redisKey(digest), w.counterKey, w.counterTtlMs] as const;
      let r: [string | null, string | null, string | null, number?];
      try {
        r = (await redis.evalsha(READ_COUNTING_SHA, 2, ...args)) as typeof r;
      } catch (err) {
        if (!String((err as Error).message).includes('NOSCRIPT')) throw err;
        r = (await redis.eval(READ_COUNTING_SCRIPT, 2, ...args)) as typeof r;
      }
      return {
        lookup: toLookup(r),
        count: r[3] == null ? null : { count: Number(r[3]), windowEndMs: w.windowEndMs },
      };
    },
    async countRequest(digest, nowMs) {
      const w = rateWindow(digest, nowMs);
      const n = await redis.eval(COUNT_SCRIPT, 1, w.counterKey, w.counterTtlMs);
      return { count: Number(n), windowEndMs: w.windowEndMs };
    },
    fill: (digest, key) => write(digest, key.version, 'ok', JSON.stringify(key), recordTtl, 'cas'),
    fillAbsent: (digest) => write(digest, 0, 'absent', '', absentTtl, 'nx'),
    markPending: (digest, version) => write(digest, version, 'pending', '', pendingTtl, 'cas'),
    commit: (digest, key) => write(digest, key.version, 'ok', JSON.stringify(key), recordTtl, 'cas'),
    async clearPending(digest, version) {
      await redis.eval(CLEAR_PENDING_SCRIPT, 1, redisKey(digest), String(version));
    },
  };
}

function toLookup([v, s, d]: readonly (string | null | number | undefined)[]): CacheLookup {
  if (v == null || s == null) return { state: 'miss' };
  if (s === 'absent') return { state: 'absent' };
  if (s === 'pending' || !d) return { state: 'pending' };
  return { state: 'hit', key: JSON.parse(d as string) as CachedKey };
}

/** True when the key's expiry instant has passed at `nowMs`. */
export const isExpired = (key: CachedKey, nowMs: number): boolean =>
  key.expiresAt != null && key.expiresAt <= nowMs;

/** The 401 message of an expired key (the proxy and the keys service say the same). */
export const expiredKeyMessage = (expiresAtMs: number): string =>
  `This API key expired at ${new Date(expiresAtMs).toISOString()}`;

/** Whether the key may call `modelId`: an empty or absent list allows every model; `vendor/*` a vendor. */
export function allowsModel(key: CachedKey, modelId: string): boolean {
  const list = key.allowedModels;
  if (!list || list.length === 0) return true;
  for (const entry of list) {
    if (entry === modelId) return true;
    if (entry.endsWith('/*') && modelId.startsWith(entry.slice(0, -1))) return true;
  }
  return false;
}

/**
 * How many hashes the last-used writes are spread over. Each is its own hash tag (its own slot), so on
 * a Redis Cluster they land on every master instead of one hot hash. Changing it strands at most one
 * flush interval of values in the old buckets: the keys service reads buckets 0..N-1 only.
 */
export const LAST_USED_BUCKETS = 16;

/** FNV-1a of the key id, so the proxy and the keys service agree on a key's bucket. */
export function lastUsedBucket(keyId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < keyId.length; i++) {
    h ^= keyId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % LAST_USED_BUCKETS;
}

const lastUsedBucketKey = (prefix: string, bucket: number) => `${prefix}key-last-used:{${bucket}}`;

/** Where the proxy records a key's successful authentications; the keys service flushes them. */
export const lastUsedHashKey = (prefix: string, keyId: string) =>
  lastUsedBucketKey(prefix, lastUsedBucket(keyId));

/** Every last-used hash, in bucket order (what the keys service flushes). */
export const lastUsedHashKeys = (prefix: string): string[] =>
  Array.from({ length: LAST_USED_BUCKETS }, (_, b) => lastUsedBucketKey(prefix, b));

/** The single hash of releases before the buckets: drained by the keys service, never written. */
export const legacyLastUsedHashKey = (prefix: string) => `${prefix}key-last-used`;
