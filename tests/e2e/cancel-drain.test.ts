/**
 * Issue 22, "clients that walk away": a client that goes away after a provider accepted its request
 * does not end what the provider bills. The proxy drains the provider's answer and bills its usage
 * (`usage_source` provider, cancelled), streamed and not, in both wire formats; the grace period
 * (CANCEL_DRAIN_MS) and a shutdown bound the drain. Whole stack: provider-sim, billing, keys, proxy.
 *
 * The reference for each case is the same request read to its end: the simulator is deterministic, so
 * an abandoned request must be billed the very tokens of its completed twin.
 */
import { configEnv, loadConfig, startProxy } from '@tollgate/proxy';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { abandon } from '../support/abandon';
import { describeResponse, type Stack, startStack } from '../support/stack';

const DRAIN_MS = 2_500;

const catalogYaml = (simUrl: string) => `
providers:
  - { name: sim, base_url: "${simUrl}/v1", simulator: true }
  - { name: sim-anthropic, base_url: "${simUrl}/v1", format: anthropic, simulator: true }
models:
  - id: test/mini
    name: mini
    context_length: 128000
    max_output_tokens: 16384
    created: 1
    providers: [{ provider: sim, model: gpt-4o-mini }]
    pricing: { prompt: "0.00000015", completion: "0.0000006" }
  - id: test/reasoner
    name: reasoner
    context_length: 200000
    max_output_tokens: 100000
    created: 1
    providers: [{ provider: sim, model: o4-mini }]
    pricing: { prompt: "0.0000011", completion: "0.0000044" }
  - id: test/claude
    name: claude
    context_length: 200000
    max_output_tokens: 64000
    created: 1
    providers: [{ provider: sim-anthropic, model: claude-sonnet-4 }]
    pricing: { prompt: "0.000003", completion: "0.000015", cache_read: "0.0000003", cache_write: "0.00000375" }
`;

let stack: Stack;
let db: pg.Pool;

beforeAll(async () => {
  stack = await startStack({
    catalogYaml,
    proxyEnv: { CANCEL_DRAIN_MS: String(DRAIN_MS), MAX_CONCURRENT_COMPLETIONS_PER_KEY: '1' },
  });
  db = new pg.Pool({ connectionString: stack.infra.database.url, max: 2 });
});
afterAll(async () => {
  await db?.end();
  await stack?.close();
});

/** Resolves once the simulator has received `n` more requests than when called. */
function simRequests(): { atLeast(n: number): Promise<void> } {
  let seen = 0;
  const on = () => {
    seen++;
  };
  stack.services.sim.server.on('request', on);
  return {
    atLeast: (n) =>
      vi
        .waitFor(() => expect(seen).toBeGreaterThanOrEqual(n), { timeout: 5_000, interval: 5 })
        .then(() => {
          stack.services.sim.server.off('request', on);
        }),
  };
}

/** The generation record of `id` (billing writes it once the usage event is consumed). */
async function record(id: string) {
  const r = await stack.waitForGeneration(id);
  expect(r.status, describeResponse(r)).toBe(200);
  return r.body.data;
}

/** The generation record of the request sent with X-Title `app` (for requests abandoned before headers). */
async function recordByApp(app: string) {
  const row = await vi.waitFor(
    async () => {
      const r = await db.query<{ id: string }>('select id from billing.generations where app = $1', [app]);
      if (r.rows.length !== 1) throw new Error(`${r.rows.length} records of ${app} yet`);
      return r.rows[0]!;
    },
    { timeout: DRAIN_MS + 10_000, interval: 50 },
  );
  return record(row.id);
}

/** The same request read to its end: the tokens the provider bills for it. */
async function completed(body: Record<string, unknown>) {
  const r = await stack.api('/chat/completions', {
    key: stack.inferenceKey,
    body: { ...body, stream: false, sim: { ...(body.sim as object), usage_delay_ms: 0, inter_token_ms: 0 } },
  });
  expect(r.status, describeResponse(r)).toBe(200);
  return record(r.body.id);
}

const tokensOf = (g: Record<string, unknown>) => ({
  tokens_prompt: g.tokens_prompt,
  tokens_completion: g.tokens_completion,
  tokens_reasoning: g.tokens_reasoning,
  tokens_cached: g.tokens_cached,
  tokens_cache_write: g.tokens_cache_write,
  total_cost: g.total_cost,
});

