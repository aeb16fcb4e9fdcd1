import { randomUUID } from 'node:crypto';
import { REQUEST_ID_PATTERN } from '@tollgate/auth';
import { computeCost, loadCatalog, parseCatalog } from '@tollgate/catalog';
import type { UsageEventV1 } from '@tollgate/events';
import { toNumber } from '@tollgate/money';
import { countPromptTokens } from '@tollgate/provider-sim';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Json, readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';
import { configEnv, DEFAULT_CATALOG_PATH, loadConfig } from '../../config';
import { type ProxyHandle, startProxy } from '../../http/app';

let stack: ProxyStack;
let client: OpenAI;
const KEEPALIVE_MS = 150;
const catalog = loadCatalog(DEFAULT_CATALOG_PATH, { PROVIDER_SIM_URL: 'http://127.0.0.1:1' });
const mini = catalog.model('openai/gpt-4o-mini')!;
const sonnet = catalog.model('anthropic/claude-sonnet-4')!;

beforeAll(async () => {
  stack = await startProxyStack({ env: { KEEPALIVE_INTERVAL_MS: String(KEEPALIVE_MS) } });
  client = new OpenAI({ apiKey: stack.inference.key, baseURL: stack.api, maxRetries: 0 });
});
afterAll(async () => {
  await stack?.close();
});

const messages = [{ role: 'user' as const, content: 'Say something about gateways.' }];
const promptTokens = countPromptTokens(messages);

function waitForEvent(id: string): Promise<UsageEventV1> {
  return vi.waitFor(
    () => {
      const e = stack.eventFor(id);
      if (!e) throw new Error(`no usage event for ${id} yet (${stack.events.length} events)`);
      return e;
    },
    { timeout: 5_000, interval: 20 },
  );
}

async function post(body: unknown, init: { headers?: Record<string, string>; path?: string } = {}) {
  const res = await fetch(`${init.path ?? stack.api}/chat/completions`, {
    method: 'POST',
    headers: { ...bearer(stack.inference), ...init.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text: `${res.status} ${text}` };
}

const sse = (body: Record<string, unknown>, options?: Parameters<typeof readSse>[2]) =>
  readSse(
    `${stack.api}/chat/completions`,
    { method: 'POST', headers: bearer(stack.inference), body: JSON.stringify({ stream: true, ...body }) },
    options,
  );

const contentOf = (chunks: Json[]) => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

describe('the openai client against /v1', () => {
  it('lists models and completes through baseURL <proxy>/v1', async () => {
    const v1 = new OpenAI({ apiKey: stack.inference.key, baseURL: `${stack.proxy.url}/v1`, maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of v1.models.list()) ids.push(m.id);
    expect(ids).toContain('openai/gpt-4o-mini');
    const r = await v1.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 2 },
    } as never);
    expect((r as unknown as Json).usage.completion_tokens).toBe(2);
  });

  it('surfaces 401 and 403 as the openai client errors', async () => {
    const bad = new OpenAI({ apiKey: `sk-tg-v1-${'0'.repeat(64)}`, baseURL: stack.api, maxRetries: 0 });
    await expect(
      bad.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }),
    ).rejects.toMatchObject({ status: 401 });
    const mgmt = new OpenAI({ apiKey: stack.account.managementKey.key, baseURL: stack.api, maxRetries: 0 });
    await expect(
      mgmt.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }),
    ).rejects.toMatchObject({ status: 403 });
  });
});

