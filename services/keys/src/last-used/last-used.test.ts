import {
  LAST_USED_BUCKETS,
  lastUsedHashKey,
  lastUsedHashKeys,
  legacyLastUsedHashKey,
} from '@tollgate/key-cache';
import { createLogger } from '@tollgate/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { api, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';
import { createKeysDb } from '../database';
import { startLastUsedFlusher } from './last-used.flusher';
import { createLastUsedStore } from './last-used.store';

let t: TestKeysService;
/** The bucket hash the proxy writes this key's last use to. */
const hashOf = (id: string) => lastUsedHashKey(t.redis.prefix, id);
/** What the proxy does on an authentication. */
const record = (id: string, value: string) => t.redis.client.hset(hashOf(id), id, value);
/** How many last-used hashes (buckets and the legacy one) still exist. */
const existing = async () => {
  const keys = [...lastUsedHashKeys(t.redis.prefix), legacyLastUsedHashKey(t.redis.prefix)];
  const counts = await Promise.all(keys.map((k) => t.redis.client.exists(k)));
  return counts.reduce((a, b) => a + b, 0);
};
beforeAll(async () => {
  // A long interval: tests flush explicitly, except the one that watches the timer on its own service.
  t = await startTestKeysService({ env: { LAST_USED_FLUSH_MS: '3600000' } });
});
afterAll(async () => {
  await t?.close();
});

const lastUsedInDb = async (id: string) =>
  (
    await t.service.runtime.db
      .selectFrom('keys.api_keys')
      .select('last_used_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).last_used_at;

describe('last_used_at', () => {
  it('shows a recorded authentication before it is flushed, then flushes it to Postgres', async () => {
    const key = await t.createKey(t.account.id);
    const at = Date.UTC(2026, 10, 20, 12, 0, 0, 123);
    await record(key.id, String(at));

    const before = await api(t, 'GET', `/keys/${key.id}`);
    expectStatus(before, 200);
    expect(before.body.data.last_used_at).toBe(new Date(at).toISOString());
    expect(await lastUsedInDb(key.id)).toBeNull();

    expect(await t.service.flushLastUsed()).toBeGreaterThanOrEqual(1);
    expect(await existing()).toBe(0);
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(at);
    expect((await api(t, 'GET', '/key', { as: key })).body.data.last_used_at).toBe(
      new Date(at).toISOString(),
    );
  });

  it('never moves last_used_at backwards', async () => {
    const key = await t.createKey(t.account.id);
    const newer = Date.UTC(2026, 10, 20, 12);
    await record(key.id, String(newer));
    await t.service.flushLastUsed();
    await record(key.id, String(newer - 60_000));
    expect((await api(t, 'GET', `/keys/${key.id}`)).body.data.last_used_at).toBe(
      new Date(newer).toISOString(),
    );
    await t.service.flushLastUsed();
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(newer);
  });

  it('writes many keys of many buckets in one flush and drops malformed entries without failing it', async () => {
    const keys = await Promise.all(Array.from({ length: 20 }, () => t.createKey(t.account.id)));
    const at = Date.UTC(2026, 10, 21);
    await Promise.all(keys.map((k, i) => record(k.id, String(at + i))));
    // No single hot hash: 20 keys land in several of the 16 buckets (each its own slot).
    expect(new Set(keys.map((k) => hashOf(k.id))).size).toBeGreaterThan(1);
    await record('not-a-uuid', String(at));
    await record('00000000-0000-4000-8000-00000000dead', 'yesterday');
    expect(await t.service.flushLastUsed()).toBe(20);
    for (const [i, k] of keys.entries()) expect((await lastUsedInDb(k.id))?.getTime()).toBe(at + i);
    expect(await existing()).toBe(0);
  });

  it('drains the single hash of older releases too (an upgrade loses no last use)', async () => {
    const [a, b] = await Promise.all([t.createKey(t.account.id), t.createKey(t.account.id)]);
    const legacy = legacyLastUsedHashKey(t.redis.prefix);
    await t.redis.client.hset(legacy, a.id, '1700000000000');
    await t.redis.client.hset(legacy, b.id, '1700000000000');
    await record(b.id, '1700000005000'); // the newer bucket value wins
    expect(await t.service.flushLastUsed()).toBe(2);
    expect((await lastUsedInDb(a.id))?.getTime()).toBe(1_700_000_000_000);
    expect((await lastUsedInDb(b.id))?.getTime()).toBe(1_700_000_005_000);
    expect(await existing()).toBe(0);
    expect(LAST_USED_BUCKETS).toBe(lastUsedHashKeys(t.redis.prefix).length);
  });

  it('does not bump the key version (not a key change: the cache stays valid)', async () => {
    const key = await t.createKey(t.account.id);
    await record(key.id, String(Date.now()));
    await t.service.flushLastUsed();
    expect(await t.service.runtime.cache.get(key.digest)).toMatchObject({
      state: 'hit',
      key: { version: 1 },
    });
  });

  it('puts the values back when Postgres fails, keeping the newest', async () => {
    const key = await t.createKey(t.account.id);
    const store = createLastUsedStore(t.redis.client, t.redis.prefix);
    const brokenDb = createKeysDb('postgres://postgres@127.0.0.1:1/nowhere');
    const flusher = startLastUsedFlusher({
      db: brokenDb,
      store,
      intervalMs: 3_600_000,
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    await record(key.id, '1000');
    await expect(flusher.flush()).rejects.toThrow();
    expect(await t.redis.client.hget(hashOf(key.id), key.id)).toBe('1000');
    await flusher.stop();
    await brokenDb.destroy();
    await t.service.flushLastUsed();
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(1000);
  });

  it('flushes on its own every LAST_USED_FLUSH_MS', async () => {
    const fast = await startTestKeysService({ env: { LAST_USED_FLUSH_MS: '100' } });
    try {
      const key = await fast.createKey(fast.account.id);
      await fast.redis.client.hset(lastUsedHashKey(fast.redis.prefix, key.id), key.id, '1700000000000');
      await vi.waitFor(
        async () => {
          const row = await fast.service.runtime.db
            .selectFrom('keys.api_keys')
            .select('last_used_at')
            .where('id', '=', key.id)
            .executeTakeFirstOrThrow();
          expect(row.last_used_at?.getTime()).toBe(1_700_000_000_000);
        },
        { timeout: 15_000, interval: 50 },
      );
    } finally {
      await fast.close();
    }
  });
});
