import { digestKey } from '@tollgate/auth';
import { lastUsedHashKey } from '@tollgate/key-cache';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Json } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { configEnv, loadConfig } from '../config';
import { startProxy } from '../http/app';

let stack: ProxyStack;

beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(async () => {
  await stack?.close();
});

async function call(path: string, init: RequestInit & { key?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  const res = await fetch(`${stack.api}${path}`, {
    ...init,
    headers: { ...headers, ...(init.headers as object) },
  });
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers, text: `${res.status} ${text}` };
}

const chatBody = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

describe('authentication', () => {
  it('refuses a missing or malformed Authorization header with 401 on every route', async () => {
    for (const path of ['/models', '/keys', '/key', '/credits', '/generation?id=x', '/nope']) {
      const r = await call(path);
      expect(r.status, r.text).toBe(401);
      expect(r.body.error).toMatchObject({ code: 401, metadata: { error_type: 'unauthorized' } });
    }
    for (const authorization of [
      'Basic abc',
      'Bearer',
      'Bearer  ',
      'sk-tg-v1-abc',
      `Token ${stack.inference.key}`,
    ]) {
      const r = await call('/models', { headers: { authorization } });
      expect(r.status, `${authorization}: ${r.text}`).toBe(401);
    }
    const r = await call('/chat/completions', { method: 'POST', body: chatBody });
    expect(r.status, r.text).toBe(401);
  });

  it('refuses an unknown key with 401, repeatedly (negative cache)', async () => {
    const unknown = `sk-tg-v1-${'ab'.repeat(32)}`;
    for (let i = 0; i < 2; i++) {
      const r = await call('/models', { key: unknown });
      expect(r.status, r.text).toBe(401);
      expect(r.body.error.metadata.error_type).toBe('unauthorized');
    }
    const r = await call('/models', { key: 'sk-tg-v1-not-a-real-key' });
    expect(r.status, r.text).toBe(401);
  });

  it('accepts the key in any bearer casing and records the last use in Redis', async () => {
    const key = await stack.keys.createKey(stack.account.id);
    const before = Date.now();
    const r = await call('/models', { headers: { authorization: `bearer ${key.key}` } });
    expect(r.status, r.text).toBe(200);
    const lastUsed = await vi.waitFor(async () => {
      const v = await stack.keys.redis.client.hget(
        lastUsedHashKey(stack.config.REDIS_PREFIX, key.id),
        key.id,
      );
      if (v === null) throw new Error('not recorded yet');
      return Number(v);
    });
    expect(lastUsed).toBeGreaterThanOrEqual(before);
  });

  it('resolves a key missing from the cache through the keys service', async () => {
    const key = await stack.keys.createKey(stack.account.id);
    await stack.keys.redis.client.del(`${stack.config.REDIS_PREFIX}key:{${digestKey(key.key)}}`);
    const r = await call('/models', { key: key.key });
    expect(r.status, r.text).toBe(200);
  });

  it('answers 503 when the key is not cached and the keys service is unreachable', async () => {
    const proxy = await startProxy(
      loadConfig({ ...configEnv(stack.config), PORT: '0', KEYS_URL: 'http://127.0.0.1:9' }),
      {
        catalog: undefined,
      },
    );
    try {
      const fresh = `sk-tg-v1-${'cd'.repeat(32)}`;
      const res = await fetch(`${proxy.url}/api/v1/models`, { headers: bearer(fresh) });
      const body = await res.text();
      expect(res.status, body).toBe(503);
      expect(JSON.parse(body).error.metadata.error_type).toBe('service_unavailable');
      // A cached key still works without the keys service.
      const ok = await fetch(`${proxy.url}/api/v1/models`, { headers: bearer(stack.inference) });
      expect(ok.status).toBe(200);
    } finally {
      await proxy.close();
    }
  });
});

describe('scopes (spec §5)', () => {
  it('gives a management key 403 forbidden with required_scope on model endpoints', async () => {
    const mk = stack.account.managementKey.key;
    for (const [path, method] of [
      ['/models', 'GET'],
      ['/chat/completions', 'POST'],
      ['/generation?id=gen-1-x', 'GET'],
    ] as const) {
      const r = await call(path, { key: mk, method, body: method === 'POST' ? chatBody : undefined });
      expect(r.status, r.text).toBe(403);
      expect(r.body.error.metadata).toMatchObject({ error_type: 'forbidden', required_scope: 'inference' });
    }
  });

  it('gives an inference key 403 forbidden with required_scope on /keys', async () => {
    for (const [path, method] of [
      ['/keys', 'GET'],
      ['/keys', 'POST'],
      ['/keys/00000000-0000-4000-8000-000000000000', 'DELETE'],
    ] as const) {
      const r = await call(path, {
        key: stack.inference.key,
        method,
        body: method === 'POST' ? '{"name":"x"}' : undefined,
      });
      expect(r.status, r.text).toBe(403);
      expect(r.body.error.metadata).toMatchObject({ error_type: 'forbidden', required_scope: 'management' });
    }
  });

  it('lets both scopes read /key and /credits', async () => {
    for (const key of [stack.inference.key, stack.account.managementKey.key]) {
      const k = await call('/key', { key });
      expect(k.status, k.text).toBe(200);
      const c = await call('/credits', { key });
      expect(c.status, c.text).toBe(200);
    }
  });
});