describe('POST /chat/completions, non-streamed', () => {
  it('answers through the openai client with the request id, the catalog model and a completed usage', async () => {
    const res = await client.chat.completions
      .create({
        model: 'openai/gpt-4o-mini',
        messages,
        sim: { completion_tokens: 7, cached_tokens: 3 },
      } as never)
      .withResponse();
    const body = res.data as unknown as Record<string, Json>;
    expect(body.id).toMatch(REQUEST_ID_PATTERN);
    expect(res.response.headers.get('x-generation-id')).toBe(body.id);
    expect(body.model).toBe('openai/gpt-4o-mini');
    expect(body.choices[0].message.content.length).toBeGreaterThan(0);
    const tokens = { prompt: promptTokens, completion: 7, cached: 3, cacheWrite: 0, reasoning: 0 };
    expect(body.usage).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: 7,
      total_tokens: promptTokens + 7,
      prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: toNumber(computeCost(mini, tokens)),
      is_byok: false,
    });

    const event = await waitForEvent(body.id);
    expect(event).toMatchObject({
      type: 'usage',
      version: 1,
      account_id: stack.account.id,
      key_id: stack.inference.id,
      model: 'openai/gpt-4o-mini',
      provider_name: 'sim',
      upstream_model: 'gpt-4o-mini',
      streamed: false,
      cancelled: false,
      finish_reason: 'stop',
      usage_source: 'provider',
      tokens: { prompt: promptTokens, completion: 7, cached: 3, cache_write: 0, reasoning: 0 },
      is_byok: false,
      error: null,
      app: null,
    });
    expect(event.upstream_id).toMatch(/^chatcmpl-/);
    expect(Number(event.cost)).toBe(body.usage.cost);
  });

  it('prices cache writes and reasoning exactly, and records X-Title as the app', async () => {
    const r = await post(
      {
        model: 'anthropic/claude-sonnet-4',
        messages,
        sim: { completion_tokens: 4, reasoning_tokens: 6, cached_tokens: 2, cache_write_tokens: 5 },
      },
      { headers: { 'X-Title': 'My App' } },
    );
    expect(r.status, r.text).toBe(200);
    const tokens = { prompt: promptTokens, completion: 10, cached: 2, cacheWrite: 5, reasoning: 6 };
    expect(r.json.usage).toMatchObject({
      completion_tokens: 10,
      prompt_tokens_details: { cached_tokens: 2, cache_write_tokens: 5 },
      completion_tokens_details: { reasoning_tokens: 6 },
      cost: toNumber(computeCost(sonnet, tokens)),
    });
    const event = await waitForEvent(r.json.id);
    expect(event.app).toBe('My App');
    expect(event.cost).toBe(String(toNumber(computeCost(sonnet, tokens))));
    expect(event.tokens).toEqual({
      prompt: promptTokens,
      completion: 10,
      cached: 2,
      cache_write: 5,
      reasoning: 6,
    });
  });

  it('is served under /v1 as well, and passes unknown body fields through', async () => {
    const r = await post(
      {
        model: 'openai/gpt-4o-mini',
        messages,
        max_tokens: 3,
        temperature: 0.2,
        user: 'u1',
        sim: { completion_tokens: 50 },
      },
      { path: `${stack.proxy.url}/v1` },
    );
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.completion_tokens).toBe(3);
    expect(r.json.choices[0].finish_reason).toBe('length');
  });

  it('bills an estimate when the provider reports no usage', async () => {
    const r = await post({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 12, omit_usage: true },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.usage.prompt_tokens).toBeGreaterThanOrEqual(promptTokens);
    expect(r.json.usage.completion_tokens).toBeGreaterThanOrEqual(12);
    expect(r.json.usage.cost).toBeGreaterThan(0);
    const event = await waitForEvent(r.json.id);
    expect(event.usage_source).toBe('estimated');
    expect(event.tokens.completion).toBe(r.json.usage.completion_tokens);
  });

  it('relays provider 4xx with its status and provider_name, maps 5xx and auth failures to 502, publishes nothing', async () => {
    const before = stack.events.length;
    for (const [status, expected] of [
      [429, 429],
      [400, 400],
      [500, 502],
      [503, 502],
      [401, 502],
    ] as const) {
      const r = await post({ model: 'openai/gpt-4o-mini', messages, sim: { error_status: status } });
      expect(r.status, r.text).toBe(expected);
      expect(r.json.error).toMatchObject({
        code: expected,
        metadata: { error_type: 'provider_error', provider_name: 'sim' },
      });
      expect(r.headers.get('x-generation-id')).toMatch(REQUEST_ID_PATTERN);
    }
    // A later successful request's event arrives; none came for the refused ones.
    const ok = await post({ model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: 1 } });
    await waitForEvent(ok.json.id);
    expect(stack.events.slice(before).map((e) => e.id)).toEqual([ok.json.id]);
  });

  it('answers 502 when the provider cuts the connection of a non-streamed request', async () => {
    const r = await post({ model: 'openai/gpt-4o-mini', messages, sim: { cut_after_chunks: 2 } });
    expect(r.status, r.text).toBe(502);
    expect(r.json.error.metadata).toMatchObject({ error_type: 'provider_error', provider_name: 'sim' });
  });
});

