/**
 * Issue 29, done-when: a load test drives several keys of one team concurrently past the team's
 * limit through the whole stack (proxy with the Redis spend guard, billing worker, keys): the team's
 * recorded spend in billing (`billing.team_spend`) never exceeds the limit — the same proof as for
 * keys (services/billing/src/integration/proxy-spend.e2e.test.ts) — the refusals are 403
 * `team_limit_exceeded` (402 `billing_error` on the Messages API), and the team's tokens per minute
 * hold under the same load, corrected at settle to the tokens used (more fits in the same minute).
 */
import { periodKey, toUnits } from '@tollgate/money';
import { spendTeamTokenRateKey } from '@tollgate/spend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ credits: '100' });
});
afterAll(() => stack?.close(), 120_000);

/** The provider answers `completionTokens` (20 unless told) of the `maxTokens` allowed. */
const chat = (key: string, maxTokens = 20, completionTokens = 20) =>
  stack.api('/chat/completions', {
    key,
    body: {
      model: MODEL,
      messages: [{ role: 'user', content: 'Count to ten.' }],
      max_tokens: maxTokens,
      sim: { completion_tokens: completionTokens },
    },
  });

async function createTeam(body: Record<string, unknown>): Promise<string> {
  const res = await stack.api('/teams', { key: stack.account.managementKey, method: 'POST', body });
  expect(res.status, describeResponse(res)).toBe(201);
  return res.body.data.id as string;
}

async function teamKeys(teamId: string, n: number) {
  const keys = [];
  for (let i = 0; i < n; i++)
    keys.push(
      await stack.createInferenceKey(stack.account.managementKey, { name: `team ${i}`, team_id: teamId }),
    );
  return keys;
}

async function teamSpend(teamId: string, period: string): Promise<bigint> {
  const row = await stack.services.billing.db
    .selectFrom('billing.team_spend')
    .select('amount')
    .where('team_id', '=', teamId)
    .where('period', '=', period)
    .executeTakeFirst();
  return toUnits(row?.amount ?? '0');
}

async function intoFreshWindow() {
  // Fixed one-minute token windows: start early in one so a phase never straddles a boundary.
  const intoWindow = Date.now() % 60_000;
  if (intoWindow > 35_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindow + 50));
}

describe('team budgets through the real proxy', () => {
  it('several keys of one team driven concurrently past its limit: recorded team spend never exceeds it', async () => {
    const probe = await chat(stack.inferenceKey);
    expect(probe.status, describeResponse(probe)).toBe(200);
    const cost = toUnits(String(probe.body.usage.cost));
    expect(cost).toBeGreaterThan(0n);
    // Room for a little over 5 requests at their real cost, shared by 4 keys without limits of their own.
    const limitUnits = cost * 5n + cost / 2n;
    const limit = Number(limitUnits) / 1e10;
    const teamId = await createTeam({ name: 'load', limit, limit_reset: 'monthly' });
    const keys = await teamKeys(teamId, 4);
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => chat((keys[i % keys.length] as { key: string }).key)),
    );
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(ok.length, responses.map(describeResponse).join('\n')).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeLessThanOrEqual(5);
    for (const r of refused) {
      expect(r.status, describeResponse(r)).toBe(403);
      expect(r.body.error.metadata).toMatchObject({
        error_type: 'team_limit_exceeded',
        period: 'monthly',
        limit_reset: 'monthly',
        team_id: teamId,
      });
    }
    const month = periodKey('monthly', new Date());
    await Promise.all(ok.map((r) => stack.waitForGeneration(r.body.id, keys[0]?.key)));
    await vi.waitFor(async () => expect(await teamSpend(teamId, month)).toBe(cost * BigInt(ok.length)));
    expect(await teamSpend(teamId, 'all')).toBe(cost * BigInt(ok.length));

    // Keep going one at a time, key after key, until refused: the team total never passes the limit.
    for (let i = 0; i < 12; i++) {
      const r = await chat((keys[i % keys.length] as { key: string }).key);
      if (r.status !== 200) {
        expect(r.body.error.metadata.error_type, describeResponse(r)).toBe('team_limit_exceeded');
        break;
      }
      await stack.waitForGeneration(r.body.id, keys[0]?.key);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await teamSpend(teamId, month)).toBeLessThanOrEqual(limitUnits);

    // Every front door reports the team's refusal the way it reports a key's.
    const messages = await stack.api('/messages', {
      key: (keys[1] as { key: string }).key,
      body: { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(messages.status, describeResponse(messages)).toBe(402);
    expect(messages.body.error.type).toBe('billing_error');
    const responsesDoor = await stack.api('/responses', {
      key: (keys[2] as { key: string }).key,
      body: { model: MODEL, input: 'hi', max_output_tokens: 20 },
    });
    expect(responsesDoor.status, describeResponse(responsesDoor)).toBe(403);
    expect(responsesDoor.body.error).toMatchObject({
      type: 'insufficient_quota',
      metadata: { error_type: 'team_limit_exceeded' },
    });

    // Raising the team's limit reaches its keys' records at once.
    const raised = await stack.api(`/teams/${teamId}`, {
      key: stack.account.managementKey,
      method: 'PATCH',
      body: { limit: 1 },
    });
    expect(raised.status, describeResponse(raised)).toBe(200);
    expect((await chat((keys[3] as { key: string }).key)).status).toBe(200);
  });

  it("holds the team's tokens per minute under concurrent keys, and gives back unused tokens at settle", async () => {
    const TPM = 1000;
    const MAX = 200;
    const teamId = await createTeam({ name: 'tpm', rate_limit_tpm: TPM });
    const keys = await teamKeys(teamId, 3);
    await intoFreshWindow();
    const minute = Date.now();
    const burst = () =>
      Promise.all(
        Array.from({ length: 12 }, (_, i) => chat((keys[i % keys.length] as { key: string }).key, MAX)),
      );
    const first = await burst();
    const ok = first.filter((r) => r.status === 200);
    expect(ok.length, first.map(describeResponse).join('\n')).toBeGreaterThanOrEqual(1);
    // Each admission was charged at least max_tokens: at most 5 fit under 1000.
    expect(ok.length).toBeLessThanOrEqual(Math.floor(TPM / MAX));
    for (const r of first.filter((x) => x.status !== 200)) {
      expect(r.status, describeResponse(r)).toBe(429);
      expect(r.body.error.metadata).toMatchObject({
        error_type: 'rate_limited',
        reason: 'team_tpm',
        team_id: teamId,
      });
    }
    // Settled: the counter holds what the admitted requests used (prompt + completion), not their worst case.
    const used = ok.reduce((n, r) => n + r.body.usage.prompt_tokens + r.body.usage.completion_tokens, 0);
    const counter = spendTeamTokenRateKey(stack.infra.redis.prefix, stack.account.id, teamId, minute);
    await vi.waitFor(async () => expect(Number(await stack.infra.redis.client.get(counter))).toBe(used));
    expect(used).toBeLessThan(ok.length * MAX);
    // The room given back admits more in the same minute; the counter still never passes the limit.
    const second = await burst();
    expect(second.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(Number(await stack.infra.redis.client.get(counter))).toBeLessThanOrEqual(TPM);
    expect(Math.floor(Date.now() / 60_000)).toBe(Math.floor(minute / 60_000));
  });
});
