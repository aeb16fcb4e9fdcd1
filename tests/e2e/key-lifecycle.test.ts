/**
 * A key's life through the public API with plain fetch, as a newcomer would script it: a management
 * key creates an inference key, the key is used, disabled (401), enabled, revoked (401 for good),
 * and the listing rules, GET /key and GET /credits reflect each step.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiResponse, describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let management: string;

beforeAll(async () => {
  stack = await startStack({ credits: '25' });
  management = stack.account.managementKey;
});
afterAll(() => stack?.close());

const expectStatus = (res: ApiResponse, status: number) =>
  expect(res.status, describeResponse(res)).toBe(status);

const complete = (key: string, prefix: '/api/v1' | '/v1' = '/api/v1') =>
  stack.api('/chat/completions', {
    key,
    prefix,
    body: { model: MODEL, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 8 },
  });

const listHashes = async (query = '') => {
  const res = await stack.api(`/keys${query}`, { key: management });
  expectStatus(res, 200);
  return (res.body.data as Array<{ hash: string }>).map((k) => k.hash);
};

describe('key lifecycle over plain HTTP', () => {
  let key: string;
  let hash: string;
  let spent = 0;

  it('creates an inference key with a management key; the plaintext is returned once', async () => {
    const res = await stack.api('/keys', {
      key: management,
      body: { name: 'lifecycle', limit: 2.5, limit_reset: 'monthly' },
    });
    expectStatus(res, 201);
    const data = res.body.data;
    key = data.key;
    hash = data.hash;
    expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(data).toMatchObject({
      name: 'lifecycle',
      scope: 'inference',
      limit: 2.5,
      limit_reset: 'monthly',
      disabled: false,
      revoked: false,
      last_used_at: null,
      usage: 0,
      limit_remaining: 2.5,
      label: `${key.slice(0, 12)}...${key.slice(-3)}`,
    });

    const again = await stack.api(`/keys/${hash}`, { key: management });
    expectStatus(again, 200);
    expect(again.body.data).not.toHaveProperty('key');
    expect(again.body.data.hash).toBe(hash);
  });

  it('uses the new key at once; last_used_at and usage follow', async () => {
    const res = await complete(key);
    expectStatus(res, 200);
    spent += res.body.usage.cost;
    const used = await complete(key, '/v1');
    expectStatus(used, 200);
    spent += used.body.usage.cost;

    await vi.waitFor(
      async () => {
        const got = await stack.api(`/keys/${hash}`, { key: management });
        expectStatus(got, 200);
        expect(got.body.data.last_used_at).not.toBeNull();
        expect(got.body.data.usage).toBeCloseTo(spent, 12);
        expect(got.body.data.limit_remaining).toBeCloseTo(2.5 - spent, 12);
      },
      { timeout: 10_000, interval: 50 },
    );
  });

  it('GET /key describes the calling key for both scopes', async () => {
    const own = await stack.api('/key', { key });
    expectStatus(own, 200);
    expect(own.body.data).toMatchObject({ hash, scope: 'inference', is_management_key: false });
    expect(own.body.data.usage_monthly).toBeCloseTo(spent, 12);
    expect(own.body.data.usage_daily).toBeCloseTo(spent, 12);
    expect(own.body.data).not.toHaveProperty('key');

    const admin = await stack.api('/key', { key: management });
    expectStatus(admin, 200);
    expect(admin.body.data).toMatchObject({
      hash: stack.account.managementKeyId,
      scope: 'management',
      is_management_key: true,
      limit: null,
    });
  });

  it('GET /credits shows the account credits and what was spent', async () => {
    await vi.waitFor(
      async () => {
        const res = await stack.api('/credits', { key: management });
        expectStatus(res, 200);
        expect(res.body.data.total_credits).toBe(25);
        // the stack's own inference key has not been used in this file: usage is this key's
        expect(res.body.data.total_usage).toBeCloseTo(spent, 12);
      },
      { timeout: 10_000, interval: 50 },
    );
    const viaInference = await stack.api('/credits', { key });
    expectStatus(viaInference, 200);
    expect(viaInference.body.data.total_credits).toBe(25);
  });

  it('a disabled key gets 401 on its very next request, and works again once enabled', async () => {
    const off = await stack.api(`/keys/${hash}`, {
      key: management,
      method: 'PATCH',
      body: { disabled: true },
    });
    expectStatus(off, 200);
    expect(off.body.data).toMatchObject({ hash, disabled: true, revoked: false });
    const refused = await complete(key);
    expectStatus(refused, 401);
    expect(refused.body.error.metadata.error_type).toBe('unauthorized');
    expectStatus(await stack.api('/models', { key }), 401);

    expect(await listHashes(), 'disabled keys are listed').toContain(hash);

    const on = await stack.api(`/keys/${hash}`, {
      key: management,
      method: 'PATCH',
      body: { disabled: false },
    });
    expectStatus(on, 200);
    expect(on.body.data.disabled).toBe(false);
    expectStatus(await complete(key), 200);
  });

  it('updates name and limit; null removes the limit', async () => {
    const res = await stack.api(`/keys/${hash}`, {
      key: management,
      method: 'PATCH',
      body: { name: 'renamed', limit: null, limit_reset: null },
    });
    expectStatus(res, 200);
    expect(res.body.data).toMatchObject({
      name: 'renamed',
      limit: null,
      limit_reset: null,
      limit_remaining: null,
    });
  });

  it('another account cannot see or touch the key', async () => {
    const other = await stack.createAccount();
    expectStatus(await stack.api(`/keys/${hash}`, { key: other.managementKey }), 404);
    expectStatus(
      await stack.api(`/keys/${hash}`, {
        key: other.managementKey,
        method: 'PATCH',
        body: { disabled: true },
      }),
      404,
    );
    expectStatus(await stack.api(`/keys/${hash}`, { key: other.managementKey, method: 'DELETE' }), 404);
    const theirs = await stack.api('/keys?include_disabled=true', { key: other.managementKey });
    expect((theirs.body.data as Array<{ hash: string }>).map((k) => k.hash)).not.toContain(hash);
    expectStatus(await complete(key), 200);
  });

  it('an inference key cannot manage keys (403 with required_scope management)', async () => {
    const res = await stack.api('/keys', { key, body: { name: 'sneaky' } });
    expectStatus(res, 403);
    expect(res.body.error.metadata).toMatchObject({ error_type: 'forbidden', required_scope: 'management' });
  });

  it('a management key cannot revoke itself', async () => {
    const res = await stack.api(`/keys/${stack.account.managementKeyId}`, {
      key: management,
      method: 'DELETE',
    });
    expectStatus(res, 403);
    expect(res.body.error.metadata.error_type).toBe('forbidden');
    expectStatus(await stack.api('/key', { key: management }), 200);
  });

  it('revokes the key for good: 401 on use, 409 on PATCH, listed only with include_disabled', async () => {
    const res = await stack.api(`/keys/${hash}`, { key: management, method: 'DELETE' });
    expectStatus(res, 200);
    expect(res.body.data).toEqual({ hash, deleted: true });

    const refused = await complete(key);
    expectStatus(refused, 401);
    expectStatus(await stack.api('/key', { key }), 401);

    const patch = await stack.api(`/keys/${hash}`, {
      key: management,
      method: 'PATCH',
      body: { disabled: false },
    });
    expectStatus(patch, 409);
    expect(patch.body.error.metadata.error_type).toBe('conflict');

    const shown = await stack.api(`/keys/${hash}`, { key: management });
    expectStatus(shown, 200);
    expect(shown.body.data).toMatchObject({ revoked: true, disabled: true });

    expect(await listHashes(), 'revoked keys are not listed by default').not.toContain(hash);
    expect(await listHashes('?include_disabled=true')).toContain(hash);
    expectStatus(await complete(key), 401);
  });

  it('keeps the revoked key’s usage in the account totals', async () => {
    const res = await stack.api('/credits', { key: management });
    expectStatus(res, 200);
    expect(res.body.data.total_usage).toBeGreaterThan(0);
  });
});
