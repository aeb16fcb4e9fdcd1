import { generateKeyPairSync } from 'node:crypto';
import { createServiceSigner, devServiceSigner } from '@tollgate/auth';
import { sql } from '@tollgate/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus, isActive, proxyLookup } from '../../test/test-client';
import { startTestKeysService, type TestAccount, type TestKeysService } from '../../test/testing';

let t: TestKeysService;

beforeAll(async () => {
  t = await startTestKeysService();
});
afterAll(async () => {
  await t?.close();
});

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

async function createViaApi(account: TestAccount, body: Record<string, unknown> = { name: 'k' }) {
  const res = await api(t, 'POST', '/keys', { as: account.managementKey, body });
  expectStatus(res, 201);
  return res.body.data as { hash: string; key: string; [k: string]: unknown };
}

describe('authentication of every management route', () => {
  const routes: Array<[string, string, unknown?]> = [
    ['POST', '/keys', { name: 'x' }],
    ['GET', '/keys'],
    ['GET', `/keys/${UNKNOWN}`],
    ['PATCH', `/keys/${UNKNOWN}`, { name: 'x' }],
    ['DELETE', `/keys/${UNKNOWN}`],
    ['GET', '/key'],
  ];

  it.each(routes)('%s %s refuses a request without a caller token with 401', async (method, path, body) => {
    expectError(await api(t, method, path, { as: null, body }), 401, 'unauthorized');
  });

  it.each(routes)(
    '%s %s refuses garbage, foreign, expired and service tokens with 401',
    async (method, path, body) => {
      const claims = {
        kind: 'key',
        keyId: t.account.managementKey.id,
        accountId: t.account.id,
        scope: 'management',
      } as const;
      const tokens = [
        'not-a-jwt',
        await createServiceSigner('proxy', generateKeyPairSync('ed25519').privateKey).sign('keys', claims),
        await devServiceSigner('proxy').sign('keys', claims, -10),
        await devServiceSigner('proxy').sign('billing', claims), // for another service
        await devServiceSigner('dashboard').sign('keys', claims), // only the proxy vouches for API keys
        await t.serviceToken('proxy'),
      ];
      for (const token of tokens)
        expectError(await api(t, method, path, { token, body }), 401, 'unauthorized');
    },
  );

  it.each(routes)(
    '%s %s refuses an identity that does not match a usable key with 401',
    async (method, path, body) => {
      const acct = await t.createAccount();
      const other = await t.createAccount();
      const disabled = await t.createKey(acct.id, { scope: 'management' });
      await t.service.runtime.keys.update(acct.id, disabled.id, { disabled: true });
      const revoked = await t.createKey(acct.id, { scope: 'management' });
      await t.service.runtime.keys.revoke(acct.id, revoked.id);
      const identities = [
        disabled,
        revoked,
        { ...acct.managementKey, accountId: other.id }, // key id of another account
        { ...acct.managementKey, id: UNKNOWN },
        { ...acct.managementKey, scope: 'inference' as const }, // scope claim does not match the key
        { ...acct.managementKey, id: 'not-a-uuid' },
        { ...acct.managementKey, accountId: "x' or 1=1" },
      ];
      for (const as of identities) expectError(await api(t, method, path, { as, body }), 401, 'unauthorized');
    },
  );

  it.each(routes.filter(([, p]) => p !== '/key'))(
    '%s %s refuses an inference key with 403 forbidden and required_scope management',
    async (method, path, body) => {
      const inference = await t.createKey(t.account.id);
      const res = await api(t, method, path, { as: inference, body });
      expectError(res, 403, 'forbidden');
      expect(res.body.error.metadata.required_scope).toBe('management');
    },
  );
});

