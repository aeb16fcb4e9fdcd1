/** Owner's side of `resolveKey` (@tollgate/contracts): the real route's answers parse with the contract. */
import { devServiceSigner, digestKey, serviceTokenSource } from '@tollgate/auth';
import { resolveKey } from '@tollgate/contracts';
import { createServiceClient, type ServiceClient } from '@tollgate/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKeysService, type TestKeysService } from '../../test/testing';

let t: TestKeysService;
let keys: ServiceClient;
beforeAll(async () => {
  t = await startTestKeysService();
  keys = createServiceClient({
    service: 'keys',
    url: t.url,
    token: serviceTokenSource(devServiceSigner('proxy'), 'keys'),
  });
});
afterAll(async () => {
  await keys?.close();
  await t?.close();
});

describe("keys' resolve contract (owner side)", () => {
  it('answers a key record matching the contract, revoked ones included, and 404 for an unknown digest', async () => {
    const key = await t.createKey(t.account.id, { limit: '2.5', limitReset: 'weekly' });
    const call = (digest: string) =>
      keys.call({
        method: resolveKey.method,
        path: resolveKey.path,
        body: { digest },
        response: resolveKey.response,
        nullOn404: true,
      });
    const answer = await call(digestKey(key.key));
    expect(answer?.data).toMatchObject({
      id: key.id,
      accountId: t.account.id,
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: '2.5',
      limitReset: 'weekly',
    });
    expect(await call('0'.repeat(64))).toBeNull();
    // The governance fields survive the caller's parse (they were stripped: a key read after a cache
    // miss had no expiry, model list or rate limit in the proxy).
    const governed = await t.service.runtime.keys.create(t.account.id, {
      name: 'governed',
      scope: 'inference',
      limit: null,
      limitReset: null,
      governance: {
        expiresAt: new Date(Date.now() + 3_600_000),
        allowedModels: ['openai/*'],
        rateLimitRpm: 7,
      },
    });
    expect((await call(digestKey(governed.key)))?.data).toMatchObject({
      allowedModels: ['openai/*'],
      rateLimitRpm: 7,
    });
    expect((await call(digestKey(governed.key)))?.data.expiresAt).toBeGreaterThan(Date.now());
    await expect(call('NOT-A-DIGEST')).rejects.toMatchObject({ status: 400, message: /digest/ });
  });
});
