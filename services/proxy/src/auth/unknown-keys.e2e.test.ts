import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { devServiceSigner } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { loadConfig } from '../config';
import { startProxy } from '../http/app';
import { createKeyResolver, type KeyResolver } from './key-resolver';

/**
 * Issue 14 finding 5: every random well-formed key cost a keys-service call + a Postgres query + a
 * Redis write. Lookups that find no key are rate limited per client address, and the lookups
 * waiting on the keys service are bounded (503 beyond).
 */
let stack: ProxyStack;
const LIMIT = 5;
let resolves = 0;

const randomKey = () => `sk-tg-v1-${randomBytes(32).toString('hex')}`;
const stringEnv = (c: object) => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, String(v)]));

beforeAll(async () => {
  stack = await startProxyStack({ env: { UNKNOWN_KEY_LOOKUPS_PER_MINUTE: String(LIMIT) } });
});
afterAll(async () => {
  await stack?.close();
});

async function models(api: string, key: string | { key: string }) {
  const res = await fetch(`${api}/models`, { headers: bearer(key) });
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
    const proxy = await startProxy(loadConfig({ ...stringEnv(stack.config), PORT: '0' }), {
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
        ...stringEnv(stack.config),
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
});
