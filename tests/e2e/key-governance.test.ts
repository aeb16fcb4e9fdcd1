/**
 * Key governance through the public API of the whole stack: expires_at (including a key that expires
 * between two requests), allowed models, the per-key request rate limit counted across two proxies
 * sharing Redis, GET /key's rate_limit, and bad input on every new field of POST and PATCH /keys.
 */
import { loadConfig as loadProxyConfig, type ProxyHandle, startProxy } from '@tollgate/proxy';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CreatedKey, describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const chat = (model = MODEL) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
const mgmt = () => stack.account.managementKey;
/** The key object of a POST /keys response. */
// biome-ignore lint/suspicious/noExplicitAny: a JSON body, checked by the assertions
const keyData = (key: CreatedKey): any => (key.body as { data: unknown }).data;

describe('expires_at', () => {
  it('shows the expiry and refuses the key with 401 once it has passed (between two requests)', async () => {
    // A key living 1.5 s, used once before its expiry. On a loaded host creating it and the first
    // answer can take longer than that: an answer that arrives after the expiry proves nothing either
    // way, so the key is made again with twice the life (an answer before the expiry must be a 200).
    let life = 1500;
    let expiresAt: string;
    let key: CreatedKey;
    for (;;) {
      expiresAt = new Date(Date.now() + life).toISOString();
      key = await stack.createInferenceKey(mgmt(), { name: 'short-lived', expires_at: expiresAt });
      expect(keyData(key).expires_at).toBe(expiresAt);
      const first = await stack.api('/chat/completions', { key: key.key, body: chat() });
      if (Date.now() < Date.parse(expiresAt) || life >= 48_000) {
        expect(first.status, describeResponse(first)).toBe(200);
        break;
      }
      life *= 2;
    }
    await vi.waitFor(
      async () => {
        const later = await stack.api('/models', { key: key.key });
        expect(later.status, describeResponse(later)).toBe(401);
        expect(later.body.error.message).toContain('expired');
        expect(later.body.error.message).toContain(expiresAt);
      },
      { timeout: life + 10_000, interval: 250 },
    );
    const got = await stack.api(`/keys/${key.hash}`, { key: mgmt() });
    expect(got.body.data.expires_at).toBe(expiresAt);
  });

  it('can be set, moved and removed with PATCH', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'patchable' });
    expect(keyData(key).expires_at).toBeNull();
    const at = '2099-01-01T00:00:00.000Z';
    const set = await stack.api(`/keys/${key.hash}`, {
      key: mgmt(),
      method: 'PATCH',
      body: { expires_at: at },
    });
    expect(set.status, describeResponse(set)).toBe(200);
    expect(set.body.data.expires_at).toBe(at);
    const off = await stack.api(`/keys/${key.hash}`, {
      key: mgmt(),
      method: 'PATCH',
      body: { expires_at: null },
    });
    expect(off.body.data.expires_at).toBeNull();
    expect((await stack.api('/models', { key: key.key })).status).toBe(200);
  });
});

describe('allowed_models', () => {
  it('lets a key call only its listed models and vendor patterns (403 otherwise)', async () => {
    const key = await stack.createInferenceKey(mgmt(), {
      name: 'openai-only',
      allowed_models: ['openai/*', 'anthropic/claude-sonnet-4'],
    });
    expect(keyData(key).allowed_models).toEqual(['openai/*', 'anthropic/claude-sonnet-4']);
    const ok = await stack.api('/chat/completions', { key: key.key, body: chat('openai/gpt-4o') });
    expect(ok.status, describeResponse(ok)).toBe(200);
    const listed = await stack.api('/chat/completions', {
      key: key.key,
      body: chat('anthropic/claude-sonnet-4'),
    });
    expect(listed.status, describeResponse(listed)).toBe(200);

    const models = (await stack.api('/models', { key: key.key })).body.data.map((m: { id: string }) => m.id);
    const refused = models.find(
      (id: string) => !id.startsWith('openai/') && id !== 'anthropic/claude-sonnet-4',
    );
    expect(refused, 'the dev catalog has a model outside the list').toBeDefined();
    const no = await stack.api('/chat/completions', { key: key.key, body: chat(refused) });
    expect(no.status, describeResponse(no)).toBe(403);
    expect(no.body.error.metadata.error_type).toBe('forbidden');
    expect(no.body.error.message).toContain(`may not use '${refused}'`);

    // Emptying the list allows every model again, on the very next request.
    const all = await stack.api(`/keys/${key.hash}`, {
      key: mgmt(),
      method: 'PATCH',
      body: { allowed_models: [] },
    });
    expect(all.status, describeResponse(all)).toBe(200);
    const now = await stack.api('/chat/completions', { key: key.key, body: chat(refused) });
    expect(now.status, describeResponse(now)).toBe(200);
  });
});

