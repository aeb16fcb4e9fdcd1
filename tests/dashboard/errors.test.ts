/**
 * Issue 28, errors and refusals as data, through the real stack (proxy → RabbitMQ → billing →
 * dashboard API): refused requests of known keys are counted by error type and status class beside
 * the answered ones, the error rate is theirs together, the last refusals are listed per key and the
 * id a refused request answered with finds its refusal (never another account's).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DashboardSession, startTestDashboard, type TestDashboard } from '../support/dashboard';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let dash: TestDashboard;
let owner: DashboardSession;
let stranger: DashboardSession;
const ids: Record<string, string> = {};
let limitedKeyId = '';

const messages = [{ role: 'user', content: 'hi' }];
const range = () => {
  const day = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  return `from=${new Date(day - 86_400_000).toISOString()}&to=${new Date(day + 86_400_000).toISOString()}`;
};

beforeAll(async () => {
  stack = await startStack();
  dash = await startTestDashboard(stack);
  owner = await dash.signIn(await dash.createUser(stack.account.id, 'owner'));
  const other = await stack.createAccount({ credits: '5' });
  stranger = await dash.signIn(await dash.createUser(other.id, 'owner'));
  const limited = await stack.createInferenceKey(stack.account.managementKey, {
    name: 'tiny limit',
    limit: 0.000001,
  });
  limitedKeyId = limited.hash;
  const send = async (name: string, body: unknown, key = stack.inferenceKey) => {
    const r = await stack.api('/chat/completions', { key, method: 'POST', body });
    ids[name] = r.headers.get('x-request-id') as string;
    return r.status;
  };
  expect(await send('served', { model: MODEL, messages })).toBe(200);
  expect(await send('bad', { model: MODEL, messages: 'not a list' })).toBe(400);
  expect(await send('provider', { model: MODEL, messages, sim: { error_status: 500 } })).toBe(502);
  expect(await send('scope', { model: MODEL, messages }, stack.account.managementKey)).toBe(403);
  expect(await send('limit', { model: MODEL, messages }, limited.key)).toBe(403);
  await stack.waitForGeneration(ids.served as string);
});
afterAll(async () => {
  await dash?.close();
  await stack?.close();
});

describe('errors and refusals in the dashboard API', () => {
  it('counts every answered request by status class and error type, with the error rate', async () => {
    const total = await vi.waitFor(
      async () => {
        const r = await owner.call('GET', `/api/errors?${range()}&granularity=total`);
        expect(r.status, r.text).toBe(200);
        const row = r.body.data.rows[0];
        expect(Object.values(row?.refused ?? {}).reduce((a: number, b) => a + Number(b), 0)).toBe(4);
        return row;
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(total).toMatchObject({
      requests: 1,
      errors: 0,
      refused: { limit: 1, rate_limit: 0, auth: 1, bad_request: 1, provider: 1, other: 0 },
      status: { '2xx': 1, '4xx': 3, '5xx': 1 },
    });
    expect(total.error_rate).toBeCloseTo(4 / 5, 6);
    const byKey = await owner.call('GET', `/api/errors?${range()}&granularity=total&group_by=key`);
    expect(byKey.body.data.rows).toContainEqual(
      expect.objectContaining({ group: limitedKeyId, requests: 0, error_rate: 1 }),
    );
    const daily = await owner.call('GET', `/api/errors?${range()}&granularity=day`);
    expect(daily.body.data.rows.map((r: { bucket: string }) => r.bucket.slice(11))).toEqual([
      '00:00:00.000Z',
    ]);
  });

  it('lists the last refusals per key and finds one by the id the refused request returned', async () => {
    const last = await owner.call('GET', `/api/refusals?key_id=${limitedKeyId}`);
    expect(last.body.data).toEqual([
      expect.objectContaining({
        id: ids.limit,
        status: 403,
        error_type: 'limit',
        code: 'key_limit_exceeded',
      }),
    ]);
    const one = await owner.call('GET', `/api/refusals/${ids.bad}`);
    expect(one.status, one.text).toBe(200);
    expect(one.body.data).toMatchObject({
      id: ids.bad,
      status: 400,
      error_type: 'bad_request',
      model: MODEL,
    });
    expect((await stranger.call('GET', `/api/refusals/${ids.bad}`)).status).toBe(404);
    expect((await stranger.call('GET', `/api/errors?${range()}&granularity=total`)).body.data.rows).toEqual(
      [],
    );
  });

  it('refuses bad input with 400 naming the parameter, and needs a session', async () => {
    const bad = await owner.call('GET', `/api/errors?${range()}&granularity=week`);
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/granularity/);
    expect((await owner.call('GET', '/api/refusals?limit=1000')).status).toBe(400);
    expect((await owner.call('GET', '/api/refusals?nope=1')).status).toBe(400);
    expect((await owner.call('GET', '/api/refusals/not-an-id')).status).toBe(400);
    expect((await dash.request('GET', `/api/errors?${range()}`)).status).toBe(401);
  });
});
