import { devServiceSigner } from '@tollgate/auth';
import { toUnits } from '@tollgate/money';
import { spendAccountHash } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// The whole stack (provider-sim, billing, keys, proxy with the Redis spend guard) from the root test kit.
import { describeResponse, MODEL, type Stack, startStack } from '../../../../tests/support/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ credits: '100' });
});
afterAll(async () => {
  await stack?.close();
});

const chat = (key: string, maxTokens = 20) =>
  stack.api('/chat/completions', {
    key,
    body: {
      model: MODEL,
      messages: [{ role: 'user', content: 'Count to ten.' }],
      max_tokens: maxTokens,
      sim: { completion_tokens: maxTokens },
    },
  });

async function recordedSpend(keyId: string): Promise<bigint> {
  const row = await stack.services.billing.db
    .selectFrom('billing.key_spend')
    .select('amount')
    .where('key_id', '=', keyId)
    .where('period', '=', 'all')
    .executeTakeFirst();
  return toUnits(row?.amount ?? '0');
}

async function proxyMetric(name: string): Promise<number> {
  const text = await stack.services.proxy.metrics.registry.metrics();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

describe('spend limits through the real proxy', () => {
  it('drops a pending hold billing never counted once its 7 days are over, and counts it on the proxy metric', async () => {
    const first = await chat(stack.inferenceKey);
    expect(first.status, describeResponse(first)).toBe(200);
    const hash = spendAccountHash(stack.infra.redis.prefix, stack.account.id);
    const redis = stack.infra.redis.client;
    // What a dead-lettered event leaves behind: its settled cost held as pending, now expired.
    const field = 'p:gen-0-expiredexpiredexpir';
    const held = BigInt((await redis.hget(hash, '_held')) ?? '0');
    await redis.hset(hash, field, `1000|${Date.now() - 1}`, '_held', String(held + 1000n), '_gc', '0');
    const before = await proxyMetric('tollgate_proxy_spend_pending_holds_expired_total');
    const next = await chat(stack.inferenceKey);
    expect(next.status, describeResponse(next)).toBe(200);
    expect(await redis.hget(hash, field)).toBeNull();
    expect(await proxyMetric('tollgate_proxy_spend_pending_holds_expired_total')).toBe(before + 1);
  });

  it('N concurrent requests against a nearly spent key never take recorded spend over the limit', async () => {
    // Learn the cost of one request (every request below is identical, so costs the same).
    const probe = await chat(stack.inferenceKey);
    expect(probe.status, describeResponse(probe)).toBe(200);
    const cost = toUnits(String(probe.body.usage.cost));
    expect(cost).toBeGreaterThan(0n);

    // Room for a little over 5 requests at their real cost; the guard reserves the worst case.
    const limitUnits = cost * 5n + cost / 2n;
    const limit = Number(limitUnits) / 1e10;
    const key = await stack.createInferenceKey(stack.account.managementKey, { limit, limit_reset: null });
    const responses = await Promise.all(Array.from({ length: 30 }, () => chat(key.key)));
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok.length, responses.map(describeResponse).join('\n')).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeLessThanOrEqual(5);
    for (const r of refused) {
      expect(r.status, describeResponse(r)).toBe(403);
      expect(r.body.error.metadata.error_type).toBe('key_limit_exceeded');
      expect(r.body.error.message).toContain('total');
    }
    await Promise.all(ok.map((r) => stack.waitForGeneration(r.body.id, key.key)));
    await vi.waitFor(async () => expect(await recordedSpend(key.hash)).toBe(cost * BigInt(ok.length)));

    // Keep going one at a time until refused: the total still never passes the limit.
    for (let i = 0; i < 10; i++) {
      const r = await chat(key.key);
      if (r.status !== 200) {
        expect(r.status, describeResponse(r)).toBe(403);
        break;
      }
      await stack.waitForGeneration(r.body.id, key.key);
    }
    expect(await recordedSpend(key.hash)).toBeLessThanOrEqual(limitUnits);
    const status = await stack.api('/key', { key: key.key });
    expect(status.body.data.usage, describeResponse(status)).toBeLessThanOrEqual(limit);
  });

  it('refuses a key at its limit after Redis lost every counter, and admits again once the limit is raised', async () => {
    const probe = await chat(stack.inferenceKey, 5);
    const cost = toUnits(String(probe.body.usage.cost));
    const key = await stack.createInferenceKey(stack.account.managementKey, {
      limit: Number(cost) / 1e10,
      limit_reset: 'daily',
    });
    // The worst case (prompt estimate + max_tokens) is above the real cost: allow it with a bigger limit first.
    await stack.api(`/keys/${key.hash}`, {
      key: stack.account.managementKey,
      method: 'PATCH',
      body: { limit: 1 },
    });
    const first = await chat(key.key, 5);
    expect(first.status, describeResponse(first)).toBe(200);
    await stack.waitForGeneration(first.body.id, key.key);
    const patched = await stack.api(`/keys/${key.hash}`, {
      key: stack.account.managementKey,
      method: 'PATCH',
      body: { limit: Number(cost) / 1e10 },
    });
    expect(patched.status, describeResponse(patched)).toBe(200);

    const { client, prefix } = stack.infra.redis;
    const spendKeys = await client.keys(`${prefix}spend:*`);
    expect(spendKeys.length).toBeGreaterThan(0);
    await client.del(...spendKeys);

    const refused = await chat(key.key, 5);
    expect(refused.status, describeResponse(refused)).toBe(403);
    expect(refused.body.error.message).toContain('daily');

    await stack.api(`/keys/${key.hash}`, {
      key: stack.account.managementKey,
      method: 'PATCH',
      body: { limit: null },
    });
    const again = await chat(key.key, 5);
    expect(again.status, describeResponse(again)).toBe(200);
  });

  it('answers 402 for an account without credits and lets it through once postpaid', async () => {
    const poor = await stack.createAccount();
    const key = await stack.createInferenceKey(poor.managementKey);
    const refused = await chat(key.key);
    expect(refused.status, describeResponse(refused)).toBe(402);
    expect(refused.body.error.metadata.error_type).toBe('payment_required');
    const res = await fetch(`${stack.services.billing.url}/internal/accounts/${poor.id}/postpaid`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        'x-service-token': await devServiceSigner('admin').sign('billing'),
      },
      body: JSON.stringify({ postpaid: true }),
    });
    expect(res.status).toBe(200);
    const ok = await chat(key.key);
    expect(ok.status, describeResponse(ok)).toBe(200);
  });
});
