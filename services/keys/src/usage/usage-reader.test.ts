import { createServer, type IncomingMessage, type Server } from 'node:http';
import { devServiceVerifier, SERVICE_TOKEN_HEADER } from '@tollgate/auth';
import { periodKey, toUnits } from '@tollgate/money';
import { createSpendStore, spendKeyHash } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectError, expectStatus } from '../../test/test-client';
import { startTestKeysService, type TestKeysService } from '../../test/testing';

/** Stands in for billing's POST /internal/usage/keys (contract `keysUsage` in @tollgate/contracts): the answer is chosen per test. */
let billing: Server;
let billingUrl: string;
let answer: (body: { keys: Array<{ id: string; limit_reset: string | null }> }) => {
  status: number;
  body: unknown;
};
const calls: Array<{ token: unknown; body: unknown }> = [];

const readBody = async (req: IncomingMessage) => {
  let text = '';
  for await (const chunk of req) text += chunk;
  return JSON.parse(text);
};

let t: TestKeysService;
beforeAll(async () => {
  billing = createServer(async (req, res) => {
    const body = await readBody(req);
    calls.push({
      token: await devServiceVerifier('billing').verify(String(req.headers[SERVICE_TOKEN_HEADER])),
      body,
    });
    const out =
      req.url === '/internal/usage/keys' && req.method === 'POST' ? answer(body) : { status: 404, body: {} };
    res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.body));
  });
  await new Promise<void>((r) => billing.listen(0, '127.0.0.1', r));
  billingUrl = `http://127.0.0.1:${(billing.address() as { port: number }).port}`;
  t = await startTestKeysService({ env: { BILLING_URL: billingUrl } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => billing.close(r));
});

describe('usage figures from billing', () => {
  it('fills usage and limit_remaining of listed keys with one call carrying a keys service token', async () => {
    const acct = await t.createAccount();
    const a = await t.createKey(acct.id, { limit: '10', limitReset: 'daily' });
    const b = await t.createKey(acct.id, { limit: '1' });
    answer = ({ keys }) => ({
      status: 200,
      body: {
        data: Object.fromEntries(
          keys.map((k) => [
            k.id,
            k.id === a.id
              ? { usage: '2.5000000001', usage_daily: '2.5000000001', usage_weekly: '3', usage_monthly: '4' }
              : { usage: '1.75', usage_daily: '0', usage_weekly: '0', usage_monthly: '1.75' },
          ]),
        ),
      },
    });
    calls.length = 0;
    const res = await api(t, 'GET', '/keys', { as: acct.managementKey });
    expectStatus(res, 200);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.token).toEqual({ kind: 'service', caller: 'keys' });
    expect(calls[0]?.body).toEqual({
      keys: expect.arrayContaining([
        { id: a.id, limit_reset: 'daily' },
        { id: b.id, limit_reset: null },
      ]),
    });
    const byId = Object.fromEntries(res.body.data.map((k: { hash: string }) => [k.hash, k]));
    expect(byId[a.id]).toMatchObject({ usage: 2.5000000001, limit_remaining: 7.4999999999 });
    expect(byId[b.id]).toMatchObject({ usage: 1.75, limit_remaining: 0 }); // over the limit: never negative

    const me = await api(t, 'GET', '/key', { as: a });
    expect(me.body.data).toMatchObject({
      usage: 2.5000000001,
      usage_daily: 2.5000000001,
      usage_weekly: 3,
      usage_monthly: 4,
    });
  });

  it('reads zero for a key billing has never seen', async () => {
    answer = () => ({ status: 200, body: { data: {} } });
    const key = await t.createKey(t.account.id, { limit: '5' });
    const res = await api(t, 'GET', `/keys/${key.id}`);
    expect(res.body.data).toMatchObject({ usage: 0, limit_remaining: 5 });
  });

  it('answers 503 on reads when billing fails, but still applies and answers a change', async () => {
    const key = await t.createKey(t.account.id, { limit: '5' });
    for (const failure of [
      { status: 500, body: { error: 'boom' } },
      { status: 200, body: { data: { [key.id]: { usage: 1 } } } },
      {
        status: 400,
        body: {
          error: {
            code: 400,
            message: 'keys.0.id: internal detail',
            metadata: { error_type: 'bad_request' },
          },
        },
      },
    ]) {
      answer = () => failure;
      const one = await api(t, 'GET', `/keys/${key.id}`);
      expectError(one, 503, 'service_unavailable', /[Uu]sage/);
      // The public caller never sees what billing said or why the call failed (it is logged instead).
      expect(one.body.error.metadata).toEqual({ error_type: 'service_unavailable', service: 'billing' });
      expect(JSON.stringify(one.body)).not.toMatch(/internal detail|500|boom/);
      expectError(await api(t, 'GET', '/keys'), 503, 'service_unavailable');
    }
    const patched = await api(t, 'PATCH', `/keys/${key.id}`, { body: { disabled: true } });
    expectStatus(patched, 200);
    expect(patched.body.data).toMatchObject({ disabled: true, usage: 0 });
  });

  it('creating a key does not call billing (a new key has spent nothing)', async () => {
    calls.length = 0;
    const res = await api(t, 'POST', '/keys', { body: { name: 'fresh', limit: 3 } });
    expectStatus(res, 201);
    expect(res.body.data).toMatchObject({ usage: 0, limit_remaining: 3 });
    expect(calls).toHaveLength(0);
  });
});

