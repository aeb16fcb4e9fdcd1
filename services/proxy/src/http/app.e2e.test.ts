import { loadCatalog } from '@tollgate/catalog';
import { serveMetrics } from '@tollgate/metrics';
import { openapiJson } from '@tollgate/openapi';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Json, readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { configEnv, DEFAULT_CATALOG_PATH, loadConfig } from '../config';
import { startProxy } from './app';

let stack: ProxyStack;

beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('GET /models', () => {
  it('lists the catalog in the DESIGN shape under both prefixes', async () => {
    const catalog = loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: 'http://x' });
    for (const base of [`${stack.proxy.url}/api/v1`, `${stack.proxy.url}/v1`]) {
      const res = await fetch(`${base}/models`, { headers: bearer(stack.inference) });
      const body = (await res.json()) as { data: Json[] };
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      expect(body.data.map((m) => m.id)).toEqual(catalog.models().map((m) => m.id));
      const mini = body.data.find((m) => m.id === 'openai/gpt-4o-mini');
      expect(mini).toMatchObject({
        name: expect.any(String),
        created: expect.any(Number),
        description: expect.any(String),
        context_length: 128000,
        pricing: { prompt: '0.00000015', completion: '0.0000006', input_cache_read: '0.000000075' },
        top_provider: { context_length: 128000 },
        supported_parameters: expect.any(Array),
      });
    }
  });
});

