/**
 * Issue 29: `rate_limit_tpm` through the whole stack. Concurrent completions of one key are charged
 * their worst-case tokens in the admission's Redis call, corrected to the tokens used at settle; the
 * key's counter never passes its limit,
 * the requests that do not fit get 429 `rate_limited` with reason `tpm`, and a key without the limit
 * is not charged at all.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
// Closing the stack once took over 60 s on a loaded CI machine (cause not found yet): 120 s.
afterAll(() => stack?.close(), 120_000);

const LIMIT = 1000;
const MAX_TOKENS = 200;
const chat = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: MAX_TOKENS };

async function intoFreshWindow() {
  // A fixed one-minute window: start early in one so the test never straddles a boundary.
  const intoWindow = Date.now() % 60_000;
  if (intoWindow > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindow + 50));
}

describe('rate_limit_tpm', () => {
  it('holds under concurrent requests of one key: charged tokens never pass the limit, the rest get 429 tpm', async () => {
    await intoFreshWindow();
    const key = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'tpm',
      rate_limit_tpm: LIMIT,
    });
    expect((key.body as { data: { rate_limit_tpm: number } }).data.rate_limit_tpm).toBe(LIMIT);
    const minute = Math.floor(Date.now() / 60_000);
    const results = await Promise.all(
      Array.from({ length: 12 }, () => stack.api('/chat/completions', { key: key.key, body: chat })),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of refused) {
      expect(r.status, describeResponse(r)).toBe(429);
      expect(r.body.error.metadata).toMatchObject({
        error_type: 'rate_limited',
        reason: 'tpm',
        limit: LIMIT,
      });
      const retryAfter = Number(r.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    // Each admitted request was charged at least its max_tokens: at most 5 fit under 1000.
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeLessThanOrEqual(Math.floor(LIMIT / MAX_TOKENS));
    expect(refused.length).toBeGreaterThanOrEqual(12 - Math.floor(LIMIT / MAX_TOKENS));
    const counter = () =>
      stack.infra.redis.client.get(
        `${stack.infra.redis.prefix}spend:tpm:{${stack.account.id}}:${key.hash}:${minute}`,
      );
    expect(Number(await counter())).toBeLessThanOrEqual(LIMIT);
    // Corrected at settle (issue 29): the counter ends at the tokens the admitted requests used.
    const used = ok.reduce((n, r) => n + r.body.usage.prompt_tokens + r.body.usage.completion_tokens, 0);
    await vi.waitFor(async () => expect(Number(await counter())).toBe(used));
  });

  it('a key without the limit is never charged tokens; PATCH sets and removes the limit', async () => {
    const key = await stack.createInferenceKey(stack.account.managementKey, { name: 'free' });
    expect((key.body as { data: { rate_limit_tpm: null } }).data.rate_limit_tpm).toBeNull();
    const res = await stack.api('/chat/completions', { key: key.key, body: chat });
    expect(res.status, describeResponse(res)).toBe(200);
    const minute = Math.floor(Date.now() / 60_000);
    for (const m of [minute - 1, minute]) {
      expect(
        await stack.infra.redis.client.exists(
          `${stack.infra.redis.prefix}spend:tpm:{${stack.account.id}}:${key.hash}:${m}`,
        ),
      ).toBe(0);
    }
    const patch = (body: unknown) =>
      stack.api(`/keys/${key.hash}`, { key: stack.account.managementKey, method: 'PATCH', body });
    expect((await patch({ rate_limit_tpm: 50 })).body.data.rate_limit_tpm).toBe(50);
    const refused = await stack.api('/chat/completions', { key: key.key, body: chat });
    expect(refused.status, describeResponse(refused)).toBe(429);
    expect(refused.body.error.message).toContain('50 tokens per minute');
    expect((await patch({ rate_limit_tpm: null })).body.data.rate_limit_tpm).toBeNull();
    expect((await stack.api('/chat/completions', { key: key.key, body: chat })).status).toBe(200);
    expect((await patch({ rate_limit_tpm: 0 })).status).toBe(400);
  });
});
