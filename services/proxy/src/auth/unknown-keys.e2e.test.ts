import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { devServiceSigner, digestKey } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { configEnv, loadConfig } from '../config';
import { startProxy } from '../http/app';
import { createKeyResolver, type KeyResolver } from './key-resolver';

/**
 * Issue 14 finding 5: every random well-formed key cost a keys-service call + a Postgres query + a
 * Redis write. Lookups that find no key are rate limited per client address, and the lookups
 * waiting on the keys service are bounded (503 beyond). Issue 23: behind a load balancer the address
 * is the client's (TRUSTED_PROXIES), all clients together are bounded by a token bucket, and a random
 * key costs no rate-window write.
 */
let stack: ProxyStack;
const LIMIT = 5;
let resolves = 0;

const randomKey = () => `sk-tg-v1-${randomBytes(32).toString('hex')}`;

beforeAll(async () => {
  stack = await startProxyStack({ env: { UNKNOWN_KEY_LOOKUPS_PER_MINUTE: String(LIMIT) } });
});
afterAll(async () => {
  await stack?.close();
});

async function models(api: string, key: string | { key: string }, forwardedFor?: string) {
  const headers: Record<string, string> = bearer(key);
  if (forwardedFor) headers['x-forwarded-for'] = forwardedFor;
  const res = await fetch(`${api}/models`, { headers });
  return {
    status: res.status,
    body: (await res.json()) as { error?: { metadata?: Record<string, unknown> } },
  };
}

describe('unknown-key lookups', () => {
  it(`allow ${LIMIT} unknown keys per address per minute, then 429 without asking the keys service`, async () => {
    // A counting wrapper around the real resolver of a second proxy on the same stack.
    const real = createKeyResolver({
      url: stack.keys.url,
      signer: devServiceSigner('proxy'),
      timeoutMs: 5_000,
    });
    const counting: KeyResolver = {
      resolve: (d) => {
        resolves++;
        return real.resolve(d);
      },
      close: () => real.close(),
    };
    const proxy = await startProxy(loadConfig({ ...configEnv(stack.config), PORT: '0' }), {
      resolver: counting,
    });
    try {
      const api = `${proxy.url}/api/v1`;
      for (let i = 0; i < LIMIT; i++) expect((await models(api, randomKey())).status).toBe(401);
      expect(resolves).toBe(LIMIT);
      const limited = await models(api, randomKey());
      expect(limited.status).toBe(429);
      expect(limited.body.error?.metadata).toMatchObject({
        error_type: 'rate_limited',
        reason: 'unknown_keys',
      });
      expect(resolves).toBe(LIMIT); // no keys-service call
      // Valid keys (cached) are not affected, and a new key resolves once it is in the cache.
      expect((await models(api, stack.inference)).status).toBe(200);
      const created = await stack.keys.createKey(stack.account.id, { name: 'after-limit' });
      expect((await models(api, created)).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('bounds the lookups waiting on the keys service: 503 at once beyond KEY_LOOKUP_MAX_IN_FLIGHT', async () => {
    // A keys service that accepts and never answers.
    const hung: Server = createServer(() => {});
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    const proxy = await startProxy(
      loadConfig({
        ...configEnv(stack.config),
        PORT: '0',
        KEYS_URL: url,
        SERVICE_TIMEOUT_MS: '3000',
        KEY_LOOKUP_MAX_IN_FLIGHT: '2',
      }),
    );
    try {
      const api = `${proxy.url}/api/v1`;
      const waiting = [models(api, randomKey()), models(api, randomKey())];
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      const refused = await models(api, randomKey());
      expect(refused.status).toBe(503);
      expect(performance.now() - t0).toBeLessThan(1_500); // no waiting for a slot (loaded CI host: generous)
      expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([503, 503]); // timed out
    } finally {
      await proxy.close();
      hung.closeAllConnections();
      await new Promise<void>((r) => hung.close(() => r()));
    }
  });

  it('60 unknown keys from one forwarded client do not refuse another client’s new key (TRUSTED_PROXIES)', async () => {
    // The default per-address limit (60 a minute), behind one load balancer (this test's loopback).
    const proxy = await startProxy(
      loadConfig({
        ...configEnv(stack.config),
        PORT: '0',
        UNKNOWN_KEY_LOOKUPS_PER_MINUTE: '60',
        TRUSTED_PROXIES: '1',
      }),
    );
    try {
      const api = `${proxy.url}/api/v1`;
      const attacker = '203.0.113.66';
      for (let i = 0; i < 60; i++) expect((await models(api, randomKey(), attacker)).status).toBe(401);
      const limited = await models(api, randomKey(), attacker);
      expect(limited.status).toBe(429);
      expect(limited.body.error?.metadata).toMatchObject({ reason: 'unknown_keys', scope: 'address' });
      // A client that writes the attacker's address itself is still told apart by the balancer's entry.
      const created = await stack.keys.createKey(stack.account.id, { name: 'other-client' });
      await stack.keys.redis.client.del(`${stack.config.REDIS_PREFIX}key:{${created.digest}}`);
      const other = await models(api, created, `${attacker}, 198.51.100.23`);
      expect(other.status, JSON.stringify(other.body)).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('bounds unknown-key lookups of all addresses together with a token bucket (429, scope global)', async () => {
    const proxy = await startProxy(
      loadConfig({
        ...configEnv(stack.config),
        PORT: '0',
        TRUSTED_PROXIES: 'loopback',
        UNKNOWN_KEY_LOOKUPS_PER_MINUTE: '60',
        UNKNOWN_KEY_LOOKUPS_PER_SECOND: '0.01',
        UNKNOWN_KEY_LOOKUP_BURST: '3',
      }),
    );
    try {
      const api = `${proxy.url}/api/v1`;
      for (let i = 0; i < 3; i++) {
        expect((await models(api, randomKey(), `198.51.100.${i + 1}`)).status).toBe(401);
      }
      const refused = await models(api, randomKey(), '198.51.100.99');
      expect(refused.status).toBe(429);
      expect(refused.body.error?.metadata).toMatchObject({ reason: 'unknown_keys', scope: 'global' });
      // Cached keys never wait for the bucket.
      expect((await models(api, stack.inference, '198.51.100.99')).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });

  it('a random key costs no rate-window write in Redis; a known key is counted even after a cache miss', async () => {
    const redis = stack.keys.redis.client;
    const prefix = stack.config.REDIS_PREFIX;
    const windows = async () => (await redis.keys(`${prefix}rl:*`)).length;
    const before = await windows();
    // The stack's own proxy (limit 5 per address): 3 unknown keys, each asked twice (the second from
    // the negative cache entry).
    for (let i = 0; i < 3; i++) {
      const key = randomKey();
      for (let j = 0; j < 2; j++) expect((await models(stack.api, key)).status).toBe(401);
    }
    expect(await windows()).toBe(before);
    // A rate-limited key whose cache entry is gone: the keys service resolves it and it is counted.
    const { key } = await stack.keys.service.runtime.keys.create(stack.account.id, {
      name: 'limited',
      scope: 'inference',
      limit: null,
      limitReset: null,
      governance: { rateLimitRpm: 5 },
    });
    const digest = digestKey(key);
    await redis.del(`${prefix}key:{${digest}}`);
    const res = await fetch(`${stack.api}/models`, { headers: bearer(key) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(await redis.keys(`${prefix}rl:{${digest}}:*`)).toHaveLength(1);
  });
});
