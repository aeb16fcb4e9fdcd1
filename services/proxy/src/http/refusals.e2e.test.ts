import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';

/**
 * Issue 28, errors and refusals as data: a known key's request answered with an error and nothing
 * billed publishes one `refusal` event on the usage exchange (its request id, key, account, status,
 * error type); an unknown key's does not (no account: metrics only); a failure that was billed is
 * recorded by its usage event only, never counted twice.
 */
let stack: ProxyStack;
const model = 'openai/gpt-4o-mini';
const messages = [{ role: 'user', content: 'hello' }];

beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(async () => {
  await stack?.close();
});

async function post(
  body: Record<string, unknown>,
  headers: Record<string, string> = bearer(stack.inference),
) {
  const res = await fetch(`${stack.api}/chat/completions`, {
    method: 'POST',
    headers: { ...headers, 'x-title': Buffer.from('Café bot ✓').toString('latin1') },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get('x-request-id') as string };
}

describe('refusal events', () => {
  it('a bad request of a known key: one refusal event (bad_request, 400, its model and app)', async () => {
    const r = await post({ model, messages: 'not a list' });
    expect(r.status).toBe(400);
    const e = await stack.waitForRefusal(r.id);
    expect(e).toMatchObject({
      type: 'refusal',
      version: 1,
      id: r.id,
      account_id: stack.account.id,
      key_id: stack.inference.id,
      api_type: 'chat',
      model,
      app: 'Café bot ✓',
      status: 400,
      error_type: 'bad_request',
      code: 'bad_request',
    });
    expect(Date.parse(e.finished_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(stack.eventFor(r.id)).toBeUndefined();
  });

  it('an unknown model is a bad request; a management key is an auth refusal', async () => {
    const unknown = await post({ model: 'nobody/nothing', messages });
    expect(unknown.status).toBe(400);
    expect(await stack.waitForRefusal(unknown.id)).toMatchObject({
      status: 400,
      error_type: 'bad_request',
      model: 'nobody/nothing',
    });
    const management = await post({ model, messages }, bearer(stack.account.managementKey));
    expect(management.status).toBe(403);
    expect(await stack.waitForRefusal(management.id)).toMatchObject({
      key_id: stack.account.managementKey.id,
      status: 403,
      error_type: 'auth',
      code: 'forbidden',
    });
  });

  it('every provider refusing: a provider refusal, no usage event', async () => {
    const r = await post({ model, messages, sim: { error_status: 500 } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    const e = await stack.waitForRefusal(r.id);
    expect(e).toMatchObject({ error_type: 'provider', status: r.status });
    expect(stack.eventFor(r.id)).toBeUndefined();
  });

  it('an unknown key publishes nothing (no account), a billed failure is not a refusal', async () => {
    const unknown = await post({ model, messages }, { authorization: `Bearer sk-tg-v1-${'x'.repeat(64)}` });
    expect(unknown.status).toBe(401);
    const streamed = await readSse(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model, messages, stream: true, sim: { error_after_chunks: 2 } }),
    });
    const billed = streamed.headers.get('x-request-id') as string;
    expect((await stack.waitForEvent(billed)).error).not.toBeNull();
    // A later refusal arrives after both would have (one exchange, one queue, in order).
    const marker = await post({ model, messages: 'still not a list' });
    await stack.waitForRefusal(marker.id);
    expect(stack.refusals.find((e) => e.id === unknown.id)).toBeUndefined();
    expect(stack.refusals.find((e) => e.id === billed)).toBeUndefined();
  });
});
