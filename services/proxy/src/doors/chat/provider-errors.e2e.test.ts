import type { IncomingMessage } from 'node:http';
import { loadCatalog, parseCatalog } from '@tollgate/catalog';
import type { UsageEventV1 } from '@tollgate/events';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';
import { DEFAULT_CATALOG_PATH } from '../../config';
import { type ProxyHandle, startProxy } from '../../http/app';

/**
 * Issue 14 finding 5: provider error bodies are summarised (status + safe message; the provider's
 * text goes to the logs and the generation record), and only documented request fields reach a
 * provider (the simulator's `sim` only to `simulator: true` providers).
 */
let stack: ProxyStack;
/** Bodies the simulator received, in order. */
const received: Record<string, unknown>[] = [];
const model = 'openai/gpt-4o-mini';
const messages = [{ role: 'user', content: 'hello' }];
const SECRET = 'org-Zq81SecretOrg quota 9,876,543 tokens used on proj_AbCdSecretProj';

beforeAll(async () => {
  stack = await startProxyStack();
  stack.sim.server.on('request', (req: IncomingMessage) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      try {
        received.push(JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown>);
      } catch {
        // not JSON
      }
    });
  });
});
afterAll(async () => {
  await stack?.close();
});

async function post(body: Record<string, unknown>, api = stack.api) {
  const res = await fetch(`${api}/chat/completions`, {
    method: 'POST',
    headers: bearer(stack.inference),
    body: JSON.stringify({ model, messages, ...body }),
  });
  return { status: res.status, text: await res.text(), id: res.headers.get('x-generation-id') };
}

describe('provider error bodies are summarised', () => {
  for (const status of [401, 403]) {
    it(`a provider ${status} never relays the provider's text (502, generic message)`, async () => {
      const r = await post({ sim: { error_status: status, error_message: SECRET } });
      expect(r.status).toBe(502);
      expect(r.text).toContain(`HTTP ${status}`);
      expect(r.text).not.toMatch(/Zq81|9,876,543|AbCd/);
    });
  }

  it('a provider 429 is relayed as 429 without its text (quota figures)', async () => {
    const r = await post({ sim: { error_status: 429, error_message: SECRET } });
    expect(r.status).toBe(429);
    expect(r.text).not.toMatch(/Zq81|9,876,543|AbCd/);
  });

  it('a provider 5xx is a 502 without its text', async () => {
    const r = await post({ sim: { error_status: 503, error_message: SECRET } });
    expect(r.status).toBe(502);
    expect(r.text).not.toMatch(/Zq81|9,876,543|AbCd/);
  });

  it('a provider 400 keeps its (cut, redacted) message so the caller can fix the request', async () => {
    const r = await post({
      sim: {
        error_status: 400,
        error_message: `max_tokens is too large for org-Zq81SecretOrg ${'x'.repeat(400)}`,
      },
    });
    expect(r.status).toBe(400);
    const body = JSON.parse(r.text);
    expect(body.error.message).toContain('max_tokens is too large for org-[redacted]');
    expect(body.error.message).not.toContain('Zq81');
    expect(body.error.message.length).toBeLessThan(300);
  });

  it('a mid-stream provider error: the client gets a summary, the generation record the detail', async () => {
    const r = await readSse(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model,
        messages,
        stream: true,
        sim: { error_after_chunks: 2, error_message: SECRET },
      }),
    });
    const chunk = r.chunks.find((c) => c.error);
    expect(chunk.error.code).toBeGreaterThanOrEqual(500);
    expect(chunk.error.message).toContain('mid-stream');
    expect(r.raw).not.toMatch(/Zq81|9,876,543|AbCd/);
    const event = await vi.waitFor(
      () => {
        const e = stack.eventFor(r.headers.get('x-generation-id')!);
        if (!e) throw new Error('no event yet');
        return e as UsageEventV1;
      },
      { timeout: 5_000 },
    );
    expect(event.error?.message).toContain('Zq81SecretOrg');
  });
});

describe('only documented request fields reach the provider', () => {
  it('drops service_tier, store, metadata and unknown fields; forwards the documented ones', async () => {
    received.length = 0;
    const r = await post({
      service_tier: 'priority',
      store: true,
      metadata: { a: 'b' },
      unknown_field: 1,
      temperature: 0.5,
      seed: 7,
      user: 'u1',
      sim: { completion_tokens: 3 },
    });
    expect(r.status).toBe(200);
    await vi.waitFor(() => expect(received.length).toBe(1));
    const body = received[0]!;
    expect(body).not.toHaveProperty('service_tier');
    expect(body).not.toHaveProperty('store');
    expect(body).not.toHaveProperty('metadata');
    expect(body).not.toHaveProperty('unknown_field');
    expect(body).toMatchObject({ temperature: 0.5, seed: 7, user: 'u1', sim: { completion_tokens: 3 } });
  });

  it('forwards `sim` only to providers the catalog marks as simulators', async () => {
    const dev = loadCatalog(DEFAULT_CATALOG_PATH, { ...process.env, PROVIDER_SIM_URL: stack.sim.url });
    expect(dev.provider('sim')?.simulator).toBe(true);
    const yaml = `
providers:
  - { name: real, base_url: "${stack.sim.url}/v1" }
models:
  - { id: test/real, name: real, context_length: 1000, created: 1, providers: [{ provider: real, model: m }], pricing: { prompt: "0.000001", completion: "0.000002" } }
`;
    let proxy: ProxyHandle | undefined;
    try {
      proxy = await startProxy(stack.config, { catalog: parseCatalog(yaml, { format: 'yaml', env: {} }) });
      received.length = 0;
      const r = await post({ model: 'test/real', sim: { error_status: 500 } }, `${proxy.url}/api/v1`);
      expect(r.status).toBe(200); // the fault injection did not reach the provider
      await vi.waitFor(() => expect(received.length).toBe(1));
      expect(received[0]).not.toHaveProperty('sim');
    } finally {
      await proxy?.close();
    }
  });
});