describe('POST /chat/completions, validation', () => {
  const cases: [string, unknown, RegExp][] = [
    ['invalid JSON', '{"model":', /JSON/],
    ['an array body', '[1,2]', /object/],
    ['a string body', '"hello"', /object/],
    ['missing model', { messages }, /^model/],
    ['numeric model', { model: 42, messages }, /^model/],
    ['empty model', { model: '', messages }, /^model/],
    ['unknown model', { model: 'nope/nothing', messages }, /^model: 'nope\/nothing'/],
    ['missing messages', { model: 'openai/gpt-4o-mini' }, /^messages/],
    ['messages not an array', { model: 'openai/gpt-4o-mini', messages: 'hi' }, /^messages/],
    ['empty messages', { model: 'openai/gpt-4o-mini', messages: [] }, /^messages/],
    ['a message that is not an object', { model: 'openai/gpt-4o-mini', messages: ['hi'] }, /^messages\.0/],
    [
      'a message without role',
      { model: 'openai/gpt-4o-mini', messages: [{ content: 'x' }] },
      /^messages\.0\.role/,
    ],
    [
      'a numeric role',
      { model: 'openai/gpt-4o-mini', messages: [{ role: 1, content: 'x' }] },
      /^messages\.0\.role/,
    ],
    [
      'numeric content',
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 5 }] },
      /^messages\.0\.content/,
    ],
    [
      'object content',
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: {} }] },
      /^messages\.0\.content/,
    ],
    [
      'missing user content',
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' }] },
      /^messages\.0\.content/,
    ],
    ['a string stream', { model: 'openai/gpt-4o-mini', messages, stream: 'yes' }, /^stream/],
    [
      'a string stream_options',
      { model: 'openai/gpt-4o-mini', messages, stream_options: 'x' },
      /^stream_options/,
    ],
    ['negative max_tokens', { model: 'openai/gpt-4o-mini', messages, max_tokens: -1 }, /^max_tokens/],
    [
      'fractional max_completion_tokens',
      { model: 'openai/gpt-4o-mini', messages, max_completion_tokens: 1.5 },
      /^max_completion_tokens/,
    ],
  ];
  for (const [name, body, message] of cases) {
    it(`answers 400 bad_request naming the field for ${name}`, async () => {
      const upstreamBefore = stack.upstreamRequests;
      const r = await post(body);
      expect(stack.upstreamRequests).toBe(upstreamBefore);
      expect(r.status, r.text).toBe(400);
      expect(r.json.error.metadata.error_type, r.text).toBe('bad_request');
      expect(r.json.error.message, r.text).toMatch(message);
    });
  }

  it('answers 413 for a body over the limit and 415 for a compressed body', async () => {
    const big = JSON.stringify({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'x'.repeat(11 * 1024 * 1024) }],
    });
    const r = await post(big);
    expect(r.status, r.text.slice(0, 200)).toBe(413);
    expect(r.json.error.metadata.error_type).toBe('payload_too_large');
    const gz = await post(JSON.stringify({ model: 'openai/gpt-4o-mini', messages }), {
      headers: { 'content-encoding': 'gzip' },
    });
    expect(gz.status, gz.text).toBe(415);
  });

  it('accepts a JSON body sent without a JSON content type', async () => {
    const r = await post(
      JSON.stringify({ model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: 1 } }),
      {
        headers: { 'content-type': 'text/plain' },
      },
    );
    expect(r.status, r.text).toBe(200);
  });

  it('never answers 500 to arbitrary bodies', async () => {
    const weird = [
      '',
      'null',
      'true',
      '0',
      '{}',
      '{"model":null,"messages":null}',
      '{"__proto__":{"model":"x"}}',
      JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        sim: { completion_tokens: 1 },
      }),
      JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: null }],
        sim: { completion_tokens: 1 },
      }),
      JSON.stringify({ model: 'openai/gpt-4o-mini', messages, stream: null, sim: { completion_tokens: 1 } }),
      JSON.stringify({ model: 'openai/gpt-4o-mini', messages, sim: 'not an object' }),
      JSON.stringify({ model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: -5 } }),
      JSON.stringify({ model: 'openai/gpt-4o-mini', messages, temperature: 'hot' }),
      `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"${'x'.repeat(20_000)}"}],"sim":{"completion_tokens":1}}`,
    ];
    for (const body of weird) {
      const r = await post(body);
      expect(r.status, `${body.slice(0, 80)} → ${r.text}`).toBeLessThan(500);
      expect(r.status === 200 || r.json?.error?.metadata?.error_type, r.text).toBeTruthy();
    }
  });
});