describe('GET /openapi.json', () => {
  it('serves the OpenAPI document under both prefixes without a key', async () => {
    for (const prefix of ['/api/v1', '/v1']) {
      const res = await fetch(`${stack.proxy.url}${prefix}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe(openapiJson);
    }
  });
});

describe('routing', () => {
  it('answers 404 in the envelope for unknown routes (after authentication)', async () => {
    const res = await fetch(`${stack.api}/nothing-here`, { headers: bearer(stack.inference) });
    const body = (await res.json()) as Json;
    expect(res.status).toBe(404);
    expect(body.error).toMatchObject({ code: 404, metadata: { error_type: 'not_found' } });
    const outside = await fetch(`${stack.proxy.url}/api/v2/models`, { headers: bearer(stack.inference) });
    expect(outside.status).toBe(404);
  });
});

describe('health and metrics', () => {
  it('serves /healthz and /readyz without a key', async () => {
    expect((await fetch(`${stack.proxy.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${stack.proxy.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', checks: { redis: 'ok' } });
  });

  it('answers /metrics on the public port with 404 in the error envelope', async () => {
    const res = await fetch(`${stack.proxy.url}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 404, metadata: { error_type: 'not_found' } } });
  });

  it('serves metrics on their own listener: 404 envelope for any other path', async () => {
    const listener = await serveMetrics({
      registry: stack.proxy.metrics.registry,
      port: 0,
      host: '127.0.0.1',
    });
    try {
      const other = await fetch(`${listener.url}/api/v1/models`);
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ error: { code: 404 } });
      const ok = await fetch(`${listener.url}/metrics`);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    } finally {
      await listener.close();
    }
  });

  it('exposes completion, overhead, GenAI, spend and usage-event metrics after a chat completion', async () => {
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'metrics' }],
        sim: { completion_tokens: 5 },
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
    await vi.waitFor(async () => {
      const text = await stack.proxy.metrics.registry.metrics();
      expect(text).toMatch(
        /tollgate_proxy_completions_total\{model="openai\/gpt-4o-mini",provider="[^"]+",status="200"\} [1-9]/,
      );
      expect(text).toMatch(/tollgate_gateway_overhead_seconds_count\{streamed="false"\} [1-9]/);
      expect(text).toMatch(/gen_ai_client_operation_duration_seconds_count\{gen_ai_operation_name="chat",/);
      expect(text).toMatch(/gen_ai_server_time_to_first_token_seconds_count\{gen_ai_operation_name="chat",/);
      expect(text).toMatch(/gen_ai_client_token_usage_sum\{[^}]*gen_ai_token_type="output"\} 5/);
      expect(text).toMatch(/tollgate_proxy_usage_events_total [1-9]/);
      expect(text).toMatch(/tollgate_proxy_spend_decisions_total\{decision="(admitted|untracked)"\} [1-9]/);
      expect(text).toMatch(/tollgate_proxy_cost_usd_total\{model="openai\/gpt-4o-mini",/);
      expect(text).not.toMatch(/key_id|request_id|gen-/);
    });
  });

  it('exposes request counts, latency histogram and publisher gauges', async () => {
    await fetch(`${stack.api}/models`, { headers: bearer(stack.inference) });
    await fetch(`${stack.api}/models`);
    const text = await stack.proxy.metrics.registry.metrics();
    expect(text).toMatch(/tollgate_proxy_requests_total\{route="models",status="200"\} \d+/);
    expect(text).toMatch(/tollgate_proxy_requests_total\{route="other",status="401"\} \d+/);
    expect(text).toMatch(/tollgate_proxy_request_duration_seconds_bucket\{le="0.005",route="models"\}/);
    expect(text).toMatch(/tollgate_proxy_publisher_buffered_events \d+/);
    expect(text).toMatch(/tollgate_proxy_publisher_dropped_events_total \d+/);
    expect(text).toMatch(/tollgate_proxy_publisher_connected [01]/);
  });
});

describe('graceful shutdown', () => {
  it('stops accepting, lets an in-flight stream finish, and publishes its event before closing', async () => {
    const env = configEnv(stack.config);
    const proxy = await startProxy(loadConfig({ ...env, PORT: '0' }), {
      catalog: loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: stack.sim.url }),
    });
    const streaming = readSse(`${proxy.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'shutdown test' }],
        stream: true,
        sim: { completion_tokens: 10, inter_token_ms: 40 },
      }),
    });
    await vi.waitFor(() => expect(proxy.inFlight()).toBeGreaterThan(0));
    const closing = proxy.close();
    // New connections are refused while the stream drains.
    await vi.waitFor(async () => {
      await expect(fetch(`${proxy.url}/healthz`)).rejects.toThrow();
    });
    const r = await streaming;
    await closing;
    expect(r.status).toBe(200);
    expect(r.data.at(-1)).toBe('[DONE]');
    const id = r.headers.get('x-generation-id')!;
    await vi.waitFor(
      () => expect(stack.eventFor(id)).toMatchObject({ cancelled: false, usage_source: 'provider' }),
      {
        timeout: 5_000,
      },
    );
  });

  it('ends a stream still running at the deadline with the usage chunk, the error chunk and [DONE], billed', async () => {
    const env = configEnv(stack.config);
    const proxy = await startProxy(loadConfig({ ...env, PORT: '0', SHUTDOWN_TIMEOUT_MS: '300' }), {
      catalog: loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: stack.sim.url }),
    });
    const streaming = readSse(`${proxy.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'shutdown deadline test' }],
        stream: true,
        sim: { completion_tokens: 200, inter_token_ms: 50 },
      }),
    });
    await vi.waitFor(() => expect(proxy.inFlight()).toBeGreaterThan(0));
    const started = Date.now();
    await proxy.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    const r = await streaming;
    expect(r.status).toBe(200);
    expect(r.data.at(-1)).toBe('[DONE]');
    const chunks = r.data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Json);
    const last = chunks.at(-1) as { error?: Json; choices: Json[] };
    expect(last.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'error' }]);
    expect(last.error).toMatchObject({ code: 503, message: 'The gateway is restarting; retry the request' });
    const usage = chunks.find((d) => d.usage)?.usage as { completion_tokens: number } | undefined;
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeLessThan(200);
    const id = r.headers.get('x-generation-id')!;
    await vi.waitFor(() => expect(stack.eventFor(id)).toBeTruthy(), { timeout: 5_000 });
  });
});
