import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServiceSigner, devServiceSigner, SERVICE_NAMES, type ServiceName } from '@tollgate/auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  keyHeaders,
  registerTestKey,
  serviceHeaders,
  startTestBilling,
  type TestBillingStack,
  usageEvent,
} from '../../test/testing';

let s: TestBillingStack;
const now = new Date('2026-11-20T12:00:00.000Z');

beforeAll(async () => {
  s = await startTestBilling({}, { clock: () => now });
});
afterAll(async () => {
  await s.cleanup();
});

type Json = { data?: unknown; error?: { code: number; message: string; metadata: Record<string, unknown> } };

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${s.billing.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Json, text };
}

/** An internal call from `from` (default the admin CLI, the only caller of the credit routes). */
const service = (from: ServiceName = 'admin') => serviceHeaders(from);
const caller = (scope: 'inference' | 'management' = 'inference') =>
  keyHeaders({ keyId: randomUUID(), accountId: randomUUID(), scope });
const token = (t: string) => ({ 'x-service-token': t });

describe('billing HTTP API: authentication', () => {
  it.each([
    ['GET', '/generation?id=gen-1-aaaaaaaaaaaaaaaaaaaa'],
    ['GET', '/credits'],
  ])('answers 401 on %s %s without a caller token, or with a service token', async (method, path) => {
    expect((await call(method, path, {})).status).toBe(401);
    const r = await call(method, path, await service());
    expect(r.status, r.text).toBe(401);
    expect(r.body.error?.metadata.error_type).toBe('unauthorized');
  });

  it.each([
    ['POST', '/internal/usage/keys'],
    ['POST', '/internal/spend/rebuild'],
    ['POST', `/internal/accounts/${randomUUID()}/credits`],
    ['PUT', `/internal/accounts/${randomUUID()}/postpaid`],
  ])('answers 401 on %s %s to a caller token or a token signed with an unknown key', async (method, path) => {
    expect((await call(method, path, await caller(), {})).status).toBe(401);
    // Right name, wrong key: someone else's Ed25519 key claiming to be each trusted caller.
    const { privateKey } = generateKeyPairSync('ed25519');
    for (const name of SERVICE_NAMES) {
      const forged = token(await createServiceSigner(name, privateKey).sign('billing'));
      const r = await call(method, path, forged, {});
      expect(r.status, r.text).toBe(401);
      expect(r.body.error?.metadata.error_type).toBe('unauthorized');
    }
  });

  it('refuses a management key on /generation with 403 and required_scope', async () => {
    const r = await call('GET', '/generation?id=gen-1-aaaaaaaaaaaaaaaaaaaa', await caller('management'));
    expect(r.status, r.text).toBe(403);
    expect(r.body.error?.metadata).toMatchObject({ error_type: 'forbidden', required_scope: 'inference' });
  });

  it('answers /credits for both scopes with zeros for a new account', async () => {
    for (const scope of ['inference', 'management'] as const) {
      const r = await call('GET', '/credits', await caller(scope));
      expect(r.body, r.text).toEqual({ data: { total_credits: 0, total_usage: 0 } });
    }
  });
});

