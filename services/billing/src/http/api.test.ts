import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  keyHeaders,
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

const service = () => serviceHeaders(s.secret);
const caller = (scope: 'inference' | 'management' = 'inference') =>
  keyHeaders(s.secret, { keyId: randomUUID(), accountId: randomUUID(), scope });

describe('billing HTTP API: authentication', () => {
  it.each([
    ['GET', '/generation?id=gen-1-aaaaaaaaaaaaaaaaaaaa'],
    ['GET', '/credits'],
  ])('answers 401 on %s %s without a caller token, or with a service token', async (method, path) => {
    expect((await call(method, path, {})).status).toBe(401);
    const r = await call(method, path, service());
    expect(r.status, r.text).toBe(401);
    expect(r.body.error?.metadata.error_type).toBe('unauthorized');
  });

  it.each([
    ['POST', '/internal/usage/keys'],
    ['POST', '/internal/spend/rebuild'],
    ['POST', `/internal/accounts/${randomUUID()}/credits`],
    ['PUT', `/internal/accounts/${randomUUID()}/postpaid`],
  ])('answers 401 on %s %s to a caller token or a forged service token', async (method, path) => {
    expect((await call(method, path, caller(), {})).status).toBe(401);
    const forged = serviceHeaders('another-secret-0123456789abcdef');
    expect((await call(method, path, forged, {})).status).toBe(401);
  });

  it('refuses a management key on /generation with 403 and required_scope', async () => {
    const r = await call('GET', '/generation?id=gen-1-aaaaaaaaaaaaaaaaaaaa', caller('management'));
    expect(r.status, r.text).toBe(403);
    expect(r.body.error?.metadata).toMatchObject({ error_type: 'forbidden', required_scope: 'inference' });
  });

  it('answers /credits for both scopes with zeros for a new account', async () => {
    for (const scope of ['inference', 'management'] as const) {
      const r = await call('GET', '/credits', caller(scope));
      expect(r.body, r.text).toEqual({ data: { total_credits: 0, total_usage: 0 } });
    }
  });
});

describe('billing HTTP API: input validation', () => {
  it('answers 400 naming id when /generation has no id', async () => {
    const r = await call('GET', '/generation', caller());
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
    const r = await call('POST', `/internal/accounts/${randomUUID()}/credits`, service(), body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error?.message).toMatch(message);
  });

  it('answers 400 for a malformed account id, a non-boolean postpaid, and invalid JSON', async () => {
    expect(
      (await call('PUT', '/internal/accounts/acme/postpaid', service(), { postpaid: true })).status,
    ).toBe(400);
    const r = await call('PUT', `/internal/accounts/${randomUUID()}/postpaid`, service(), {
      postpaid: 'yes',
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error?.message).toMatch(/^postpaid:/);
    expect((await call('POST', '/internal/usage/keys', service(), '{"keys": [')).status).toBe(400);
  });

  it('answers 400 naming the field for bad usage and rebuild bodies', async () => {
    const a = await call('POST', '/internal/usage/keys', service(), { keys: [{ id: 'x' }] });
    expect(a.body.error?.message).toMatch(/^keys\.0\.id:/);
    const b = await call('POST', '/internal/usage/keys', service(), {
      keys: [{ id: randomUUID(), limit_reset: 'yearly' }],
    });
    expect(b.body.error?.message).toMatch(/^keys\.0\.limit_reset:/);
    const c = await call('POST', '/internal/spend/rebuild', service(), { account_id: 'nope' });
    expect(c.body.error?.message).toMatch(/^account_id:/);
  });
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
    const r = await call('POST', '/internal/usage/keys', serviceHeaders(s.secret, 'keys'), {
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
    await call('POST', `/internal/accounts/${accountId}/credits`, service(), {
      amount: '10.50',
      note: 'first',
    });
    const r = await call('POST', `/internal/accounts/${accountId}/credits`, service(), { amount: 0.1 });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({ data: { account_id: accountId, total_credits: '10.6' } });
    const p = await call('PUT', `/internal/accounts/${accountId}/postpaid`, service(), { postpaid: true });
    expect(p.body).toEqual({ data: { account_id: accountId, postpaid: true } });
  });
});