describe('§3 state table', () => {
  it('(none) → active: POST /keys returns 201 with the plaintext key once; usable immediately', async () => {
    const acct = await t.createAccount();
    const res = await api(t, 'POST', '/keys', {
      as: acct.managementKey,
      body: { name: 'prod', limit: 12.5, limit_reset: 'monthly' },
    });
    expectStatus(res, 201);
    const key = res.body.data;
    expect(key).toMatchObject({
      name: 'prod',
      scope: 'inference',
      limit: 12.5,
      limit_reset: 'monthly',
      disabled: false,
      revoked: false,
      last_used_at: null,
      usage: 0,
      limit_remaining: 12.5,
    });
    expect(key.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(key.hash).toMatch(/^[0-9a-f-]{36}$/);
    expect(key.label).toBe(`${key.key.slice(0, 12)}...${key.key.slice(-3)}`);
    expect(Object.keys(key).sort()).toEqual(
      [
        'hash',
        'name',
        'label',
        'scope',
        'limit',
        'limit_reset',
        'disabled',
        'revoked',
        'last_used_at',
        'created_at',
        'team_id',
        'updated_at',
        'usage',
        'limit_remaining',
        'usage_daily',
        'usage_weekly',
        'usage_monthly',
        'expires_at',
        'include_byok_in_limit',
        'allowed_models',
        'rate_limit_rpm',
        'rate_limit_tpm',
        'store_bodies',
        'byok_usage',
        'byok_usage_daily',
        'byok_usage_weekly',
        'byok_usage_monthly',
        'creator_user_id',
        'external_user',
        'workspace_id',
        'key',
      ].sort(),
    );
    // The plaintext exists only in that response: never stored, never returned again.
    const stored = await sql<{
      n: number;
    }>`select count(*)::int as n from keys.api_keys where digest = ${key.key} or label = ${key.key} or name = ${key.key}`.execute(
      t.service.runtime.db,
    );
    expect(stored.rows[0]?.n).toBe(0);
    const got = await api(t, 'GET', `/keys/${key.hash}`, { as: acct.managementKey });
    expectStatus(got, 200);
    expect(got.body.data.key).toBeUndefined();
    const listed = await api(t, 'GET', '/keys', { as: acct.managementKey });
    expect(JSON.stringify(listed.body)).not.toContain(key.key);
    // Usable immediately.
    expect(await proxyLookup(t, key.key)).toMatchObject({
      id: key.hash,
      accountId: acct.id,
      scope: 'inference',
      disabled: false,
      revoked: false,
      limit: '12.5',
      limitReset: 'monthly',
    });
  });

  it('active → disabled → active through PATCH disabled, effective on the next lookup', async () => {
    const acct = await t.createAccount();
    const key = await createViaApi(acct);
    expect(isActive(await proxyLookup(t, key.key))).toBe(true);

    const off = await api(t, 'PATCH', `/keys/${key.hash}`, {
      as: acct.managementKey,
      body: { disabled: true },
    });
    expectStatus(off, 200);
    expect(off.body.data).toMatchObject({ hash: key.hash, disabled: true, revoked: false });
    expect(await proxyLookup(t, key.key)).toMatchObject({ disabled: true, revoked: false });

    const on = await api(t, 'PATCH', `/keys/${key.hash}`, {
      as: acct.managementKey,
      body: { disabled: false },
    });
    expectStatus(on, 200);
    expect(on.body.data).toMatchObject({ disabled: false, revoked: false });
    expect(isActive(await proxyLookup(t, key.key))).toBe(true);
  });

  it('a disabled management key is refused with 401 until re-enabled', async () => {
    const acct = await t.createAccount();
    const second = await t.createKey(acct.id, { scope: 'management' });
    expectStatus(
      await api(t, 'PATCH', `/keys/${second.id}`, { as: acct.managementKey, body: { disabled: true } }),
      200,
    );
    expectError(await api(t, 'GET', '/keys', { as: second }), 401, 'unauthorized');
    expectStatus(
      await api(t, 'PATCH', `/keys/${second.id}`, { as: acct.managementKey, body: { disabled: false } }),
      200,
    );
    expectStatus(await api(t, 'GET', '/keys', { as: second }), 200);
  });

  it.each([false, true])(
    'active or disabled (disabled=%s) → revoked by DELETE, permanent and disabled at once',
    async (startDisabled) => {
      const acct = await t.createAccount();
      const key = await createViaApi(acct);
      if (startDisabled) {
        expectStatus(
          await api(t, 'PATCH', `/keys/${key.hash}`, { as: acct.managementKey, body: { disabled: true } }),
          200,
        );
      }
      const del = await api(t, 'DELETE', `/keys/${key.hash}`, { as: acct.managementKey });
      expectStatus(del, 200);
      expect(del.body).toEqual({ data: { hash: key.hash, deleted: true }, deleted: true });
      expect(await proxyLookup(t, key.key)).toMatchObject({ revoked: true, disabled: true });

      const got = await api(t, 'GET', `/keys/${key.hash}`, { as: acct.managementKey });
      expect(got.body.data).toMatchObject({ revoked: true, disabled: true });
      // Revocation cannot be undone.
      expectError(
        await api(t, 'PATCH', `/keys/${key.hash}`, { as: acct.managementKey, body: { disabled: false } }),
        409,
        'conflict',
      );
    },
  );

  it('revoked → any PATCH answers 409 conflict and changes nothing', async () => {
    const acct = await t.createAccount();
    const key = await createViaApi(acct, { name: 'before', limit: 1 });
    expectStatus(await api(t, 'DELETE', `/keys/${key.hash}`, { as: acct.managementKey }), 200);
    const before = (await api(t, 'GET', `/keys/${key.hash}`, { as: acct.managementKey })).body.data;
    for (const body of [
      { name: 'after' },
      { disabled: false },
      { disabled: true },
      { limit: null },
      { limit_reset: 'daily' },
      {},
    ]) {
      expectError(
        await api(t, 'PATCH', `/keys/${key.hash}`, { as: acct.managementKey, body }),
        409,
        'conflict',
        /revoked/,
      );
    }
    const after = (await api(t, 'GET', `/keys/${key.hash}`, { as: acct.managementKey })).body.data;
    expect(after).toEqual(before);
  });

  it('DELETE of an already revoked key is idempotent: 200 {hash, deleted: true}', async () => {
    const acct = await t.createAccount();
    const key = await createViaApi(acct);
    expectStatus(await api(t, 'DELETE', `/keys/${key.hash}`, { as: acct.managementKey }), 200);
    const again = await api(t, 'DELETE', `/keys/${key.hash}`, { as: acct.managementKey });
    expectStatus(again, 200);
    expect(again.body).toEqual({ data: { hash: key.hash, deleted: true }, deleted: true });
  });

  it('a management key cannot revoke itself: 403 forbidden pointing to the dashboard', async () => {
    const acct = await t.createAccount();
    const res = await api(t, 'DELETE', `/keys/${acct.managementKey.id}`, { as: acct.managementKey });
    expectError(res, 403, 'forbidden', /dashboard/);
    expect(isActive(await proxyLookup(t, acct.managementKey.key))).toBe(true);
    // Another management key of the account may revoke it.
    const other = await t.createKey(acct.id, { scope: 'management' });
    expectStatus(await api(t, 'DELETE', `/keys/${acct.managementKey.id}`, { as: other }), 200);
    expectError(await api(t, 'GET', '/keys', { as: acct.managementKey }), 401, 'unauthorized');
  });

  it('a management key cannot disable itself: 403 forbidden pointing to the dashboard (issue 14)', async () => {
    const acct = await t.createAccount();
    const res = await api(t, 'PATCH', `/keys/${acct.managementKey.id}`, {
      as: acct.managementKey,
      body: { disabled: true },
    });
    expectError(res, 403, 'forbidden', /dashboard/);
    expect(isActive(await proxyLookup(t, acct.managementKey.key))).toBe(true);
    // Renaming itself is fine, and another management key may disable it.
    expectStatus(
      await api(t, 'PATCH', `/keys/${acct.managementKey.id}`, {
        as: acct.managementKey,
        body: { name: 'me' },
      }),
      200,
    );
    const other = await t.createKey(acct.id, { scope: 'management' });
    expectStatus(
      await api(t, 'PATCH', `/keys/${acct.managementKey.id}`, { as: other, body: { disabled: true } }),
      200,
    );
  });

  it('PATCH updates name and limits; null removes the limit and the reset', async () => {
    const acct = await t.createAccount();
    const key = await createViaApi(acct, { name: 'a' });
    const res = await api(t, 'PATCH', `/keys/${key.hash}`, {
      as: acct.managementKey,
      body: { name: 'renamed', limit: 0.0000001, limit_reset: 'weekly' },
    });
    expectStatus(res, 200);
    expect(res.body.data).toMatchObject({
      name: 'renamed',
      limit: 0.0000001,
      limit_reset: 'weekly',
      limit_remaining: 0.0000001,
    });
    expect(new Date(res.body.data.updated_at) >= new Date(res.body.data.created_at)).toBe(true);
    expect(await proxyLookup(t, key.key)).toMatchObject({ limit: '0.0000001', limitReset: 'weekly' });

    const cleared = await api(t, 'PATCH', `/keys/${key.hash}`, {
      as: acct.managementKey,
      body: { limit: null, limit_reset: null },
    });
    expectStatus(cleared, 200);
    expect(cleared.body.data).toMatchObject({ limit: null, limit_reset: null, limit_remaining: null });
    expect(await proxyLookup(t, key.key)).toMatchObject({ limit: null, limitReset: null });
  });

  it('a PATCH that changes nothing leaves the key version alone', async () => {
    const acct = await t.createAccount();
    const key = await createViaApi(acct, { name: 'same', limit: 5 });
    const before = await proxyLookup(t, key.key);
    expectStatus(
      await api(t, 'PATCH', `/keys/${key.hash}`, {
        as: acct.managementKey,
        body: { name: 'same', limit: 5.0, disabled: false },
      }),
      200,
    );
    expect((await proxyLookup(t, key.key))?.version).toBe(before?.version);
  });

  it('management keys carry no limit: PATCH limit or limit_reset on one is 400', async () => {
    const acct = await t.createAccount();
    const other = await t.createKey(acct.id, { scope: 'management' });
    expectError(
      await api(t, 'PATCH', `/keys/${other.id}`, { as: acct.managementKey, body: { limit: 5 } }),
      400,
      'bad_request',
      /^limit/,
    );
    expectError(
      await api(t, 'PATCH', `/keys/${other.id}`, { as: acct.managementKey, body: { limit_reset: 'daily' } }),
      400,
      'bad_request',
      /^limit_reset/,
    );
    const ok = await api(t, 'PATCH', `/keys/${other.id}`, {
      as: acct.managementKey,
      body: { name: 'renamed', limit: null },
    });
    expectStatus(ok, 200);
    expect(ok.body.data).toMatchObject({ scope: 'management', name: 'renamed', limit: null });
  });
});

describe('listing rules', () => {
  it('lists active and disabled keys of both scopes, newest first, without revoked ones', async () => {
    const acct = await t.createAccount();
    const a = await createViaApi(acct, { name: 'a' });
    const b = await createViaApi(acct, { name: 'b' });
    const c = await createViaApi(acct, { name: 'c' });
    expectStatus(
      await api(t, 'PATCH', `/keys/${b.hash}`, { as: acct.managementKey, body: { disabled: true } }),
      200,
    );
    expectStatus(await api(t, 'DELETE', `/keys/${c.hash}`, { as: acct.managementKey }), 200);

    const res = await api(t, 'GET', '/keys', { as: acct.managementKey });
    expectStatus(res, 200);
    expect(res.body.data.map((k: { hash: string }) => k.hash)).toEqual([
      b.hash,
      a.hash,
      acct.managementKey.id,
    ]);
    expect(res.body.data[0]).toMatchObject({ disabled: true, revoked: false });
    expect(res.body.data[2]).toMatchObject({ scope: 'management' });
    for (const k of res.body.data) expect(k.key).toBeUndefined();

    const explicitFalse = await api(t, 'GET', '/keys?include_disabled=false', { as: acct.managementKey });
    expect(explicitFalse.body).toEqual(res.body);
  });

  it('include_disabled=true returns revoked keys as well', async () => {
    const acct = await t.createAccount();
    const a = await createViaApi(acct, { name: 'a' });
    const b = await createViaApi(acct, { name: 'b' });
    expectStatus(await api(t, 'DELETE', `/keys/${b.hash}`, { as: acct.managementKey }), 200);
    const res = await api(t, 'GET', '/keys?include_disabled=true', { as: acct.managementKey });
    expectStatus(res, 200);
    expect(res.body.data.map((k: { hash: string }) => k.hash)).toEqual([
      b.hash,
      a.hash,
      acct.managementKey.id,
    ]);
    expect(res.body.data[0]).toMatchObject({ revoked: true, disabled: true });
  });

  it('pages by 100 with offset', async () => {
    const acct = await t.createAccount();
    const db = t.service.runtime.db;
    await db
      .insertInto('keys.api_keys')
      .values(
        Array.from({ length: 104 }, (_, i) => ({
          account_id: acct.id,
          name: `bulk-${String(i).padStart(3, '0')}`,
          label: 'sk-tg-v1-000...000',
          scope: 'inference' as const,
          digest: `${acct.id.replaceAll('-', '')}${String(i).padStart(32, '0')}`,
          limit: null,
          limit_reset: null,
        })),
      )
      .execute();
    // 105 keys in all (the management key is the oldest).
    const first = await api(t, 'GET', '/keys', { as: acct.managementKey });
    expectStatus(first, 200);
    expect(first.body.data).toHaveLength(100);
    const second = await api(t, 'GET', '/keys?offset=100', { as: acct.managementKey });
    expect(second.body.data).toHaveLength(5);
    expect(second.body.data.at(-1).hash).toBe(acct.managementKey.id);
    const all = [...first.body.data, ...second.body.data];
    expect(new Set(all.map((k: { hash: string }) => k.hash)).size).toBe(105);
    const created = all.map((k: { created_at: string }) => k.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    expect((await api(t, 'GET', '/keys?offset=500', { as: acct.managementKey })).body).toEqual({ data: [] });
  });
});

describe('account isolation', () => {
  it("never shows, changes or reveals another account's keys (404)", async () => {
    const a = await t.createAccount();
    const b = await t.createAccount();
    const aKey = await createViaApi(a, { name: 'secret' });

    const list = await api(t, 'GET', '/keys?include_disabled=true', { as: b.managementKey });
    expect(list.body.data.map((k: { hash: string }) => k.hash)).toEqual([b.managementKey.id]);

    const unknown = await api(t, 'GET', `/keys/${UNKNOWN}`, { as: b.managementKey });
    expectError(unknown, 404, 'not_found');
    const foreign = await api(t, 'GET', `/keys/${aKey.hash}`, { as: b.managementKey });
    expectError(foreign, 404, 'not_found');
    expect(foreign.body).toEqual(unknown.body);

    expectError(
      await api(t, 'PATCH', `/keys/${aKey.hash}`, { as: b.managementKey, body: { disabled: true } }),
      404,
      'not_found',
    );
    expectError(await api(t, 'DELETE', `/keys/${aKey.hash}`, { as: b.managementKey }), 404, 'not_found');
    expectError(
      await api(t, 'DELETE', `/keys/${a.managementKey.id}`, { as: b.managementKey }),
      404,
      'not_found',
    );
    expectError(
      await api(t, 'PATCH', `/keys/${UNKNOWN}`, { as: b.managementKey, body: { name: 'x' } }),
      404,
      'not_found',
    );
    expectError(await api(t, 'DELETE', `/keys/${UNKNOWN}`, { as: b.managementKey }), 404, 'not_found');

    expect(isActive(await proxyLookup(t, aKey.key))).toBe(true);
    expect((await api(t, 'GET', `/keys/${aKey.hash}`, { as: a.managementKey })).body.data).toMatchObject({
      name: 'secret',
      disabled: false,
    });
  });
});

describe('GET /key', () => {
  it("returns the calling inference key's object with usage figures", async () => {
    const acct = await t.createAccount();
    const key = await t.createKey(acct.id, { limit: '3', limitReset: 'daily' });
    const res = await api(t, 'GET', '/key', { as: key });
    expectStatus(res, 200);
    expect(res.body.data).toMatchObject({
      hash: key.id,
      scope: 'inference',
      limit: 3,
      limit_reset: 'daily',
      usage: 0,
      limit_remaining: 3,
      usage_daily: 0,
      usage_weekly: 0,
      usage_monthly: 0,
      is_management_key: false,
    });
    expect(res.body.data.key).toBeUndefined();
  });

  it('returns a management key with is_management_key true', async () => {
    const res = await api(t, 'GET', '/key', { as: t.account.managementKey });
    expectStatus(res, 200);
    expect(res.body.data).toMatchObject({
      hash: t.account.managementKey.id,
      is_management_key: true,
      limit: null,
    });
  });
});

describe('bad input is a 400 naming the field, never a 500', () => {
  const post = (body: unknown) => api(t, 'POST', '/keys', { body });
  const postRaw = (raw: string, contentType?: string) => api(t, 'POST', '/keys', { raw, contentType });

  it.each([
    [{}, /^name/],
    [{ name: '' }, /^name/],
    [{ name: '   ' }, /^name/],
    [{ name: 42 }, /^name/],
    [{ name: null }, /^name/],
    [{ name: 'x'.repeat(201) }, /^name/],
    [{ name: 'a\u0000b' }, /^name: must not contain NUL/],
    [{ name: 'k', limit: -1 }, /^limit/],
    [{ name: 'k', limit: '5' }, /^limit/],
    [{ name: 'k', limit: true }, /^limit/],
    [{ name: 'k', limit: 0.1 + 0.2 }, /^limit: at most 10 decimal places/],
    [{ name: 'k', limit: 1e-11 }, /^limit/],
    [{ name: 'k', limit: 1e12 }, /^limit/],
    [{ name: 'k', limit_reset: 'yearly' }, /^limit_reset/],
    [{ name: 'k', limit_reset: 7 }, /^limit_reset/],
    [{ name: 'k', scope: 'management' }, /^scope: unknown field/],
    [{ name: 'k', scope: 'inference' }, /^scope: unknown field/],
    [{ name: 'k', extra: 1 }, /^extra: unknown field/],
    [[{ name: 'k' }], /JSON object/],
    ['name', /JSON object/],
    [null, /JSON object/],
  ])('POST /keys %j → 400', async (body, message) => {
    expectError(await post(body), 400, 'bad_request', message);
  });

  it('POST /keys refuses non-finite limits, invalid JSON and missing JSON content type', async () => {
    expectError(await postRaw('{"name":"k","limit":1e400}'), 400, 'bad_request', /^limit/);
    expectError(await postRaw('{"name":"k","limit":NaN}'), 400, 'bad_request', /JSON/);
    expectError(await postRaw('{"name":'), 400, 'bad_request', /JSON/);
    expectError(
      await postRaw('name=k', 'application/x-www-form-urlencoded'),
      400,
      'bad_request',
      /JSON object/,
    );
    expectError(await api(t, 'POST', '/keys'), 400, 'bad_request', /JSON object/);
    const before = await api(t, 'GET', '/keys?include_disabled=true');
    expect(before.body.data.some((k: { name: string }) => k.name === 'k')).toBe(false);
  });

  it('PATCH /keys/:hash validates the hash and every field', async () => {
    const key = await createViaApi(t.account);
    const patch = (body: unknown, hash = key.hash) => api(t, 'PATCH', `/keys/${hash}`, { body });
    expectError(await patch({ name: 'x' }, 'not-a-uuid'), 400, 'bad_request', /^hash/);
    expectError(await patch({ name: 'x' }, `${key.hash}0`), 400, 'bad_request', /^hash/);
    expectError(await patch({ name: null }), 400, 'bad_request', /^name/);
    expectError(await patch({ name: '' }), 400, 'bad_request', /^name/);
    expectError(await patch({ disabled: 'yes' }), 400, 'bad_request', /^disabled/);
    expectError(await patch({ disabled: null }), 400, 'bad_request', /^disabled/);
    expectError(await patch({ limit: -0.5 }), 400, 'bad_request', /^limit/);
    expectError(await patch({ limit: 1.00000000001 }), 400, 'bad_request', /^limit/);
    expectError(await patch({ limit_reset: 'never' }), 400, 'bad_request', /^limit_reset/);
    expectError(await patch({ revoked: false }), 400, 'bad_request', /^revoked: unknown field/);
    expectError(await patch({ scope: 'management' }), 400, 'bad_request', /^scope: unknown field/);
    expectError(await patch([]), 400, 'bad_request', /JSON object/);
    expectError(await api(t, 'PATCH', `/keys/${key.hash}`, { raw: '{bad' }), 400, 'bad_request', /JSON/);
    expectError(
      await api(t, 'PATCH', `/keys/${key.hash}`, { raw: '{"limit":-1e999}' }),
      400,
      'bad_request',
      /^limit/,
    );
    const unchanged = await api(t, 'GET', `/keys/${key.hash}`);
    expect(unchanged.body.data).toMatchObject({ name: 'k', disabled: false, limit: null });
  });

  it('GET and DELETE /keys/:hash validate the hash', async () => {
    for (const hash of ['abc', '123', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', "'%20or%201=1"]) {
      expectError(await api(t, 'GET', `/keys/${hash}`), 400, 'bad_request', /^hash/);
      expectError(await api(t, 'DELETE', `/keys/${hash}`), 400, 'bad_request', /^hash/);
    }
  });

  it('GET /keys validates include_disabled and offset', async () => {
    for (const q of [
      'include_disabled=yes',
      'include_disabled=1',
      'include_disabled=',
      'include_disabled=true&include_disabled=false',
      'include_disabled=TRUE',
    ]) {
      expectError(await api(t, 'GET', `/keys?${q}`), 400, 'bad_request', /^include_disabled/);
    }
    for (const q of [
      'offset=-1',
      'offset=abc',
      'offset=1.5',
      'offset=',
      'offset=1&offset=2',
      'offset=99999999999',
    ]) {
      expectError(await api(t, 'GET', `/keys?${q}`), 400, 'bad_request', /^offset/);
    }
  });

  it('answers unknown routes and methods with 404 in the envelope', async () => {
    expectError(await api(t, 'PUT', '/keys'), 404, 'not_found');
    expectError(await api(t, 'GET', '/nope'), 404, 'not_found');
  });

  it('refuses an oversized body with 413', async () => {
    expectError(await post({ name: 'x'.repeat(100_000) }), 413, 'payload_too_large');
  });
});