describe('billing HTTP API: input validation', () => {
  it('answers 400 naming id when /generation has no id', async () => {
    const r = await call('GET', '/generation', await caller());
    expect(r.status, r.text).toBe(400);
    expect(r.body.error?.message).toMatch(/^id:/);
  });

  it.each([
    [{ amount: 'ten' }, /^amount:/],
    [{ amount: '0' }, /^amount:/],
    [{ amount: '1.00000000001' }, /^amount:/],
    [{}, /^amount:/],
    [{ amount: '1', note: 5 }, /^note:/],
  ])('answers 400 for credits body %j', async (body, message) => {
    const r = await call('POST', `/internal/accounts/${randomUUID()}/credits`, await service(), body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error?.message).toMatch(message);
  });

  it('answers 400 for a malformed account id, a non-boolean postpaid, and invalid JSON', async () => {
    expect(
      (await call('PUT', '/internal/accounts/acme/postpaid', await service(), { postpaid: true })).status,
    ).toBe(400);
    const r = await call('PUT', `/internal/accounts/${randomUUID()}/postpaid`, await service(), {
      postpaid: 'yes',
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error?.message).toMatch(/^postpaid:/);
    expect((await call('POST', '/internal/usage/keys', await service('keys'), '{"keys": [')).status).toBe(
      400,
    );
  });

  it('answers 400 naming the field for bad usage and rebuild bodies', async () => {
    const a = await call('POST', '/internal/usage/keys', await service('keys'), { keys: [{ id: 'x' }] });
    expect(a.body.error?.message).toMatch(/^keys\.0\.id:/);
    const b = await call('POST', '/internal/usage/keys', await service('keys'), {
      keys: [{ id: randomUUID(), limit_reset: 'yearly' }],
    });
    expect(b.body.error?.message).toMatch(/^keys\.0\.limit_reset:/);
    const c = await call('POST', '/internal/spend/rebuild', await service('proxy'), { account_id: 'nope' });
    expect(c.body.error?.message).toMatch(/^account_id:/);
  });
});

describe('billing HTTP API: service identity (issue 14)', () => {
  const grant = (headers: Record<string, string>, accountId = randomUUID()) =>
    call('POST', `/internal/accounts/${accountId}/credits`, headers, { amount: '5' });
  const postpaid = (headers: Record<string, string>, accountId = randomUUID()) =>
    call('PUT', `/internal/accounts/${accountId}/postpaid`, headers, { postpaid: true });

  it.each(['proxy', 'keys', 'dashboard', 'billing'] as const)(
    'refuses the %s identity on the credit grant and postpaid routes with 403 (only admin moves money)',
    async (name) => {
      const accountId = randomUUID();
      for (const r of [
        await grant(await service(name), accountId),
        await postpaid(await service(name), accountId),
      ]) {
        expect(r.status, r.text).toBe(403);
        expect(r.body.error?.metadata).toMatchObject({ error_type: 'forbidden', caller: name });
      }
      // Nothing was granted or changed.
      const ledger = await call('GET', `/internal/accounts/${accountId}/credits`, await service('dashboard'));
      expect(ledger.status, ledger.text).toBe(200);
      expect(ledger.body.data).toMatchObject({ ledger: [] });
      expect(Number((ledger.body.data as { total_credits: string }).total_credits)).toBe(0);
      const settings = await s.billing.db
        .selectFrom('billing.account_settings')
        .selectAll()
        .where('account_id', '=', accountId)
        .execute();
      expect(settings).toEqual([]);
    },
  );

  it('accepts the admin identity on the credit routes', async () => {
    const accountId = randomUUID();
    expect((await grant(await service('admin'), accountId)).status).toBe(201);
    expect((await postpaid(await service('admin'), accountId)).status).toBe(200);
  });

  it('refuses a valid admin token made for another audience (keys, dashboard) with 401', async () => {
    for (const audience of ['keys', 'dashboard', 'proxy'] as const) {
      const r = await grant(token(await devServiceSigner('admin').sign(audience)));
      expect(r.status, r.text).toBe(401);
    }
  });

  it('refuses an expired token, a tampered one and an unsigned one with 401', async () => {
    const admin = devServiceSigner('admin');
    expect((await grant(token(await admin.sign('billing', { kind: 'service' }, -5)))).status).toBe(401);
    const good = await admin.sign('billing');
    const [h, p, sig] = good.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 3600 })).toString('base64url');
    expect((await grant(token(`${h}.${longer}.${sig}`))).status).toBe(401);
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    expect((await grant(token(`${none}.${p}.`))).status).toBe(401);
    // A lifetime beyond the callee's maximum is refused even when correctly signed.
    expect((await grant(token(await admin.sign('billing', { kind: 'service' }, 3600)))).status).toBe(401);
  });

  it('re-reads the caller key: another account, another scope, disabled, revoked or unknown is 401 (issue 23)', async () => {
    const proxy = devServiceSigner('proxy');
    const keyId = randomUUID();
    const accountId = randomUUID();
    const claims = { kind: 'key', keyId, accountId, scope: 'management' } as const;
    const credits = async () => call('GET', '/credits', token(await proxy.sign('billing', claims)));
    registerTestKey({ keyId, accountId, scope: 'management' });
    expect((await credits()).status).toBe(200);
    // The token names the key but claims another account (a proxy bug or a forged claim).
    const victim = { ...claims, accountId: randomUUID() };
    const r = await call('GET', '/credits', token(await proxy.sign('billing', victim)));
    expect(r.status, r.text).toBe(401);
    expect(
      (await call('GET', '/credits', token(await proxy.sign('billing', { ...claims, scope: 'inference' }))))
        .status,
    ).toBe(401);
    registerTestKey({ keyId, accountId, scope: 'management', disabled: true });
    expect((await credits()).status).toBe(401);
    registerTestKey({ keyId, accountId, scope: 'management', revoked: true });
    expect((await credits()).status).toBe(401);
    const unknown = { ...claims, keyId: randomUUID() };
    expect((await call('GET', '/credits', token(await proxy.sign('billing', unknown)))).status).toBe(401);
  });

  it('accepts caller identities (kind key) only from the proxy', async () => {
    const claims = { kind: 'key', keyId: randomUUID(), accountId: randomUUID(), scope: 'inference' } as const;
    registerTestKey(claims);
    expect(
      (await call('GET', '/credits', token(await devServiceSigner('proxy').sign('billing', claims)))).status,
    ).toBe(200);
    for (const name of ['keys', 'dashboard', 'admin'] as const) {
      const r = await call('GET', '/credits', token(await devServiceSigner(name).sign('billing', claims)));
      expect(r.status, r.text).toBe(401);
    }
  });

  it.each([
    ['POST', '/internal/usage/keys', 'keys', { keys: [] }],
    ['POST', '/internal/usage/teams', 'dashboard', { teams: [] }],
    ['POST', '/internal/spend/rebuild', 'proxy', { account_id: randomUUID() }],
    ['GET', `/internal/accounts/${randomUUID()}/usage`, 'dashboard', undefined],
    ['GET', '/internal/dlq', 'admin', undefined],
  ] as const)(
    '%s %s accepts %s and refuses every other identity with 403',
    async (method, path, allowed, body) => {
      for (const name of SERVICE_NAMES) {
        const r = await call(method, path, await service(name), body);
        if (name === allowed) expect(r.status, `${name}: ${r.text}`).not.toBe(403);
        else expect(r.status, `${name}: ${r.text}`).toBe(403);
      }
    },
  );
});

