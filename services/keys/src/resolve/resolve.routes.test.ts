import { generateKeyPairSync } from 'node:crypto';
import { createServiceSigner, devServiceSigner, digestKey } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';

let t: TestKeysService;
beforeAll(async () => {
  t = await startTestKeysService();
});
afterAll(async () => {
  await t?.close();
});

const resolve = async (body: unknown, given?: string) =>
  api(t, 'POST', '/internal/keys/resolve', { token: given ?? (await t.serviceToken('proxy')), body });

describe('POST /internal/keys/resolve', () => {
  it('answers the cached record of a key and fills the cache', async () => {
    const key = await t.createKey(t.account.id, { limit: '7.25', limitReset: 'weekly' });
    await t.service.runtime.redis.del(t.service.runtime.cache.redisKey(key.digest));
    const res = await resolve({ digest: key.digest });
    expectStatus(res, 200);
    const expected = {
      id: key.id,
      accountId: t.account.id,
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: '7.25',
      limitReset: 'weekly',
      expiresAt: null,
      allowedModels: [],
      rateLimitRpm: null,
      rateLimitTpm: null,
      teamId: null,
      version: 1,
    };
    expect(res.body).toEqual({ data: expected });
    expect(await t.service.runtime.cache.get(key.digest)).toEqual({ state: 'hit', key: expected });
  });

  it('returns disabled and revoked keys too (the proxy decides the 401)', async () => {
    const disabled = await t.createKey(t.account.id);
    await t.service.runtime.keys.update(t.account.id, disabled.id, { disabled: true });
    const revoked = await t.createKey(t.account.id);
    await t.service.runtime.keys.revoke(t.account.id, revoked.id);
    expect((await resolve({ digest: disabled.digest })).body.data).toMatchObject({
      disabled: true,
      revoked: false,
    });
    expect((await resolve({ digest: revoked.digest })).body.data).toMatchObject({
      disabled: true,
      revoked: true,
    });
  });

  it('answers 404 for an unknown digest and writes the negative cache entry', async () => {
    const digest = digestKey('sk-tg-v1-unknown');
    expectError(await resolve({ digest }), 404, 'not_found');
    expect(await t.service.runtime.cache.get(digest)).toEqual({ state: 'absent' });
  });

  it('accepts only service tokens (401 otherwise)', async () => {
    const key = await t.createKey(t.account.id);
    expectError(
      await api(t, 'POST', '/internal/keys/resolve', { as: null, body: { digest: key.digest } }),
      401,
      'unauthorized',
    );
    expectError(
      await resolve({ digest: key.digest }, await t.callerToken(t.account.managementKey)),
      401,
      'unauthorized',
    );
    expectError(await resolve({ digest: key.digest }, 'garbage'), 401, 'unauthorized');
  });

  it('accepts only the proxy identity (403 for every other trusted service), and tokens for keys only', async () => {
    const key = await t.createKey(t.account.id);
    for (const name of ['dashboard', 'billing', 'admin', 'keys'] as const) {
      const r = await resolve({ digest: key.digest }, await t.serviceToken(name));
      expectError(r, 403, 'forbidden');
      expect(r.body.error.metadata.caller).toBe(name);
    }
    // The proxy's token for billing is not a token for keys.
    const forBilling = await devServiceSigner('proxy').sign('billing');
    expectError(await resolve({ digest: key.digest }, forBilling), 401, 'unauthorized');
    // Expired, or signed with a key keys does not trust.
    expectError(
      await resolve(
        { digest: key.digest },
        await devServiceSigner('proxy').sign('keys', { kind: 'service' }, -1),
      ),
      401,
      'unauthorized',
    );
    const stranger = await createServiceSigner('proxy', generateKeyPairSync('ed25519').privateKey).sign(
      'keys',
    );
    expectError(await resolve({ digest: key.digest }, stranger), 401, 'unauthorized');
  });

  it.each([
    [{}, /^digest/],
    [{ digest: 42 }, /^digest/],
    [{ digest: 'abc' }, /^digest/],
    [{ digest: 'A'.repeat(64) }, /^digest/],
    [[], /JSON object/],
  ])('refuses %j with 400', async (body, message) => {
    expectError(await resolve(body), 400, 'bad_request', message);
  });

  it('refuses invalid JSON with 400', async () => {
    const res = await api(t, 'POST', '/internal/keys/resolve', {
      token: await t.serviceToken(),
      raw: '{"digest":',
    });
    expectError(res, 400, 'bad_request');
  });
});

describe('health', () => {
  it('is live and ready with Postgres and Redis up', async () => {
    expect((await api(t, 'GET', '/healthz', { as: null })).body).toEqual({ status: 'ok' });
    const ready = await api(t, 'GET', '/readyz', { as: null });
    expectStatus(ready, 200);
    expect(ready.body.checks).toEqual({ postgres: 'ok', redis: 'ok' });
  });
});
