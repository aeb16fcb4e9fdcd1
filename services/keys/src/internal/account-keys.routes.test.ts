import { generateKeyPairSync } from 'node:crypto';
import { createServiceSigner, devServiceSigner } from '@tollgate/auth';
import { ACTOR_USER_HEADER } from '@tollgate/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus, isActive, proxyLookup } from '../../test/test-client';
import { startTestKeysService, type TestAccount, type TestKeysService } from '../../test/testing';

let t: TestKeysService;
let other: TestAccount;

beforeAll(async () => {
  t = await startTestKeysService();
  other = await t.createAccount();
});
afterAll(async () => {
  await t?.close();
});

const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const svc = () => t.serviceToken('dashboard');
const base = (accountId = t.account.id) => `/internal/accounts/${accountId}`;
// The dashboard names the user acting (the keys service's audit log).
const ACTOR = '6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f';
const call = async (method: string, path: string, body?: unknown) =>
  api(t, method, path, { token: await svc(), body, headers: { [ACTOR_USER_HEADER]: ACTOR } });

describe('dashboard key management (internal, service token)', () => {
  it('refuses a change that names no acting user (400; nothing changes, nothing is audited)', async () => {
    const r = await api(t, 'POST', `${base()}/keys`, { token: await svc(), body: { name: 'anonymous' } });
    expectError(r, 400, 'bad_request');
    expect(r.body.error.message).toMatch(/x-tollgate-actor-user/);
    const keys = await call('GET', `${base()}/keys`);
    expect((keys.body.data as Array<{ name: string }>).map((k) => k.name)).not.toContain('anonymous');
  });

  it.each([
    ['GET', ''],
    ['GET', '/keys'],
    ['POST', '/keys', { name: 'x' }],
    ['PATCH', `/keys/${UNKNOWN}`, { name: 'x' }],
    ['DELETE', `/keys/${UNKNOWN}`],
  ] as Array<[string, string, unknown?]>)(
    '%s …%s refuses callers without a service token with 401',
    async (method, path, body) => {
      expectError(await api(t, method, `${base()}${path}`, { as: null, body }), 401, 'unauthorized');
      // A caller (API key) identity is not a service identity.
      expectError(await api(t, method, `${base()}${path}`, { body }), 401, 'unauthorized');
      const forged = await createServiceSigner('dashboard', generateKeyPairSync('ed25519').privateKey).sign(
        'keys',
      );
      expectError(await api(t, method, `${base()}${path}`, { token: forged, body }), 401, 'unauthorized');
      const forBilling = await devServiceSigner('dashboard').sign('billing');
      expectError(await api(t, method, `${base()}${path}`, { token: forBilling, body }), 401, 'unauthorized');
      // Trusted services other than the dashboard: 403, nothing done.
      for (const name of ['proxy', 'billing', 'admin'] as const) {
        const token = await t.serviceToken(name);
        expectError(await api(t, method, `${base()}${path}`, { token, body }), 403, 'forbidden');
      }
    },
  );

  it('names the account', async () => {
    const r = await call('GET', base());
    expectStatus(r, 200);
    expect(r.body.data).toEqual({
      id: t.account.id,
      slug: t.account.slug,
      name: expect.any(String),
      store_bodies: false,
    });
    expectError(await call('GET', base(UNKNOWN)), 404, 'not_found');
    expectError(await call('GET', base('nope')), 400, 'bad_request');
  });

  it('switches opt-in bodies for the whole account: every cached key record follows, audited for the user', async () => {
    const created = await call('POST', `${base()}/keys`, { name: 'cached before' });
    expectStatus(created, 201);
    const key: string = created.body.data.key;
    // Cached before the switch: the switch must reach the cached record, not only later fills.
    expect((await proxyLookup(t, key))?.storeBodies).toBeUndefined();
    const on = await call('PATCH', base(), { store_bodies: true });
    expectStatus(on, 200);
    expect(on.body.data).toMatchObject({ id: t.account.id, store_bodies: true });
    expect((await proxyLookup(t, key))?.storeBodies).toBe(true);
    // The key's own flag is left as it was.
    expect(
      (await call('GET', `${base()}/keys`)).body.data.find(
        (k: { name: string }) => k.name === 'cached before',
      ),
    ).toMatchObject({ store_bodies: false });
    // The same value again writes nothing (no audit entry, no version bump).
    expectStatus(await call('PATCH', base(), { store_bodies: true }), 200);
    const off = await call('PATCH', base(), { store_bodies: false });
    expect(off.body.data.store_bodies).toBe(false);
    expect((await proxyLookup(t, key))?.storeBodies).toBeUndefined();
    const entries = await t.service.runtime.db
      .selectFrom('keys.audit_log')
      .select(['actor_kind', 'actor_id', 'before', 'after'])
      .where('account_id', '=', t.account.id)
      .where('action', '=', 'account.update')
      .orderBy('id')
      .execute();
    expect(entries).toEqual([
      { actor_kind: 'user', actor_id: ACTOR, before: { store_bodies: false }, after: { store_bodies: true } },
      { actor_kind: 'user', actor_id: ACTOR, before: { store_bodies: true }, after: { store_bodies: false } },
    ]);
    expectError(await call('PATCH', base(), { store_bodies: 'yes' }), 400, 'bad_request');
    expectError(await call('PATCH', base(), { name: 'renamed' }), 400, 'bad_request');
    expectError(await call('PATCH', base(UNKNOWN), { store_bodies: true }), 404, 'not_found');
  });

  it('creates a management key when ticked, and an inference key otherwise; both usable at once', async () => {
    const m = await call('POST', `${base()}/keys`, { name: 'ops', management: true });
    expectStatus(m, 201);
    expect(m.body.data).toMatchObject({ scope: 'management', limit: null, name: 'ops' });
    expect(m.body.data.key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(isActive(await proxyLookup(t, m.body.data.key))).toBe(true);

    const i = await call('POST', `${base()}/keys`, { name: 'app', limit: 2.5, limit_reset: 'monthly' });
    expectStatus(i, 201);
    expect(i.body.data).toMatchObject({ scope: 'inference', limit: 2.5, limit_reset: 'monthly', usage: 0 });

    expectError(
      await call('POST', `${base()}/keys`, { name: 'x', management: true, limit: 1 }),
      400,
      'bad_request',
      /no spend limit/,
    );
    expectError(
      await call('POST', `${base()}/keys`, { name: 'x', management: 'yes' }),
      400,
      'bad_request',
      /^management:/,
    );
    expectError(
      await call('POST', `${base()}/keys`, { name: 'x', scope: 'management' }),
      400,
      'bad_request',
      /^scope:/,
    );
    expectError(await call('POST', `${base(UNKNOWN)}/keys`, { name: 'x' }), 404, 'not_found');
  });

  it('lists every key of the account, management keys included, revoked ones on request', async () => {
    const created = await call('POST', `${base()}/keys`, { name: 'to-revoke' });
    await call('DELETE', `${base()}/keys/${created.body.data.hash}`);
    const r = await call('GET', `${base()}/keys`);
    expectStatus(r, 200);
    const scopes = new Set(r.body.data.map((k: { scope: string }) => k.scope));
    expect(scopes).toEqual(new Set(['management', 'inference']));
    expect(r.body.data.some((k: { hash: string }) => k.hash === created.body.data.hash)).toBe(false);
    expect(r.body.next_offset).toBeNull();
    const all = await call('GET', `${base()}/keys?include_revoked=true`);
    expect(all.body.data.some((k: { hash: string }) => k.hash === created.body.data.hash)).toBe(true);
    expectError(await call('GET', `${base()}/keys?include_revoked=maybe`), 400, 'bad_request');
    expectError(await call('GET', `${base()}/keys?color=red`), 400, 'bad_request');
    const otherList = await call('GET', `${base(other.id)}/keys`);
    expect(otherList.body.data.map((k: { hash: string }) => k.hash)).toEqual([other.managementKey.id]);
  });

  it('disables, enables, edits the limit and revokes, management keys included; the proxy follows', async () => {
    const k = (await call('POST', `${base()}/keys`, { name: 'm', management: true })).body.data;
    const disabled = await call('PATCH', `${base()}/keys/${k.hash}`, { disabled: true });
    expectStatus(disabled, 200);
    expect(isActive(await proxyLookup(t, k.key))).toBe(false);
    await call('PATCH', `${base()}/keys/${k.hash}`, { disabled: false });
    expect(isActive(await proxyLookup(t, k.key))).toBe(true);

    const inf = (await call('POST', `${base()}/keys`, { name: 'i' })).body.data;
    const limited = await call('PATCH', `${base()}/keys/${inf.hash}`, { limit: 7, limit_reset: 'daily' });
    expect(limited.body.data).toMatchObject({ limit: 7, limit_reset: 'daily' });

    // The dashboard revokes a management key (the API never lets one revoke itself).
    const revoked = await call('DELETE', `${base()}/keys/${k.hash}`);
    expect(revoked.body).toEqual({ data: { hash: k.hash, deleted: true } });
    expect(isActive(await proxyLookup(t, k.key))).toBe(false);
    expectError(await call('PATCH', `${base()}/keys/${k.hash}`, { disabled: false }), 409, 'conflict');
  });

  it("never touches another account's key (404)", async () => {
    const hash = other.managementKey.id;
    expectError(await call('PATCH', `${base()}/keys/${hash}`, { disabled: true }), 404, 'not_found');
    expectError(await call('DELETE', `${base()}/keys/${hash}`), 404, 'not_found');
    expect(isActive(await proxyLookup(t, other.managementKey.key))).toBe(true);
    expectError(await call('PATCH', `${base()}/keys/not-a-uuid`, { disabled: true }), 400, 'bad_request');
  });
});