describe('billing HTTP API: internal endpoints', () => {
  it('reports per-key usage for the current periods, in the key limit period as usage', async () => {
    const keyId = randomUUID();
    const accountId = randomUUID();
    const today = usageEvent({
      key_id: keyId,
      account_id: accountId,
      cost: '0.5',
      finished_at: now.toISOString(),
    });
    const lastMonth = usageEvent({
      key_id: keyId,
      account_id: accountId,
      cost: '1',
      finished_at: '2026-10-31T23:59:59.000Z',
    });
    await s.publish(today, lastMonth);
    await vi.waitFor(
      async () => {
        const rows = await s.billing.db
          .selectFrom('billing.generations')
          .select('id')
          .where('key_id', '=', keyId)
          .execute();
        expect(rows).toHaveLength(2);
      },
      { timeout: 5000 },
    );
    const unknown = randomUUID();
    const r = await call('POST', '/internal/usage/keys', await serviceHeaders('keys'), {
      keys: [
        { id: keyId, limit_reset: null },
        { id: unknown, limit_reset: 'daily' },
      ],
    });
    expect(r.body, r.text).toEqual({
      data: {
        [keyId]: { usage: '1.5', usage_daily: '0.5', usage_weekly: '0.5', usage_monthly: '0.5' },
        [unknown]: { usage: '0', usage_daily: '0', usage_weekly: '0', usage_monthly: '0' },
      },
    });
  });

  it('adds credits to a ledger and returns the exact total', async () => {
    const accountId = randomUUID();
    await call('POST', `/internal/accounts/${accountId}/credits`, await service(), {
      amount: '10.50',
      note: 'first',
    });
    const r = await call('POST', `/internal/accounts/${accountId}/credits`, await service(), { amount: 0.1 });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({ data: { account_id: accountId, total_credits: '10.6' } });
    const p = await call('PUT', `/internal/accounts/${accountId}/postpaid`, await service(), {
      postpaid: true,
    });
    expect(p.body).toEqual({ data: { account_id: accountId, postpaid: true } });
  });
});