const messages = [{ role: 'user', content: 'Explain what a model gateway drains when a client leaves.' }];

describe('a client that walks away after the provider accepted the request', () => {
  it('streamed: billed the provider usage of a reasoning stream left after its first content delta', async () => {
    const body = {
      model: 'test/reasoner',
      messages,
      stream: true,
      sim: { completion_tokens: 60, reasoning_tokens: 5_000, inter_token_ms: 5, usage_delay_ms: 300 },
    };
    const left = await abandon({ url: stack.baseUrl, key: stack.inferenceKey, body, point: 'first-content' });
    const g = await record(left.id!);
    expect(g).toMatchObject({ cancelled: true, streamed: true, usage_source: 'provider' });
    const twin = await completed(body);
    expect(tokensOf(g)).toEqual(tokensOf(twin));
    expect(g.tokens_reasoning).toBe(5_000);
    expect(g.tokens_completion).toBe(5_060);
  });

  it('non-streamed: billed the provider usage when the client left before the answer', async () => {
    const body = { model: 'test/reasoner', messages, sim: { reasoning_tokens: 2_000, ttft_ms: 400 } };
    const app = `drain-json-${Date.now()}`;
    const sim = simRequests();
    const controller = new AbortController();
    const pending = fetch(`${stack.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.inferenceKey}`,
        'content-type': 'application/json',
        'x-title': app,
      },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => null);
    await sim.atLeast(1);
    controller.abort();
    await pending;
    const g = await recordByApp(app);
    expect(g).toMatchObject({
      cancelled: true,
      streamed: false,
      usage_source: 'provider',
      tokens_reasoning: 2_000,
    });
    expect(tokensOf(g)).toEqual(tokensOf(await completed(body)));
  });

  it('streamed, before the response headers: the stream is drained once it starts', async () => {
    const body = { model: 'test/mini', messages, stream: true, sim: { ttft_ms: 400, completion_tokens: 30 } };
    const app = `drain-head-${Date.now()}`;
    const sim = simRequests();
    const controller = new AbortController();
    const pending = fetch(`${stack.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.inferenceKey}`,
        'content-type': 'application/json',
        'x-title': app,
      },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => null);
    await sim.atLeast(1);
    controller.abort();
    await pending;
    const g = await recordByApp(app);
    expect(g).toMatchObject({ cancelled: true, streamed: true, usage_source: 'provider' });
    expect(tokensOf(g)).toEqual(tokensOf(await completed(body)));
  });

  it('anthropic wire format, streamed and not: billed the usage of message_delta / the Message', async () => {
    const streamed = {
      model: 'test/claude',
      messages,
      stream: true,
      max_tokens: 500,
      sim: { completion_tokens: 80, inter_token_ms: 5, usage_delay_ms: 200, cache_write_tokens: 5 },
    };
    const left = await abandon({
      url: stack.baseUrl,
      key: stack.inferenceKey,
      body: streamed,
      point: 'first-content',
    });
    const g = await record(left.id!);
    expect(g).toMatchObject({
      cancelled: true,
      streamed: true,
      usage_source: 'provider',
      tokens_completion: 80,
    });
    expect(tokensOf(g)).toEqual(tokensOf(await completed(streamed)));

    const json = {
      model: 'test/claude',
      messages,
      max_tokens: 500,
      sim: { completion_tokens: 40, ttft_ms: 400 },
    };
    const app = `drain-claude-${Date.now()}`;
    const sim = simRequests();
    const controller = new AbortController();
    const pending = fetch(`${stack.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.inferenceKey}`,
        'content-type': 'application/json',
        'x-title': app,
      },
      body: JSON.stringify(json),
      signal: controller.signal,
    }).catch(() => null);
    await sim.atLeast(1);
    controller.abort();
    await pending;
    const j = await recordByApp(app);
    expect(j).toMatchObject({
      cancelled: true,
      streamed: false,
      usage_source: 'provider',
      tokens_completion: 40,
    });
    expect(tokensOf(j)).toEqual(tokensOf(await completed(json)));
  });

  it("keeps the key's concurrency slot while it drains (MAX_CONCURRENT_COMPLETIONS_PER_KEY=1)", async () => {
    const body = {
      model: 'test/mini',
      messages,
      stream: true,
      sim: { completion_tokens: 20, usage_delay_ms: 1_500 },
    };
    const left = await abandon({ url: stack.baseUrl, key: stack.inferenceKey, body, point: 'first-content' });
    // The first completion is still draining (its usage comes in 1.5 s) and still holds a provider
    // connection: it counts against the key's cap, so cancel-and-resend cannot multiply the
    // connections one key holds (the client's socket is gone; the slot is released by finish).
    const during = await stack.api('/chat/completions', {
      key: stack.inferenceKey,
      body: { model: 'test/mini', messages, sim: { completion_tokens: 3 } },
    });
    expect(during.status, describeResponse(during)).toBe(429);
    expect(during.body.error.metadata).toMatchObject({ reason: 'concurrency', scope: 'key' });
    const g = await record(left.id!);
    expect(g).toMatchObject({ cancelled: true, usage_source: 'provider', tokens_completion: 20 });
    // Once the drain finished, the key runs again.
    await vi.waitFor(
      async () => {
        const r = await stack.api('/chat/completions', {
          key: stack.inferenceKey,
          body: { model: 'test/mini', messages, sim: { completion_tokens: 3 } },
        });
        expect(r.status, describeResponse(r)).toBe(200);
      },
      { timeout: 2_000, interval: 20 },
    );
  });

  it('bills an upper bound, marked estimated, when the usage does not come within CANCEL_DRAIN_MS', async () => {
    const body = {
      model: 'test/mini',
      messages,
      stream: true,
      sim: { completion_tokens: 20, usage_delay_ms: 60_000 },
    };
    const started = Date.now();
    const left = await abandon({ url: stack.baseUrl, key: stack.inferenceKey, body, point: 'first-content' });
    const g = await record(left.id!);
    const elapsed = Date.now() - started;
    expect(g).toMatchObject({ cancelled: true, streamed: true, usage_source: 'estimated' });
    expect(elapsed).toBeGreaterThanOrEqual(DRAIN_MS - 100);
    expect(elapsed).toBeLessThan(DRAIN_MS + 8_000);
    // The estimate covers the whole produced text (20 tokens) and the prompt.
    expect(g.tokens_completion).toBeGreaterThanOrEqual(20);
    expect(g.tokens_prompt).toBeGreaterThan(0);
  });
});

