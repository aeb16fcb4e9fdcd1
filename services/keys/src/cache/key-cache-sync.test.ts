import { connect, createServer, type Server, type Socket } from 'node:net';
import { devServiceSigner, digestKey } from '@tollgate/auth';
import type { KeyCache } from '@tollgate/key-cache';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { resolveKey } from '../../test/resolve-client';
import { api, expectError, expectStatus, isActive, proxyLookup } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';
import { findKeyByDigest } from '../keys/keys.repository';
import { toCachedKey } from './key-cache-sync';

/** Fault injection around the real key cache. */
const hooks: {
  afterMarkPending?: (digest: string) => Promise<void>;
  failCommit?: boolean;
} = {};

function faultyCache(cache: KeyCache): KeyCache {
  return {
    ...cache,
    async markPending(digest, version) {
      const ok = await cache.markPending(digest, version);
      await hooks.afterMarkPending?.(digest);
      return ok;
    },
    async commit(digest, key) {
      if (hooks.failCommit) throw new Error('injected: redis went away after the database commit');
      return cache.commit(digest, key);
    },
  };
}

let t: TestKeysService;
beforeAll(async () => {
  t = await startTestKeysService({ wrapCache: faultyCache });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  hooks.afterMarkPending = undefined;
  hooks.failCommit = undefined;
});

async function newKey() {
  const acct = await t.createAccount();
  const res = await api(t, 'POST', '/keys', { as: acct.managementKey, body: { name: 'k' } });
  expectStatus(res, 201);
  return { acct, hash: res.body.data.hash as string, key: res.body.data.key as string };
}

describe('the proxy sees every change on its very next lookup', () => {
  it('create, disable, enable, limit change and revoke are each visible at once, from the cache', async () => {
    const { acct, hash, key } = await newKey();
    const digest = digestKey(key);
    const cached = () => t.service.runtime.cache.get(digest);

    expect(await cached()).toMatchObject({ state: 'hit', key: { id: hash, disabled: false, version: 1 } });
    const steps: Array<[Record<string, unknown> | 'DELETE', Record<string, unknown>]> = [
      [{ disabled: true }, { disabled: true, revoked: false, version: 2 }],
      [{ disabled: false }, { disabled: false, revoked: false, version: 3 }],
      [
        { limit: 2.5, limit_reset: 'daily' },
        { limit: '2.5', limitReset: 'daily', version: 4 },
      ],
      ['DELETE', { disabled: true, revoked: true, version: 5 }],
    ];
    for (const [change, expected] of steps) {
      const res =
        change === 'DELETE'
          ? await api(t, 'DELETE', `/keys/${hash}`, { as: acct.managementKey })
          : await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: change });
      expectStatus(res, 200);
      expect(await cached()).toMatchObject({ state: 'hit', key: expected });
      expect(await proxyLookup(t, key)).toMatchObject(expected);
    }
  });

  it('a lookup of an unknown key writes the negative entry; creating that key is not hidden by it', async () => {
    const { key } = await newKey();
    const other = `sk-tg-v1-${'0'.repeat(64)}`;
    expect(await proxyLookup(t, other)).toBeNull();
    expect(await t.service.runtime.cache.get(digestKey(other))).toEqual({ state: 'absent' });
    expect(isActive(await proxyLookup(t, key))).toBe(true);
  });
});

describe('a cache fill racing with a change never leaves an active record', () => {
  it('a fill that read the row before a disable and lands after it is refused', async () => {
    const { acct, hash, key } = await newKey();
    const digest = digestKey(key);
    await t.service.runtime.redis.del(t.service.runtime.cache.redisKey(digest)); // cold cache
    const staleRow = await findKeyByDigest(t.service.runtime.db, digest); // resolve reads the old row…
    expectStatus(
      await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: { disabled: true } }),
      200,
    );
    expect(await t.service.runtime.cache.fill(digest, toCachedKey(staleRow!))).toBe(false); // …and its fill arrives late
    expect(await proxyLookup(t, key)).toMatchObject({ disabled: true });
  });

  it.each([
    ['disable', { disabled: true }],
    ['revoke', 'DELETE'],
  ] as const)(
    'a real resolve running while the %s is being committed cannot cache the old state',
    async (_n, change) => {
      const { acct, hash, key } = await newKey();
      const digest = digestKey(key);
      await t.service.runtime.redis.del(t.service.runtime.cache.redisKey(digest));
      const seen: Array<unknown> = [];
      hooks.afterMarkPending = async (d) => {
        if (d !== digest) return;
        // The proxy finds the entry pending and asks the keys service while the transaction is open:
        // it reads the committed (old) row, and its cache fill must be refused.
        expect(await t.service.runtime.cache.get(digest)).toEqual({ state: 'pending' });
        seen.push(await resolveKey({ keysUrl: t.url, signer: devServiceSigner('proxy'), digest }));
        expect(await t.service.runtime.cache.get(digest)).toEqual({ state: 'pending' });
      };
      const res =
        change === 'DELETE'
          ? await api(t, 'DELETE', `/keys/${hash}`, { as: acct.managementKey })
          : await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: change });
      expectStatus(res, 200);
      expect(seen).toEqual([expect.objectContaining({ disabled: false, version: 1 })]);
      expect(isActive(await proxyLookup(t, key))).toBe(false);
    },
  );

  it('concurrent changes of one key serialise and the cache ends at the last committed version', async () => {
    const { acct, hash, key } = await newKey();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api(t, 'PATCH', `/keys/${hash}`, {
          as: acct.managementKey,
          body: { name: `n${i}`, disabled: i % 2 === 0 },
        }),
      ),
    );
    for (const r of results) expectStatus(r, 200);
    const row = await findKeyByDigest(t.service.runtime.db, digestKey(key));
    expect(await t.service.runtime.cache.get(digestKey(key))).toEqual({
      state: 'hit',
      key: toCachedKey(row!),
    });
  });
});