describe('rate_limit_rpm', () => {
  let second: ProxyHandle;
  beforeAll(async () => {
    second = await startProxy(
      loadProxyConfig({
        ...stack.infraEnv(),
        KEYS_URL: stack.services.keys.url,
        BILLING_URL: stack.services.billing.url,
      }),
      { catalog: stack.catalog },
    );
  });
  afterAll(() => second?.close());

  it('counts requests of a key across two proxies and answers 429 with Retry-After and X-RateLimit-*', async () => {
    // A fixed one-minute window: start early in one so the test never straddles a boundary.
    const intoWindow = Date.now() % 60_000;
    if (intoWindow > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindow + 50));
    const key = await stack.createInferenceKey(mgmt(), { name: 'limited', rate_limit_rpm: 4 });
    const origins = [stack.origin, second.url];
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${origins[i % 2]}/api/v1/models`, {
        headers: { authorization: `Bearer ${key.key}` },
      });
      statuses.push(res.status);
      expect(res.headers.get('x-ratelimit-limit')).toBe('4');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(3 - i));
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    for (const origin of origins) {
      const res = await fetch(`${origin}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(chat()),
      });
      const body = (await res.json()) as { error: { metadata: { error_type: string } } };
      expect(res.status, JSON.stringify(body)).toBe(429);
      expect(body.error.metadata.error_type).toBe('rate_limited');
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      expect(reset % 60_000).toBe(0);
      expect(reset).toBeGreaterThan(Date.now());
    }
    // A key without a limit carries no rate headers.
    const free = await stack.api('/models', { key: stack.inferenceKey });
    expect(free.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('GET /key reports the limit in OpenRouter rate_limit shape', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'shape', rate_limit_rpm: 120 });
    const res = await stack.api('/key', { key: key.key });
    expect(res.body.data.rate_limit).toMatchObject({ requests: 120, interval: '1m' });
    expect(res.body.data.rate_limit_rpm).toBe(120);
    const none = await stack.api('/key', { key: stack.inferenceKey });
    expect(none.body.data.rate_limit).toMatchObject({ requests: 0, interval: '1m' });
  });
});

describe('include_byok_in_limit', () => {
  it('is stored and reported', async () => {
    const key = await stack.createInferenceKey(mgmt(), { name: 'byok', include_byok_in_limit: true });
    expect(keyData(key).include_byok_in_limit).toBe(true);
    const off = await stack.api(`/keys/${key.hash}`, {
      key: mgmt(),
      method: 'PATCH',
      body: { include_byok_in_limit: false },
    });
    expect(off.body.data.include_byok_in_limit).toBe(false);
  });
});

describe('bad input on every new field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['expires_at', '2001-01-01T00:00:00Z', 'must be in the future'],
    ['expires_at', 'tomorrow', 'ISO 8601'],
    ['expires_at', '2099-01-01T00:00:00', 'ISO 8601'],
    ['expires_at', 4102444800, 'ISO 8601'],
    ['expires_at', '2099-02-31T00:00:00Z', 'expires_at'],
    ['include_byok_in_limit', 'yes', 'true or false'],
    ['allowed_models', 'openai/*', 'array'],
    ['allowed_models', ['gpt-4o'], 'model id'],
    ['allowed_models', ['openai/*', 7], 'model id'],
    ['allowed_models', Array.from({ length: 201 }, (_, i) => `v/m${i}`), 'at most 200'],
    ['rate_limit_rpm', 0, 'at least 1'],
    ['rate_limit_rpm', 1.5, 'integer'],
    ['rate_limit_rpm', '10', 'positive integer'],
    ['rate_limit_rpm', 1_000_001, 'at most'],
  ];
  it.each(cases)('%s = %j → 400 on POST and PATCH', async (field, value, message) => {
    const post = await stack.api('/keys', {
      key: mgmt(),
      method: 'POST',
      body: { name: 'bad', [field]: value },
    });
    expect(post.status, describeResponse(post)).toBe(400);
    expect(post.body.error.metadata.error_type).toBe('bad_request');
    expect(post.body.error.message).toContain(message);
    expect(post.body.error.message).toContain(field);
    const key = await stack.createInferenceKey(mgmt(), { name: 'target' });
    const patch = await stack.api(`/keys/${key.hash}`, {
      key: mgmt(),
      method: 'PATCH',
      body: { [field]: value },
    });
    expect(patch.status, describeResponse(patch)).toBe(400);
    expect(patch.body.error.message).toContain(message);
  });
});
