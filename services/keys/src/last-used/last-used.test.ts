import { lastUsedHashKey } from '@tollgate/key-cache';
import { createLogger } from '@tollgate/logger';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { api, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';
import { createKeysDb } from '../database';
import { startLastUsedFlusher } from './last-used.flusher';
import { createLastUsedStore } from './last-used.store';

let t: TestKeysService;
let hashKey: string;
beforeAll(async () => {
  // A long interval: tests flush explicitly, except the one that watches the timer on its own service.
  t = await startTestKeysService({ env: { LAST_USED_FLUSH_MS: '3600000' } });
  hashKey = lastUsedHashKey(t.redis.prefix);
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
    await t.redis.client.hset(hashKey, key.id, String(at)); // what the proxy does

    const before = await api(t, 'GET', `/keys/${key.id}`);
    expectStatus(before, 200);
    expect(before.body.data.last_used_at).toBe(new Date(at).toISOString());
    expect(await lastUsedInDb(key.id)).toBeNull();

    expect(await t.service.flushLastUsed()).toBeGreaterThanOrEqual(1);
    expect(await t.redis.client.exists(hashKey)).toBe(0);
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(at);
    expect((await api(t, 'GET', '/key', { as: key })).body.data.last_used_at).toBe(
      new Date(at).toISOString(),
    );
  });

  it('never moves last_used_at backwards', async () => {
    const key = await t.createKey(t.account.id);
    const newer = Date.UTC(2026, 10, 20, 12);
    await t.redis.client.hset(hashKey, key.id, String(newer));
    await t.service.flushLastUsed();
    await t.redis.client.hset(hashKey, key.id, String(newer - 60_000));
    expect((await api(t, 'GET', `/keys/${key.id}`)).body.data.last_used_at).toBe(
      new Date(newer).toISOString(),
    );
    await t.service.flushLastUsed();
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(newer);
  });

  it('writes many keys in one flush and drops malformed entries without failing the batch', async () => {
    const keys = await Promise.all(Array.from({ length: 20 }, () => t.createKey(t.account.id)));
    const at = Date.UTC(2026, 10, 21);
    await t.redis.client.hset(hashKey, Object.fromEntries(keys.map((k, i) => [k.id, String(at + i)])));
    await t.redis.client.hset(hashKey, {
      'not-a-uuid': String(at),
      '00000000-0000-4000-8000-00000000dead': 'yesterday',
    });
    expect(await t.service.flushLastUsed()).toBe(20);
    for (const [i, k] of keys.entries()) expect((await lastUsedInDb(k.id))?.getTime()).toBe(at + i);
    expect(await t.redis.client.exists(hashKey)).toBe(0);
  });

  it('does not bump the key version (not a key change: the cache stays valid)', async () => {
    const key = await t.createKey(t.account.id);
    await t.redis.client.hset(hashKey, key.id, String(Date.now()));
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
    await t.redis.client.hset(hashKey, key.id, '1000');
    await expect(flusher.flush()).rejects.toThrow();
    expect(await t.redis.client.hget(hashKey, key.id)).toBe('1000');
    await flusher.stop();
    await brokenDb.destroy();
    await t.service.flushLastUsed();
    expect((await lastUsedInDb(key.id))?.getTime()).toBe(1000);
  });

  it('flushes on its own every LAST_USED_FLUSH_MS', async () => {
    const fast = await startTestKeysService({ env: { LAST_USED_FLUSH_MS: '100' } });
    try {
      const key = await fast.createKey(fast.account.id);
      await fast.redis.client.hset(lastUsedHashKey(fast.redis.prefix), key.id, '1700000000000');
      await vi.waitFor(
        async () => {
          const row = await fast.service.runtime.db
            .selectFrom('keys.api_keys')
            .select('last_used_at')
            .where('id', '=', key.id)
            .executeTakeFirstOrThrow();
          expect(row.last_used_at?.getTime()).toBe(1_700_000_000_000);
        },
        { timeout: 5000, interval: 50 },
      );
    } finally {
      await fast.close();
    }
  });
});
