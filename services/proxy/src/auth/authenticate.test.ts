import { randomUUID } from 'node:crypto';
import { digestKey, generateKey } from '@tollgate/auth';
import { type CachedKey, createKeyCache, lastUsedHashKey } from '@tollgate/key-cache';
import { createLogger } from '@tollgate/logger';
import { createTestRedis, type TestRedis } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAuthenticator } from './authenticate';

let r: TestRedis;
beforeAll(async () => {
  r = await createTestRedis();
});
afterAll(async () => {
  await r?.cleanup();
});

describe('last-used recording', () => {
  it('writes at most once per key per interval, then again after it (real Redis)', async () => {
    const keyCache = createKeyCache(r.client, { prefix: r.prefix });
    const key = generateKey();
    const record: CachedKey = {
      id: randomUUID(),
      accountId: randomUUID(),
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: null,
      limitReset: null,
      version: 1,
    };
    await keyCache.fill(digestKey(key), record);
    let clock = 1_000_000;
    const auth = createAuthenticator({
      keyCache,
      resolver: {
        resolve: async () => {
          throw new Error('the cache holds the key: the keys service must not be asked');
        },
        close: async () => {},
      },
      redis: r.client,
      lastUsedKey: (keyId) => lastUsedHashKey(r.prefix, keyId),
      logger: createLogger({ name: 'test', level: 'silent' }),
      lastUsedIntervalMs: 1000,
      now: () => clock,
    });
    const recorded = () => r.client.hget(lastUsedHashKey(r.prefix, record.id), record.id);

    await auth.authenticate(`Bearer ${key}`);
    await vi.waitFor(async () => expect(await recorded()).toBe('1000000'));

    clock += 999; // within the interval: no write
    await auth.authenticate(`Bearer ${key}`);
    await r.client.ping(); // ioredis keeps command order: a pending HSET would have landed by now
    expect(await recorded()).toBe('1000000');

    clock += 1; // interval elapsed: written again
    await auth.authenticate(`Bearer ${key}`);
    await vi.waitFor(async () => expect(await recorded()).toBe('1001000'));
  });
});