describe('POST /chat/completions, streamed', () => {
  it('streams through the openai client: every chunk carries the request id, usage last', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'openai/gpt-4o-mini',
        messages,
        stream: true,
        sim: { completion_tokens: 5, reasoning_tokens: 2 },
      } as never)
      .withResponse();
    const chunks: Json[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<Json>) chunks.push(chunk);
    const id = chunks[0].id;
    expect(id).toMatch(REQUEST_ID_PATTERN);
    expect(response.headers.get('x-generation-id')).toBe(id);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    for (const c of chunks) {
      expect(c.id).toBe(id);
      expect(c.model).toBe('openai/gpt-4o-mini');
    }
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    const tokens = { prompt: promptTokens, completion: 7, cached: 0, cacheWrite: 0, reasoning: 2 };
    expect(last.usage).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: 7,
      completion_tokens_details: { reasoning_tokens: 2 },
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      cost: toNumber(computeCost(mini, tokens)),
      is_byok: false,
    });
    expect(contentOf(chunks).length).toBeGreaterThan(0);
    const event = await waitForEvent(id);
    expect(event).toMatchObject({
      streamed: true,
      usage_source: 'provider',
      finish_reason: 'stop',
      cancelled: false,
    });
    expect(event.tokens).toEqual({
      prompt: promptTokens,
      completion: 7,
      cached: 0,
      cache_write: 0,
      reasoning: 2,
    });
  });

  it('forces include_usage even when the client asked for no usage, and ends with [DONE]', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      stream_options: { include_usage: false },
      sim: { completion_tokens: 3 },
    });
    expect(r.status).toBe(200);
    expect(r.data.at(-1)).toBe('[DONE]');
    expect(r.chunks.at(-1).usage.completion_tokens).toBe(3);
    expect(r.chunks.filter((c) => c.usage)).toHaveLength(1);
  });

  it('passes each token through as it arrives, while the provider is still generating the next one', async () => {
    // The provider waits `inter` before each next token; the client asks the provider's ledger how
    // many tokens it had generated as each content chunk arrives. A proxy that held chunks back
    // (until the end, a size or a timer) would hand chunk k over only once token k + 1 existed.
    // Wall-clock gaps between chunks (the old check: within 0.6-3 × 60 ms) measured the scheduler on
    // a loaded host: two chunks read in one turn, or a stall of more than 180 ms.
    const inter = 1_500;
    const tag = `pass-through-${randomUUID()}`;
    const generated = (): Promise<number | undefined> =>
      fetch(`${stack.sim.url}/sim/ledger?tag=${tag}`)
        .then((res) => res.json() as Promise<{ data: { completion: number }[] }>)
        .then((ledger) => ledger.data[0]?.completion);
    const seen: Promise<number | undefined>[] = [];
    const r = await sse(
      { model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: 3, inter_token_ms: inter, tag } },
      {
        onData: (payload) => {
          if (payload !== '[DONE]' && JSON.parse(payload).choices?.[0]?.delta?.content !== undefined)
            seen.push(generated());
        },
      },
    );
    expect(r.status).toBe(200);
    expect(r.data.at(-1)).toBe('[DONE]');
    // Content chunks 1 and 2 reached the client while the provider had generated only 1 and 2 tokens.
    expect(await Promise.all(seen)).toEqual([1, 2, 3]);
  });

  it('sends keep-alive comments while the first token is slow', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 2, ttft_ms: KEEPALIVE_MS * 3 + 50 },
    });
    expect(r.status).toBe(200);
    expect(r.comments.length, r.raw).toBeGreaterThanOrEqual(2);
    expect(r.comments.every((c) => c === ': keep-alive')).toBe(true);
    expect(r.sequence.indexOf('data')).toBeGreaterThan(r.sequence.indexOf('comment'));
    expect(r.data.at(-1)).toBe('[DONE]');
  });

  it('answers an ordinary HTTP error when the provider fails before the stream started', async () => {
    const r = await sse({ model: 'openai/gpt-4o-mini', messages, sim: { error_status: 503 } });
    expect(r.status, r.raw).toBe(502);
    expect(JSON.parse(r.raw).error.metadata).toMatchObject({
      error_type: 'provider_error',
      provider_name: 'sim',
    });
    const relayed = await sse({ model: 'openai/gpt-4o-mini', messages, sim: { error_status: 429 } });
    expect(relayed.status, relayed.raw).toBe(429);
  });

  it('turns a refusal after keep-alives already committed the 200 into the error chunk', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { error_status: 503, ttft_ms: KEEPALIVE_MS * 2 },
    });
    expect(r.status).toBe(200);
    expect(r.comments.length).toBeGreaterThanOrEqual(1);
    expect(r.data).toHaveLength(2);
    expect(r.chunks[0]).toMatchObject({
      id: null,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
      error: { code: 502, metadata: { error_type: 'server', provider_name: 'sim' } },
    });
    expect(r.data[1]).toBe('[DONE]');
  });

  it('ends a provider error mid-stream with estimated usage, the error chunk and [DONE]; the event says so', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 20, error_after_chunks: 4 },
    });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-generation-id')!;
    const content = r.chunks.filter((c) => c.choices?.[0]?.delta?.content !== undefined);
    expect(content).toHaveLength(4);
    const [usage, error] = r.chunks.slice(-2);
    expect(usage).toMatchObject({ id, choices: [] });
    expect(usage.usage.completion_tokens).toBeGreaterThanOrEqual(4);
    expect(usage.usage.prompt_tokens).toBeGreaterThanOrEqual(promptTokens);
    expect(error).toMatchObject({
      id: null,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
      error: { code: 502, metadata: { error_type: 'server', provider_name: 'sim' } },
    });
    expect(typeof error.error.message).toBe('string');
    expect(r.data.at(-1)).toBe('[DONE]');
    const event = await waitForEvent(id);
    expect(event).toMatchObject({
      streamed: true,
      cancelled: false,
      usage_source: 'estimated',
      finish_reason: 'error',
      error: { code: 502 },
    });
    expect(event.tokens.completion).toBe(usage.usage.completion_tokens);
    expect(event.cost).toBe(String(usage.usage.cost));
  });

  it('surfaces the mid-stream error to the openai client after the content', async () => {
    const stream = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages,
      stream: true,
      sim: { completion_tokens: 10, error_after_chunks: 2 },
    } as never);
    const seen: Json[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream as unknown as AsyncIterable<Json>) seen.push(chunk);
      })(),
    ).rejects.toThrow();
    expect(contentOf(seen).length).toBeGreaterThan(0);
  });

  it('handles a connection cut: estimated usage, error chunk, [DONE], estimated event', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 20, cut_after_chunks: 5 },
    });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-generation-id')!;
    expect(contentOf(r.chunks).length).toBeGreaterThan(0);
    const [usage, error] = r.chunks.slice(-2);
    expect(usage.usage.completion_tokens).toBeGreaterThanOrEqual(5);
    expect(error.error).toMatchObject({ code: 502, metadata: { provider_name: 'sim' } });
    expect(r.data.at(-1)).toBe('[DONE]');
    const event = await waitForEvent(id);
    expect(event).toMatchObject({ usage_source: 'estimated', finish_reason: 'error', cancelled: false });
  });

  it('estimates usage when the provider ends normally without a usage chunk', async () => {
    const r = await sse({
      model: 'openai/gpt-4o-mini',
      messages,
      sim: { completion_tokens: 9, omit_usage: true },
    });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-generation-id')!;
    const last = r.chunks.at(-1);
    expect(last).toMatchObject({ id, choices: [], usage: { is_byok: false } });
    expect(last.usage.completion_tokens).toBeGreaterThanOrEqual(9);
    expect(r.chunks.some((c) => c.error)).toBe(false);
    expect(r.data.at(-1)).toBe('[DONE]');
    const event = await waitForEvent(id);
    expect(event).toMatchObject({ usage_source: 'estimated', finish_reason: 'stop', error: null });
    expect(event.tokens.completion).toBe(last.usage.completion_tokens);
  });

  it("drains the provider's stream when the client disconnects and bills its usage (issue 22)", async () => {
    const abortsBefore = stack.upstreamAborts;
    const r = await sse(
      { model: 'openai/gpt-4o-mini', messages, sim: { completion_tokens: 200, inter_token_ms: 2 } },
      { stopAfterData: 5 },
    );
    const id = r.headers.get('x-generation-id')!;
    const event = await waitForEvent(id);
    // The provider's answer was read to its end (no upstream abort) and its usage billed.
    expect(event).toMatchObject({ cancelled: true, streamed: true, usage_source: 'provider' });
    expect(event.tokens).toMatchObject({ prompt: promptTokens, completion: 200 });
    expect(event.cost).toBe(
      toNumber(computeCost(mini, { prompt: promptTokens, completion: 200 })).toString(),
    );
    expect(stack.upstreamAborts).toBe(abortsBefore);
  });

  it("drains a non-streamed answer when its client disconnects before it and bills the provider's usage", async () => {
    const abortsBefore = stack.upstreamAborts;
    const controller = new AbortController();
    const pending = fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        messages,
        sim: { ttft_ms: 600, completion_tokens: 7 },
        stream: false,
      }),
      signal: controller.signal,
    }).catch(() => null);
    await vi.waitFor(() => expect(stack.proxy.inFlight()).toBeGreaterThan(0));
    const eventsBefore = stack.events.length;
    controller.abort();
    await pending;
    const event = await vi.waitFor(() => {
      const e = stack.events.slice(eventsBefore).find((x) => x.cancelled);
      if (!e) throw new Error('no cancelled event yet');
      return e;
    });
    expect(event).toMatchObject({
      streamed: false,
      usage_source: 'provider',
      tokens: { prompt: promptTokens, completion: 7 },
    });
    expect(stack.upstreamAborts).toBe(abortsBefore);
  });
});

