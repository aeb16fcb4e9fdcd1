/**
 * Owner's side of billing's internal contracts (@tollgate/contracts): each answer of the real routes
 * parses with the contract's response schema, and each request schema's refusals are 400s. The callers'
 * side is in packages/http (service client) and the callers' own tests.
 */
import { randomUUID } from 'node:crypto';
import { devServiceSigner, type ServiceName, serviceTokenSource } from '@tollgate/auth';
import { grantCredits, keysUsage, setPostpaid, spendRebuild } from '@tollgate/contracts';
import { createServiceClient, type ServiceClient } from '@tollgate/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBilling, type TestBillingStack } from '../testing';

let t: TestBillingStack;
const clients = new Map<ServiceName, ServiceClient>();
/** Billing as its real caller of each route sees it (admin: credits; keys: usage; proxy: rebuild). */
const billingAs = (caller: ServiceName): ServiceClient => {
  let client = clients.get(caller);
  if (!client) {
    client = createServiceClient({
      service: 'billing',
      url: t.billing.url,
      token: serviceTokenSource(devServiceSigner(caller), 'billing'),
    });
    clients.set(caller, client);
  }
  return client;
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
    const answer = await billingAs('admin').call({
      method: grantCredits.method,
      path: grantCredits.path(account),
      body: { amount: '12.5', note: 'contract test' },
      response: grantCredits.response,
    });
    expect(answer.data).toEqual({ account_id: account, total_credits: '12.5' });
  });

  it('setPostpaid: the answer matches the contract', async () => {
    const answer = await billingAs('admin').call({
      method: setPostpaid.method,
      path: setPostpaid.path(account),
      body: { postpaid: true },
      response: setPostpaid.response,
    });
    expect(answer.data).toEqual({ account_id: account, postpaid: true });
  });

  it('keysUsage: one entry per requested key, decimal strings', async () => {
    const answer = await billingAs('keys').call({
      method: keysUsage.method,
      path: keysUsage.path,
      body: { keys: [{ id: key, limit_reset: 'daily' }] },
      response: keysUsage.response,
    });
    expect(answer.data[key]).toEqual({ usage: '0', usage_daily: '0', usage_weekly: '0', usage_monthly: '0' });
  });

  it('spendRebuild: the answer matches the contract', async () => {
    const answer = await billingAs('proxy').call({
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
        caller: 'keys',
      },
      {
        path: spendRebuild.path,
        method: spendRebuild.method,
        body: { account_id: 'x' },
        field: /account_id/,
        caller: 'proxy',
      },
      {
        path: grantCredits.path(account),
        method: grantCredits.method,
        body: { amount: true },
        field: /amount/,
        caller: 'admin',
      },
      {
        path: setPostpaid.path(account),
        method: setPostpaid.method,
        body: { postpaid: 'yes' },
        field: /postpaid/,
        caller: 'admin',
      },
    ] as const;
    for (const b of bad) {
      await expect(
        billingAs(b.caller).call({
          method: b.method,
          path: b.path,
          body: b.body,
          response: keysUsage.response,
        }),
      ).rejects.toMatchObject({ status: 400, type: 'bad_request', message: expect.stringMatching(b.field) });
    }
  });
});