describe('shutdown (SIGTERM) with a drain in progress', () => {
  const extraProxy = (env: Record<string, string>) => {
    const base = configEnv(stack.proxyConfig);
    return startProxy(loadConfig({ ...base, PORT: '0', ...env }), { catalog: stack.catalog });
  };

  it('waits for the drain within its deadline and bills the provider usage', async () => {
    const proxy = await extraProxy({ SHUTDOWN_TIMEOUT_MS: '5000', CANCEL_DRAIN_MS: '10000' });
    const body = {
      model: 'test/mini',
      messages,
      stream: true,
      sim: { completion_tokens: 25, usage_delay_ms: 800 },
    };
    const left = await abandon({
      url: `${proxy.url}/api/v1`,
      key: stack.inferenceKey,
      body,
      point: 'first-content',
    });
    await proxy.close();
    const g = await record(left.id!);
    expect(g).toMatchObject({ cancelled: true, usage_source: 'provider', tokens_completion: 25 });
  });

  it('bills the upper bound when the drain outlasts the shutdown deadline', async () => {
    const proxy = await extraProxy({ SHUTDOWN_TIMEOUT_MS: '600', CANCEL_DRAIN_MS: '30000' });
    const body = {
      model: 'test/mini',
      messages,
      stream: true,
      sim: { completion_tokens: 25, usage_delay_ms: 30_000 },
    };
    const left = await abandon({
      url: `${proxy.url}/api/v1`,
      key: stack.inferenceKey,
      body,
      point: 'first-content',
    });
    const started = Date.now();
    await proxy.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    const g = await record(left.id!);
    expect(g).toMatchObject({ cancelled: true, usage_source: 'estimated' });
    expect(g.tokens_completion).toBeGreaterThanOrEqual(25);
  });
});
