/**
 * The callers' side of the dashboard's contracts (@tollgate/contracts): every method of the internal
 * client against the real keys and billing services answers what its contract declares (the client
 * parses each answer with the contract; a mismatch would be a 503), and the owners' 4xx come back as
 * the same AppError.
 */
import { randomUUID } from 'node:crypto';
import { devServiceSigner } from '@tollgate/auth';
import { startTestBilling, type TestBillingStack, usageEvent } from '@tollgate/billing/testing';
import { startTestKeysService, type TestKeysService } from '@tollgate/keys/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createInternalClient, type InternalClient } from './internal-client';

let billing: TestBillingStack;
let keys: TestKeysService;
const acting = { userId: randomUUID(), address: '203.0.113.7' };
let client: InternalClient & { close(): Promise<void> };

beforeAll(async () => {
  billing = await startTestBilling();
  keys = await startTestKeysService({
    env: { BILLING_URL: billing.billing.url },
  });
  client = createInternalClient({
    keysUrl: keys.url,
    billingUrl: billing.billing.url,
    signer: devServiceSigner('dashboard'),
    timeoutMs: 5000,
  });
});
afterAll(async () => {
  await client?.close();
  await keys?.close();
  await billing?.cleanup();
});

describe("the dashboard's internal client (callers' side of the contracts)", () => {
  it('keys: account, create (governance fields), update, list (all pages), revoke', async () => {
    const accountId = keys.account.id;
    expect(await client.account(accountId)).toEqual({
      id: accountId,
      slug: keys.account.slug,
      name: expect.any(String),
      store_bodies: false,
    });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await client.createKey(
      accountId,
      {
        name: 'dash',
        limit: 1.5,
        limit_reset: 'weekly',
        expires_at: expiresAt,
        allowed_models: ['openai/gpt-4o-mini'],
        rate_limit_rpm: 30,
      },
      acting,
    );
    expect(created).toMatchObject({
      name: 'dash',
      limit: 1.5,
      expires_at: expiresAt,
      allowed_models: ['openai/gpt-4o-mini'],
      rate_limit_rpm: 30,
      key: expect.stringMatching(/^sk-tg-v1-/),
    });
    const updated = await client.updateKey(
      accountId,
      created.hash,
      { disabled: true, rate_limit_rpm: null },
      acting,
    );
    expect(updated).toMatchObject({ disabled: true, rate_limit_rpm: null });
    expect((await client.listKeys(accountId, false)).map((k) => k.hash)).toContain(created.hash);
    expect(await client.revokeKey(accountId, created.hash, acting)).toEqual({
      hash: created.hash,
      deleted: true,
    });
    expect((await client.listKeys(accountId, false)).map((k) => k.hash)).not.toContain(created.hash);
    expect((await client.listKeys(accountId, true)).map((k) => k.hash)).toContain(created.hash);
    // Each change once in the keys service's audit log, acted by the dashboard user from the client's address.
    const audit = await client.audit(accountId, { target_id: created.hash });
    expect(audit.data.map((e) => [e.action, e.actor.kind, e.actor.id, e.client_address])).toEqual([
      ['key.revoke', 'user', acting.userId, acting.address],
      ['key.update', 'user', acting.userId, acting.address],
      ['key.create', 'user', acting.userId, acting.address],
    ]);
    expect(audit.data[1]).toMatchObject({
      before: { disabled: false, rate_limit_rpm: 30 },
      after: { disabled: true, rate_limit_rpm: null },
    });
    expect(audit.next_before).toBeNull();
  });

  it('keys: the owner’s 4xx is relayed as the same error', async () => {
    await expect(client.account(randomUUID())).rejects.toMatchObject({ status: 404, type: 'not_found' });
    await expect(client.createKey(keys.account.id, { name: '' }, acting)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/^name:/),
    });
  });

  it('billing: usage, generations, one generation, credits', async () => {
    const accountId = randomUUID();
    const event = usageEvent({ account_id: accountId, app: 'caller-app', cost: '0.25' });
    await billing.publish(event);
    await vi.waitFor(async () => expect((await client.generations(accountId, {})).data).toHaveLength(1), {
      timeout: 10_000,
      interval: 50,
    });
    const usage = await client.usage(accountId, {
      from: new Date(Date.now() - 86_400_000).toISOString(),
      to: new Date(Date.now() + 86_400_000).toISOString(),
      granularity: 'total',
      group_by: 'app',
    });
    expect(usage.rows).toEqual([expect.objectContaining({ group: 'caller-app', requests: 1, cost: '0.25' })]);
    const page = await client.generations(accountId, { limit: 1 });
    expect(page).toMatchObject({ data: [{ id: event.id, cost: '0.25' }], next_before: null });
    expect(await client.generation(accountId, event.id)).toMatchObject({ id: event.id, app: 'caller-app' });
    const credits = await client.credits(accountId, { limit: 5 });
    expect(credits).toMatchObject({ total_usage: '0.25', ledger: [], next_before: null });
    await expect(client.generation(randomUUID(), event.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.generations(accountId, { limit: 0 })).rejects.toMatchObject({ status: 400 });
  });
});
