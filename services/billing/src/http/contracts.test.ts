/**
 * Owner's side of billing's internal contracts (@tollgate/contracts): each answer of the real routes
 * parses with the contract's response schema, and each request schema's refusals are 400s. The callers'
 * side is in packages/http (service client) and the callers' own tests.
 */
import { randomUUID } from 'node:crypto';
import { devServiceSigner, type ServiceName, serviceTokenSource } from '@tollgate/auth';
import {
  accountCredits,
  accountUsage,
  getAccountGeneration,
  grantCredits,
  keysUsage,
  listAccountGenerations,
  queryString,
  replayDeadLetters,
  setPostpaid,
  showDeadLetters,
  spendRebuild,
  teamsUsage,
} from '@tollgate/contracts';
import { createServiceClient, type ServiceClient } from '@tollgate/http';
import { periodKey } from '@tollgate/money';
import { expectContract } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serviceHeaders, startTestBilling, type TestBillingStack, usageEvent } from '../../test/testing';

let t: TestBillingStack;
/** The caller each route accepts (docs/architecture.md "Service identity"). */
function callerFor(method: string, path: string): ServiceName {
  if (path.startsWith('/internal/dlq')) return 'admin';
  if ((method === 'POST' && /\/credits$/.test(path)) || /\/postpaid$/.test(path)) return 'admin';
  if (path.startsWith('/internal/usage/keys')) return 'keys';
  if (path.startsWith('/internal/usage/teams')) return 'dashboard';
  if (path.startsWith('/internal/spend/rebuild')) return 'proxy';
  return 'dashboard';
}
const clients = new Map<ServiceName, ServiceClient>();
/** Billing through the service client, as the route's real caller. */
const billing = {
  call: ((o: { method: string; path: string }) => {
    const caller = callerFor(o.method, o.path);
    let client = clients.get(caller);
    if (!client) {
      client = createServiceClient({
        service: 'billing',
        url: t.billing.url,
        token: serviceTokenSource(devServiceSigner(caller), 'billing'),
      });
      clients.set(caller, client);
    }
    return client.call(o as Parameters<ServiceClient['call']>[0]);
  }) as ServiceClient['call'],
};
beforeAll(async () => {
  t = await startTestBilling();
});
afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close()));
  await t?.cleanup();
});

describe("billing's internal contracts (owner side)", () => {
  const account = randomUUID();
  const key = randomUUID();

  it('grantCredits: the answer matches the contract', async () => {
    const answer = await billing.call({
      method: grantCredits.method,
      path: grantCredits.path(account),
      body: { amount: '12.5', note: 'contract test' },
      response: grantCredits.response,
    });
    expect(answer.data).toEqual({ account_id: account, total_credits: '12.5' });
  });

  it('setPostpaid: the answer matches the contract', async () => {
    const answer = await billing.call({
      method: setPostpaid.method,
      path: setPostpaid.path(account),
      body: { postpaid: true },
      response: setPostpaid.response,
    });
    expect(answer.data).toEqual({ account_id: account, postpaid: true });
  });

  it('keysUsage: one entry per requested key, decimal strings', async () => {
    const answer = await billing.call({
      method: keysUsage.method,
      path: keysUsage.path,
      body: { keys: [{ id: key, limit_reset: 'daily' }] },
      response: keysUsage.response,
    });
    expect(answer.data[key]).toEqual({ usage: '0', usage_daily: '0', usage_weekly: '0', usage_monthly: '0' });
  });

  it('teamsUsage: one entry per requested team, from billing.team_spend', async () => {
    const team = randomUUID();
    await t.billing.db
      .insertInto('billing.team_spend')
      .values([
        { team_id: team, account_id: account, period: periodKey('weekly', new Date()), amount: '1.25' },
        { team_id: team, account_id: account, period: periodKey(null, new Date()), amount: '3.5' },
      ])
      .execute();
    const never = randomUUID();
    const answer = await billing.call({
      method: teamsUsage.method,
      path: teamsUsage.path,
      body: {
        teams: [
          { id: team, limit_reset: 'weekly' },
          { id: never, limit_reset: null },
        ],
      },
      response: teamsUsage.response,
    });
    expect(answer.data[team]).toMatchObject({ usage: '1.25', usage_weekly: '1.25' });
    expect(answer.data[never]).toEqual({
      usage: '0',
      usage_daily: '0',
      usage_weekly: '0',
      usage_monthly: '0',
    });
  });

  it('spendRebuild: the answer matches the contract', async () => {
    const answer = await billing.call({
      method: spendRebuild.method,
      path: spendRebuild.path,
      body: { account_id: account, key_id: key, at: new Date().toISOString() },
      response: spendRebuild.response,
    });
    expect(answer.data.rebuilt).toBe(true);
  });

  it('refuses what the request schemas refuse with a 400 naming the field (relayed by the client)', async () => {
    const bad = [
      {
        path: keysUsage.path,
        method: keysUsage.method,
        body: { keys: [{ id: 'nope' }] },
        field: /keys\.0\.id/,
      },
      {
        path: spendRebuild.path,
        method: spendRebuild.method,
        body: { account_id: 'x' },
        field: /account_id/,
      },
      {
        path: grantCredits.path(account),
        method: grantCredits.method,
        body: { amount: true },
        field: /amount/,
      },
      {
        path: setPostpaid.path(account),
        method: setPostpaid.method,
        body: { postpaid: 'yes' },
        field: /postpaid/,
      },
    ] as const;
    for (const b of bad) {
      await expect(
        billing.call({ method: b.method, path: b.path, body: b.body, response: keysUsage.response }),
      ).rejects.toMatchObject({ status: 400, type: 'bad_request', message: expect.stringMatching(b.field) });
    }
  });
});

