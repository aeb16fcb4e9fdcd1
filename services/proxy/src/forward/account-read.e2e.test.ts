import type { TestKey } from '@tollgate/keys/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Json } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { configEnv, loadConfig } from '../config';
import { startProxy } from '../http/app';

/**
 * GET /key, /credits, /generation ask their owner while the key is authenticated
 * (forward/account-read.ts). What a client sees must be what it saw when the owner was asked after:
 * the owner's answer for the confirmed key, and every refusal on the very next request.
 */
let stack: ProxyStack;

beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(async () => {
  await stack?.close();
});

async function get(path: string, key: TestKey | string) {
  const res = await fetch(`${stack.api}${path}`, { headers: bearer(key) });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Json, text: `${res.status} ${text}` };
}

const management = (method: string, path: string, body?: unknown) =>
  fetch(`${stack.api}${path}`, {
    method,
    headers: bearer(stack.account.managementKey),
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const claimsOf = (key: TestKey) => ({
  kind: 'key',
  keyId: key.id,
  accountId: key.accountId,
  scope: key.scope,
  caller: 'proxy',
});

describe('account reads asked while the key is authenticated', () => {
  it("relays the owner's answer for the caller, one owner request per client request", async () => {
    const key = await stack.keys.createKey(stack.account.id, { name: 'reader' });
    for (let i = 0; i < 3; i++) {
      const before = stack.billing.requests.length;
      const c = await get('/credits', key);
      expect(c.status, c.text).toBe(200);
      expect(c.json.data.echo).toMatchObject({ method: 'GET', url: '/credits', claims: claimsOf(key) });
      const g = await get('/generation?id=gen-1-abc', key);
      expect(g.status, g.text).toBe(200);
      expect(g.json.data.echo).toMatchObject({ url: '/generation?id=gen-1-abc', claims: claimsOf(key) });
      expect(stack.billing.requests.length - before).toBe(2);
    }
    for (let i = 0; i < 2; i++) {
      const k = await get('/key', key);
      expect(k.status, k.text).toBe(200);
      expect(k.json.data).toMatchObject({ hash: key.id, is_management_key: false });
    }
  });

  it('asks the owner nothing for the requests of a rate-limited key that are over its limit', async () => {
    const key = await stack.keys.createKey(stack.account.id, { name: 'limited reader' });
    expect((await get('/credits', key)).status).toBe(200); // remembered from here on
    expect((await management('PATCH', `/keys/${key.id}`, { rate_limit_rpm: 2 })).status).toBe(200);
    const before = stack.billing.requests.length;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await get('/credits', key)).status);
    expect(statuses).toContain(429);
    // Give a dropped early request time to arrive: none may.
    await new Promise((r) => setTimeout(r, 200));
    expect(stack.billing.requests.length - before).toBe(statuses.filter((s) => s === 200).length);
  });

  it("relays the owner's own status (404 from billing) on a remembered key", async () => {
    await get('/credits', stack.inference);
    const r = await get('/generation?id=missing', stack.inference);
    expect(r.status, r.text).toBe(404);
  });

  it('refuses a key revoked since its last read on its very next request (401), and never relays the early answer', async () => {
    const key = await stack.keys.createKey(stack.account.id, { name: 'revoked reader' });
    expect((await get('/credits', key)).status).toBe(200);
    expect((await management('DELETE', `/keys/${key.id}`)).status).toBe(200);
    // The remembered record was still good: billing was asked early, and its answer dropped.
    const before = stack.billing.requests.length;
    const early = await get('/credits', key);
    expect(early.status, early.text).toBe(401);
    await vi.waitFor(() => expect(stack.billing.requests.length - before).toBe(1));
    expect(stack.billing.requests.at(-1)?.claims).toEqual(claimsOf(key));
    for (const path of ['/credits', '/generation?id=gen-1-abc', '/key']) {
      const r = await get(path, key);
      expect(r.status, r.text).toBe(401);
      expect(r.json).toEqual({
        error: {
          code: 401,
          message: 'This API key has been revoked',
          metadata: { error_type: 'unauthorized' },
        },
      });
    }
  });

  it('refuses a disabled key, and answers it again once re-enabled', async () => {
    const key = await stack.keys.createKey(stack.account.id, { name: 'toggled reader' });
    expect((await get('/credits', key)).status).toBe(200);
    expect((await management('PATCH', `/keys/${key.id}`, { disabled: true })).status).toBe(200);
    const refused = await get('/credits', key);
    expect(refused.status, refused.text).toBe(401);
    expect((await management('PATCH', `/keys/${key.id}`, { disabled: false })).status).toBe(200);
    const again = await get('/credits', key);
    expect(again.status, again.text).toBe(200);
    expect(again.json.data.echo.claims).toEqual(claimsOf(key));
  });

  it('refuses GET /generation to a management key with 403 required_scope, asking billing nothing', async () => {
    const mk = stack.account.managementKey;
    expect((await get('/credits', mk)).status).toBe(200);
    const before = stack.billing.requests.length;
    const r = await get('/generation?id=gen-1-abc', mk);
    expect(r.status, r.text).toBe(403);
    expect(r.json.error).toMatchObject({
      metadata: { error_type: 'forbidden', required_scope: 'inference' },
    });
    expect(stack.billing.requests.length).toBe(before);
  });

  it('answers 503 when billing is down, on a first and on a remembered key', async () => {
    const env = configEnv(stack.config);
    const proxy = await startProxy(loadConfig({ ...env, PORT: '0', BILLING_URL: 'http://127.0.0.1:9' }));
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${proxy.url}/api/v1/credits`, { headers: bearer(stack.inference) });
        const body = (await res.json()) as Json;
        expect(res.status).toBe(503);
        expect(body.error).toMatchObject({ metadata: { error_type: 'service_unavailable' } });
      }
      // Authentication still comes first: an unknown key is 401, not 503.
      const res = await fetch(`${proxy.url}/api/v1/credits`, {
        headers: bearer(`sk-tg-v1-${'1'.repeat(64)}`),
      });
      expect(res.status).toBe(401);
    } finally {
      await proxy.close();
    }
  });
});