describe('cache failures', () => {
  it('when the cache write after the commit fails, lookups still see the new state', async () => {
    const { acct, hash, key } = await newKey();
    hooks.failCommit = true;
    expectStatus(
      await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: { disabled: true } }),
      200,
    );
    expect(await t.service.runtime.cache.get(digestKey(key))).toEqual({ state: 'pending' });
    expect(await proxyLookup(t, key)).toMatchObject({ disabled: true, version: 2 });
    // …and the resolve refilled the cache with the committed record.
    expect(await t.service.runtime.cache.get(digestKey(key))).toMatchObject({
      state: 'hit',
      key: { disabled: true },
    });
  });

  it('when marking pending fails after the write landed, the change rolls back (503) and the marker is cleared', async () => {
    const { acct, hash, key } = await newKey();
    const digest = digestKey(key);
    hooks.afterMarkPending = async (d) => {
      if (d === digest) throw new Error('injected failure inside the transaction');
    };
    expectError(
      await api(t, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: { disabled: true } }),
      503,
      'service_unavailable',
    );
    hooks.afterMarkPending = undefined;
    expect(await t.service.runtime.cache.get(digest)).toEqual({ state: 'miss' });
    expect(await proxyLookup(t, key)).toMatchObject({ disabled: false, version: 1 });
    expect((await findKeyByDigest(t.service.runtime.db, digest))?.disabled).toBe(false);
  });
});

/** A TCP hop to the real Redis that the test can cut and restore: "Redis is down". */
class RedisLink {
  private server: Server | null = null;
  private sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly target: URL) {}
  async up(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 6379), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

describe('with Redis down', () => {
  let link: RedisLink;
  let down: TestKeysService;

  beforeAll(async () => {
    link = new RedisLink(new URL(t.redis.url));
    await link.up();
    down = await startTestKeysService({ env: { REDIS_URL: `redis://127.0.0.1:${link.port}` } });
  });
  afterAll(async () => {
    await link.up().catch(() => {});
    await down?.close();
    await link.down();
  });

  it('refuses every key change with 503, changes nothing, and keeps the cache consistent; recovers after', async () => {
    const acct = await down.createAccount();
    const created = await api(down, 'POST', '/keys', { as: acct.managementKey, body: { name: 'k' } });
    expectStatus(created, 201);
    const { hash, key } = created.body.data;
    const digest = digestKey(key);
    const cachedBefore = await down.redis.client.hgetall(down.service.runtime.cache.redisKey(digest));
    expect(cachedBefore.s).toBe('ok');

    await link.down();
    for (const res of [
      await api(down, 'PATCH', `/keys/${hash}`, { as: acct.managementKey, body: { disabled: true } }),
      await api(down, 'DELETE', `/keys/${hash}`, { as: acct.managementKey }),
      await api(down, 'POST', '/keys', { as: acct.managementKey, body: { name: 'new' } }),
    ]) {
      expectError(res, 503, 'service_unavailable', /key cache/);
    }
    // Nothing changed in Postgres, so the cached active record is still the truth.
    const row = await findKeyByDigest(down.service.runtime.db, digest);
    expect(row).toMatchObject({ disabled: false, revoked: false, version: 1 });
    expect(await down.redis.client.hgetall(down.service.runtime.cache.redisKey(digest))).toEqual(
      cachedBefore,
    );
    const list = await api(down, 'GET', '/keys', { as: acct.managementKey });
    expectStatus(list, 200);
    expect(list.body.data.map((k: { name: string }) => k.name)).toEqual(['k', 'ops']);
    // The proxy's fallback (cache unreachable → resolve) still answers from Postgres.
    const resolved = await resolveKey({ keysUrl: down.url, signer: devServiceSigner('proxy'), digest });
    expect(resolved).toMatchObject({ id: hash, disabled: false });

    await link.up();
    await vi.waitFor(
      async () => {
        const res = await api(down, 'PATCH', `/keys/${hash}`, {
          as: acct.managementKey,
          body: { disabled: true },
        });
        expectStatus(res, 200);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(await proxyLookup(down, key)).toMatchObject({ disabled: true, version: 2 });
  });
});