describe('upstream transport failures', () => {
  let proxy: ProxyHandle;
  beforeAll(async () => {
    const yaml = `
providers:
  - { name: sim, base_url: "${stack.sim.url}/v1", simulator: true }
  - { name: dead, base_url: "http://127.0.0.1:9/v1" }
models:
  - { id: test/slow, name: slow, context_length: 1000, created: 1, providers: [{ provider: sim, model: m }], pricing: { prompt: "0.000001", completion: "0.000002" } }
  - { id: test/dead, name: dead, context_length: 1000, created: 1, providers: [{ provider: dead, model: m }], pricing: { prompt: "0.000001", completion: "0.000002" } }
`;
    const env = configEnv(stack.config);
    proxy = await startProxy(
      loadConfig({ ...env, PORT: '0', UPSTREAM_TIMEOUT_MS: '300', KEEPALIVE_INTERVAL_MS: '10000' }),
      {
        catalog: parseCatalog(yaml, { format: 'yaml', env: {} }),
      },
    );
  });
  afterAll(async () => {
    await proxy?.close();
  });

  const call = async (body: object) => {
    const res = await fetch(`${proxy.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ messages, ...body }),
    });
    return { status: res.status, text: await res.text() };
  };

  it('answers 502 provider_error when the provider is unreachable', async () => {
    for (const stream of [false, true]) {
      const r = await call({ model: 'test/dead', stream });
      expect(r.status, r.text).toBe(502);
      expect(JSON.parse(r.text).error.metadata).toMatchObject({
        error_type: 'provider_error',
        provider_name: 'dead',
      });
    }
  });

  it('answers 504 when the provider does not answer in time', async () => {
    const r = await call({ model: 'test/slow', sim: { ttft_ms: 2_000 } });
    expect(r.status, r.text).toBe(504);
    expect(JSON.parse(r.text).error.metadata).toMatchObject({ error_type: 'timeout', provider_name: 'sim' });
  });

  it('ends a stream that stalls mid-way with a 504 error chunk', async () => {
    const r = await readSse(`${proxy.url}/api/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'test/slow',
        messages,
        stream: true,
        sim: { completion_tokens: 3, inter_token_ms: 1_500 },
      }),
    });
    expect(r.status).toBe(200);
    expect(r.chunks.at(-1).error).toMatchObject({ code: 504, metadata: { error_type: 'timeout' } });
    expect(r.data.at(-1)).toBe('[DONE]');
  });
});