describe('management routes forwarded to the keys service', () => {
  const mk = () => stack.account.managementKey.key;

  it('creates, lists, reads, updates and revokes keys through both prefixes', async () => {
    const created = await call('/keys', {
      key: mk(),
      method: 'POST',
      body: JSON.stringify({ name: 'via proxy' }),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'via proxy', scope: 'inference', disabled: false });
    expect(created.body.data.key).toMatch(/^sk-tg-v1-/);
    const hash = created.body.data.hash;

    const list = await fetch(`${stack.proxy.url}/v1/keys`, { headers: bearer(mk()) });
    const listBody = (await list.json()) as { data: { hash: string }[] };
    expect(list.status).toBe(200);
    expect(listBody.data.map((k) => k.hash)).toContain(hash);

    const one = await call(`/keys/${hash}`, { key: mk() });
    expect(one.status, one.text).toBe(200);
    expect(one.body.data.key).toBeUndefined();

    const bad = await call('/keys/not-a-uuid', { key: mk() });
    expect(bad.status, bad.text).toBe(400);
    const invalid = await call('/keys', { key: mk(), method: 'POST', body: '{"name":' });
    expect(invalid.status, invalid.text).toBe(400);
  });

  it('keeps the query string (include_disabled shows revoked keys)', async () => {
    const k = await stack.keys.createKey(stack.account.id, { name: 'to revoke' });
    const del = await call(`/keys/${k.id}`, { key: mk(), method: 'DELETE' });
    expect(del.status, del.text).toBe(200);
    expect(del.body.data).toEqual({ hash: k.id, deleted: true });
    const plain = await call('/keys', { key: mk() });
    expect(plain.body.data.map((x: { hash: string }) => x.hash)).not.toContain(k.id);
    const all = await call('/keys?include_disabled=true', { key: mk() });
    expect(all.body.data.map((x: { hash: string }) => x.hash)).toContain(k.id);
  });

  it('refuses a disabled key on its very next request, and accepts it again once re-enabled', async () => {
    const k = await stack.keys.createKey(stack.account.id, { name: 'toggle' });
    expect((await call('/models', { key: k.key })).status).toBe(200);
    const off = await call(`/keys/${k.id}`, { key: mk(), method: 'PATCH', body: '{"disabled":true}' });
    expect(off.status, off.text).toBe(200);
    const refused = await call('/chat/completions', { key: k.key, method: 'POST', body: chatBody });
    expect(refused.status, refused.text).toBe(401);
    expect((await call('/models', { key: k.key })).status).toBe(401);
    const on = await call(`/keys/${k.id}`, { key: mk(), method: 'PATCH', body: '{"disabled":false}' });
    expect(on.status, on.text).toBe(200);
    expect((await call('/models', { key: k.key })).status).toBe(200);
  });

  it('refuses a revoked key on its very next request', async () => {
    const k = await stack.keys.createKey(stack.account.id, { name: 'revoke me' });
    expect((await call('/models', { key: k.key })).status).toBe(200);
    expect((await call(`/keys/${k.id}`, { key: mk(), method: 'DELETE' })).status).toBe(200);
    const r = await call('/models', { key: k.key });
    expect(r.status, r.text).toBe(401);
  });

  it('answers 503 when the keys service is down', async () => {
    const proxy = await startProxy(
      loadConfig({ ...configEnv(stack.config), PORT: '0', KEYS_URL: 'http://127.0.0.1:9' }),
    );
    try {
      const res = await fetch(`${proxy.url}/api/v1/keys`, { headers: bearer(mk()) });
      const body = await res.text();
      expect(res.status, body).toBe(503);
      expect(JSON.parse(body).error.metadata.error_type).toBe('service_unavailable');
    } finally {
      await proxy.close();
    }
  });
});

describe('account routes forwarded to billing', () => {
  it('forwards /credits and /generation with the caller identity, prefix stripped, query kept', async () => {
    const c = await call('/credits', { key: stack.inference.key });
    expect(c.status, c.text).toBe(200);
    expect(c.body.data.echo).toMatchObject({
      method: 'GET',
      url: '/credits',
      claims: {
        kind: 'key',
        keyId: stack.inference.id,
        accountId: stack.account.id,
        scope: 'inference',
        caller: 'proxy',
      },
    });
    const g = await fetch(`${stack.proxy.url}/v1/generation?id=gen-123-abc&x=1`, {
      headers: bearer(stack.inference),
    });
    const gBody = (await g.json()) as Json;
    expect(g.status).toBe(200);
    expect(gBody.data.echo.url).toBe('/generation?id=gen-123-abc&x=1');
  });

  it('relays the status of the owning service', async () => {
    const r = await call('/generation?id=missing', { key: stack.inference.key });
    expect(r.status, r.text).toBe(404);
  });

  it('answers 503 when billing is down', async () => {
    const proxy = await startProxy(
      loadConfig({ ...configEnv(stack.config), PORT: '0', BILLING_URL: 'http://127.0.0.1:9' }),
    );
    try {
      const res = await fetch(`${proxy.url}/api/v1/credits`, { headers: bearer(stack.inference) });
      expect(res.status, await res.text()).toBe(503);
    } finally {
      await proxy.close();
    }
  });
});