/** The raw answer of a real route (the service client would strip undeclared fields). */
async function raw(method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.billing.url}${path}`, {
    method,
    headers: await serviceHeaders(callerFor(method, path)),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: inspected freely after expectContract checked the shape
  return { status: res.status, body: (await res.json()) as any };
}

describe("billing's internal contracts: every answer declares every field it carries", () => {
  const account = randomUUID();
  const key = randomUUID();
  const event = usageEvent({
    account_id: account,
    key_id: key,
    app: 'contract-app',
    attempts: [{ provider: 'sim', model: 'gpt-4o-mini', status: 200, outcome: 'ok', latency_ms: 90 }],
  });

  beforeAll(async () => {
    await t.publish(event);
    await vi.waitFor(
      async () => expect((await raw('GET', getAccountGeneration.path(account, event.id))).status).toBe(200),
      { timeout: 10_000, interval: 50 },
    );
  });

  it('grantCredits, setPostpaid, keysUsage, spendRebuild', async () => {
    const granted = await raw(grantCredits.method, grantCredits.path(account), { amount: '5', note: 'n' });
    expect(granted.status).toBe(201);
    expectContract(grantCredits.response, granted.body);
    const postpaid = await raw(setPostpaid.method, setPostpaid.path(account), { postpaid: false });
    expectContract(setPostpaid.response, postpaid.body);
    const usage = await raw(keysUsage.method, keysUsage.path, { keys: [{ id: key, limit_reset: 'daily' }] });
    expectContract(keysUsage.response, usage.body);
    expect(usage.body.data[key].usage).toBe('0.001');
    const rebuilt = await raw(spendRebuild.method, spendRebuild.path, { account_id: account, key_id: key });
    expectContract(spendRebuild.response, rebuilt.body);
  });

  it('accountUsage (every grouping)', async () => {
    for (const group_by of ['none', 'model', 'app', 'key', 'provider'] as const) {
      const query = {
        from: new Date(Date.now() - 86_400_000).toISOString(),
        to: new Date(Date.now() + 3_600_000).toISOString(),
        granularity: 'hour',
        group_by,
      } as const;
      const r = await raw(accountUsage.method, `${accountUsage.path(account)}${queryString(query)}`);
      expect(r.status).toBe(200);
      expectContract(accountUsage.response, r.body);
      expect(r.body.data.rows).toHaveLength(1);
    }
  });

  it('listAccountGenerations and getAccountGeneration', async () => {
    const list = await raw(
      listAccountGenerations.method,
      `${listAccountGenerations.path(account)}${queryString({ limit: 10, app: 'contract-app' })}`,
    );
    expect(list.status).toBe(200);
    expectContract(listAccountGenerations.response, list.body);
    expect(list.body.data.map((g: { id: string }) => g.id)).toEqual([event.id]);
    const one = await raw(getAccountGeneration.method, getAccountGeneration.path(account, event.id));
    expectContract(getAccountGeneration.response, one.body);
    expect(one.body.data).toMatchObject({ id: event.id, key_id: key, cost: '0.001' });
  });

  it('accountCredits', async () => {
    const r = await raw(accountCredits.method, `${accountCredits.path(account)}${queryString({ limit: 1 })}`);
    expect(r.status).toBe(200);
    expectContract(accountCredits.response, r.body);
    expect(r.body.data.ledger).toHaveLength(1);
  });

  it('showDeadLetters and replayDeadLetters', async () => {
    await t.publish('not json');
    await vi.waitFor(
      async () => expect((await raw('GET', showDeadLetters.path(5))).body.data.count).toBeGreaterThan(0),
      { timeout: 10_000, interval: 50 },
    );
    const shown = await raw('GET', showDeadLetters.path(5));
    expectContract(showDeadLetters.response, shown.body);
    const replayed = await raw(replayDeadLetters.method, replayDeadLetters.path, { limit: 5 });
    expect(replayed.status).toBe(200);
    expectContract(replayDeadLetters.response, replayed.body);
    expect(replayed.body.data).toMatchObject({ replayed: 0, invalid: 1 });
  });

  it('the query schemas refuse with a 400 naming the parameter', async () => {
    const cases: Array<[string, RegExp]> = [
      [`${accountUsage.path(account)}?from=x&to=y`, /^from:/],
      [
        `${accountUsage.path(account)}${queryString({ from: new Date().toISOString(), to: new Date().toISOString(), extra: 1 })}`,
        /unknown parameter/,
      ],
      [`${listAccountGenerations.path(account)}?limit=0`, /^limit:/],
      [`${listAccountGenerations.path(account)}?before=nope`, /^before:/],
      [`${accountCredits.path(account)}?before=nope`, /^before:/],
      [`${getAccountGeneration.path(account, 'nope')}`, /^id:/],
      [`${showDeadLetters.path()}?limit=5000`, /^limit:/],
    ];
    for (const [path, message] of cases) {
      const r = await raw('GET', path);
      expect(r.status, path).toBe(400);
      expect(r.body.error.message, path).toMatch(message);
    }
  });
});
