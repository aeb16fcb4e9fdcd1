import { randomUUID } from 'node:crypto';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CachedKey,
  createKeyCache,
  type KeyCache,
  LAST_USED_BUCKETS,
  lastUsedBucket,
  lastUsedHashKey,
  lastUsedHashKeys,
} from './index';

let redis: TestRedis;
let cache: KeyCache;
let n = 0;
const digest = () => `${(++n).toString(16).padStart(8, '0')}${'a'.repeat(56)}`;
const record = (version: number, over: Partial<CachedKey> = {}): CachedKey => ({
  id: '00000000-0000-4000-8000-000000000001',
  accountId: '00000000-0000-4000-8000-000000000002',
  scope: 'inference',
  disabled: false,
  revoked: false,
  limit: '10.5',
  limitReset: 'daily',
  version,
  ...over,
});

beforeAll(async () => {
  redis = await createTestRedis();
  cache = createKeyCache(redis.client, { prefix: redis.prefix, pendingTtlSeconds: 30, absentTtlSeconds: 60 });
});
afterAll(async () => {
  await redis.cleanup();
});

describe('key cache', () => {
  it('answers miss for an unknown digest and hit after a fill', async () => {
    const d = digest();
    expect(await cache.get(d)).toEqual({ state: 'miss' });
    expect(await cache.fill(d, record(1))).toBe(true);
    expect(await cache.get(d)).toEqual({ state: 'hit', key: record(1) });
    expect(await redis.client.ttl(cache.redisKey(d))).toBeGreaterThan(80_000);
  });

  it('keys entries under the prefix', () => {
    // The digest is the record's hash tag, and its rate window's (one slot, found from the digest).
    expect(cache.redisKey('abc')).toBe(`${redis.prefix}key:{abc}`);
    expect(cache.rateWindow('abc', 60_000).counterKey).toBe(`${redis.prefix}rl:{abc}:1`);
    const id = '00000000-0000-4000-8000-000000000001';
    expect(lastUsedHashKey(redis.prefix, id)).toBe(`${redis.prefix}key-last-used:{${lastUsedBucket(id)}}`);
  });

  it('spreads last-used writes over 16 hashes, each its own hash tag (no single hot hash)', async () => {
    const counts = new Array<number>(LAST_USED_BUCKETS).fill(0);
    for (let i = 0; i < 16_000; i++) counts[lastUsedBucket(randomUUID())]! += 1;
    // Every bucket gets about 1/16 of the keys (1,000 each; FNV-1a of random ids is near uniform).
    for (const c of counts) expect(c).toBeGreaterThan(800);
    expect(new Set(lastUsedHashKeys(redis.prefix)).size).toBe(LAST_USED_BUCKETS);
    // Pinned: the proxy writes a key's bucket and the keys service reads it, across releases.
    expect(lastUsedBucket('00000000-0000-4000-8000-000000000001')).toBe(2);
    expect(lastUsedBucket('00000000-0000-4000-8000-000000000002')).toBe(15);
    expect(lastUsedBucket('9b2f6c1e-3d4a-4f5b-8c7d-0e1f2a3b4c5d')).toBe(4);
    // Each bucket is writable on its own (on a cluster: routed to its slot's master).
    await Promise.all(lastUsedHashKeys(redis.prefix).map((k, b) => redis.client.hset(k, 'b', b)));
    for (const [b, k] of lastUsedHashKeys(redis.prefix).entries())
      expect(await redis.client.hget(k, 'b')).toBe(String(b));
  });

  it('writes a short-lived negative entry that never overwrites a record', async () => {
    const d = digest();
    expect(await cache.fillAbsent(d)).toBe(true);
    expect(await cache.get(d)).toEqual({ state: 'absent' });
    expect(await redis.client.ttl(cache.redisKey(d))).toBeLessThanOrEqual(60);

    const e = digest();
    await cache.fill(e, record(1));
    expect(await cache.fillAbsent(e)).toBe(false);
    expect((await cache.get(e)).state).toBe('hit');
  });

  it('lets a created key replace its negative entry', async () => {
    const d = digest();
    await cache.fillAbsent(d);
    expect(await cache.markPending(d, 1)).toBe(true);
    expect(await cache.commit(d, record(1))).toBe(true);
    expect(await cache.get(d)).toEqual({ state: 'hit', key: record(1) });
  });

  it('refuses a fill older than the cached version', async () => {
    const d = digest();
    await cache.commit(d, record(3, { disabled: true }));
    expect(await cache.fill(d, record(2))).toBe(false);
    expect(await cache.get(d)).toEqual({ state: 'hit', key: record(3, { disabled: true }) });
  });

  it('makes readers bypass the cache while a change is pending and refuses stale fills', async () => {
    const d = digest();
    await cache.fill(d, record(1));
    expect(await cache.markPending(d, 2)).toBe(true);
    expect(await cache.get(d)).toEqual({ state: 'pending' });
    expect(await redis.client.ttl(cache.redisKey(d))).toBeLessThanOrEqual(30);
    // A resolve that read the row before the change commits must not land.
    expect(await cache.fill(d, record(1))).toBe(false);
    expect(await cache.get(d)).toEqual({ state: 'pending' });
    // A resolve that read the committed row (same version) may land: it is the new state.
    expect(await cache.fill(d, record(2, { disabled: true }))).toBe(true);
    expect(await cache.commit(d, record(2, { disabled: true }))).toBe(true);
    expect(await cache.get(d)).toEqual({ state: 'hit', key: record(2, { disabled: true }) });
  });

  it('refuses a late commit of an older change', async () => {
    const d = digest();
    await cache.markPending(d, 2);
    await cache.markPending(d, 3);
    expect(await cache.commit(d, record(2))).toBe(false);
    expect(await cache.get(d)).toEqual({ state: 'pending' });
    expect(await cache.commit(d, record(3, { revoked: true, disabled: true }))).toBe(true);
    expect((await cache.get(d)).state).toBe('hit');
  });

  it('clears only its own pending marker after a rollback', async () => {
    const d = digest();
    await cache.fill(d, record(1));
    await cache.markPending(d, 2);
    await cache.clearPending(d, 1); // not ours: stays
    expect(await cache.get(d)).toEqual({ state: 'pending' });
    await cache.clearPending(d, 2);
    expect(await cache.get(d)).toEqual({ state: 'miss' });
    // fills work again afterwards
    expect(await cache.fill(d, record(1))).toBe(true);

    const e = digest();
    await cache.commit(e, record(2));
    await cache.clearPending(e, 2); // a committed record is never cleared
    expect((await cache.get(e)).state).toBe('hit');
  });

  it('throws from get when Redis is unreachable', async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    const downCache = createKeyCache(down, { prefix: redis.prefix });
    await expect(downCache.get(digest())).rejects.toThrow();
    await expect(downCache.markPending(digest(), 1)).rejects.toThrow();
    down.disconnect();
  });
});