describe('usage figures from the spend counters in Redis', () => {
  const now = new Date();
  const current = { d: periodKey('daily', now), w: periodKey('weekly', now), m: periodKey('monthly', now) };

  it('reads committed spend from a built key hash without calling billing; other keys in one billing call', async () => {
    const store = createSpendStore(t.redis.client, { prefix: t.redis.prefix });
    const acct = await t.createAccount();
    const counted = await t.createKey(acct.id, { limit: '10', limitReset: 'weekly' });
    const unbuilt = await t.createKey(acct.id, { limit: '5' });
    const other = await t.createKey(acct.id, {});
    // A hash built from Postgres (rebuild), then a commit raising two periods; a reservation and a
    // pending cost (not committed) must not show.
    await store.beginRebuild({ accountId: acct.id, keyId: counted.id, skipAccount: true }, now.getTime());
    await store.loadKey(acct.id, counted.id, now.getTime(), current, [
      [current.m, toUnits('4')],
      ['all', toUnits('6.5')],
    ]);
    await store.applyCommitted(
      now.getTime(),
      [
        {
          keyId: counted.id,
          accountId: acct.id,
          totals: [
            [current.d, toUnits('1.0000000001')],
            [current.w, toUnits('2')],
          ],
          requestIds: [],
        },
      ],
      [],
    );
    await store.admit({
      keyId: counted.id,
      accountId: acct.id,
      requestId: 'gen-in-flight',
      worstCaseUnits: toUnits('3'),
      limitUnits: toUnits('10'),
      period: current.w,
      now: now.getTime(),
    });
    // A hash that exists but was never built (placeholder of a rebuild under way): billing answers.
    await store.beginRebuild({ accountId: acct.id, keyId: unbuilt.id, skipAccount: true }, now.getTime());
    answer = ({ keys }) => ({
      status: 200,
      body: {
        data: Object.fromEntries(
          keys.map((k) => [
            k.id,
            { usage: '0.5', usage_daily: '0.5', usage_weekly: '0.5', usage_monthly: '0.5' },
          ]),
        ),
      },
    });

    calls.length = 0;
    const me = await api(t, 'GET', '/key', { as: counted });
    expectStatus(me, 200);
    expect(calls).toHaveLength(0);
    expect(me.body.data).toMatchObject({
      usage: 2, // weekly limit period
      limit_remaining: 8,
      usage_daily: 1.0000000001,
      usage_weekly: 2,
      usage_monthly: 4,
    });

    calls.length = 0;
    const list = await api(t, 'GET', '/keys', { as: acct.managementKey });
    expectStatus(list, 200);
    expect(calls).toHaveLength(1);
    const asked = ((calls[0]?.body ?? { keys: [] }) as { keys: Array<{ id: string }> }).keys.map((k) => k.id);
    expect(asked).toEqual(expect.arrayContaining([unbuilt.id, other.id]));
    expect(asked).not.toContain(counted.id);
    const byId = Object.fromEntries(list.body.data.map((k: { hash: string }) => [k.hash, k]));
    expect(byId[counted.id]).toMatchObject({ usage: 2, usage_monthly: 4 });
    expect(byId[unbuilt.id]).toMatchObject({ usage: 0.5, limit_remaining: 4.5 });
    expect(byId[other.id]).toMatchObject({ usage: 0.5 });
  });

  it('a built hash with no field for a period reads zero for it; Redis failing falls back to billing', async () => {
    const store = createSpendStore(t.redis.client, { prefix: t.redis.prefix });
    const key = await t.createKey(t.account.id, { limit: '3', limitReset: 'daily' });
    await store.beginRebuild({ accountId: t.account.id, keyId: key.id, skipAccount: true }, now.getTime());
    await store.loadKey(t.account.id, key.id, now.getTime(), current, [['all', toUnits('9')]]);
    calls.length = 0;
    const me = await api(t, 'GET', '/key', { as: key });
    expect(calls).toHaveLength(0);
    expect(me.body.data).toMatchObject({ usage: 0, limit_remaining: 3, usage_daily: 0, usage_monthly: 0 });

    // A spend hash of the wrong type: Redis answers the read with an error; billing is asked instead.
    const hash = spendKeyHash(t.redis.prefix, t.account.id, key.id);
    await t.redis.client.del(hash);
    await t.redis.client.set(hash, 'not a hash');
    answer = ({ keys }) => ({
      status: 200,
      body: {
        data: Object.fromEntries(
          keys.map((k) => [k.id, { usage: '1', usage_daily: '1', usage_weekly: '1', usage_monthly: '1' }]),
        ),
      },
    });
    const again = await api(t, 'GET', '/key', { as: key });
    expectStatus(again, 200);
    expect(calls).toHaveLength(1);
    expect(again.body.data).toMatchObject({ usage: 1, limit_remaining: 2 });
  });
});
