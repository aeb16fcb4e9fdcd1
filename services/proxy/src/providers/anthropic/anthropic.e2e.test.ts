import { type Catalog, type CatalogModel, computeCost, parseCatalog } from '@tollgate/catalog';
import type { UsageEventV1 } from '@tollgate/events';
import { toNumber } from '@tollgate/money';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';

// A catalog provider with `format: anthropic` end to end: the official OpenAI client → the real proxy
// stack → the provider simulator's Anthropic mode (POST /v1/messages, x-api-key, anthropic-version).

let sim: ProviderSim;
let catalog: Catalog;
let stack: ProxyStack;
let client: OpenAI;
let claude: CatalogModel;
const paths: string[] = [];

beforeAll(async () => {
  sim = await startProviderSim();
  sim.server.on('request', (req) => paths.push(String(req.url)));
  catalog = parseCatalog(
    `
providers:
  - { name: anth, base_url: "${sim.baseUrl}", format: anthropic, simulator: true }
  - { name: anth-plain, base_url: "${sim.baseUrl}", format: anthropic }
  - { name: oai, base_url: "${sim.baseUrl}" }
models:
  - id: anthropic/claude-t
    name: claude
    context_length: 200000
    max_output_tokens: 1000
    created: 1
    providers: [{ provider: anth, model: claude-sonnet-4 }]
    pricing: { prompt: "0.000003", completion: "0.000015", cache_read: "0.0000003", cache_write: "0.00000375" }
  - id: anthropic/claude-or-openai
    name: claude or openai
    context_length: 200000
    max_output_tokens: 1000
    created: 1
    providers: [{ provider: anth, model: claude-sonnet-4 }, { provider: oai, model: gpt-4o-mini }]
    pricing: { prompt: "0.000003", completion: "0.000015" }
  - id: anthropic/claude-short
    name: claude short
    context_length: 200000
    max_output_tokens: 3
    created: 1
    providers: [{ provider: anth, model: claude-sonnet-4 }]
    pricing: { prompt: "0.000003", completion: "0.000015" }
  - id: anthropic/claude-only
    name: claude only
    context_length: 200000
    max_output_tokens: 1000
    created: 1
    providers: [{ provider: anth-plain, model: claude-sonnet-4 }]
    pricing: { prompt: "0.000003", completion: "0.000015" }
`,
    { env: {} },
  );
  claude = catalog.model('anthropic/claude-t') as CatalogModel;
  stack = await startProxyStack({ deps: { catalog } });
  client = new OpenAI({ apiKey: stack.inference.key, baseURL: stack.api, maxRetries: 0 });
});
afterAll(async () => {
  await stack?.close();
  await sim?.close();
});

const messages = [
  { role: 'system' as const, content: 'Be brief.' },
  { role: 'user' as const, content: 'Say hello to the gateway.' },
];
const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const eventOf = (id: string): Promise<UsageEventV1> => stack.waitForEvent(id);

const tokensOf = (u: Json) => ({
  prompt: u.prompt_tokens as number,
  completion: u.completion_tokens as number,
  cached: u.prompt_tokens_details.cached_tokens as number,
  cacheWrite: u.prompt_tokens_details.cache_write_tokens as number,
});

describe('format: anthropic through the proxy', () => {
  it('answers the OpenAI client (not streamed) and prices cache read and cache write exactly', async () => {
    const before = paths.length;
    const r = (await client.chat.completions.create({
      model: 'anthropic/claude-t',
      messages,
      max_tokens: 20,
      sim: { cached_tokens: 4, cache_write_tokens: 3 },
    } as never)) as unknown as Json;
    expect(paths.slice(before)).toEqual(['/v1/messages']);
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('anthropic/claude-t');
    expect(r.provider).toBe('anth');
    expect(r.choices[0].message.role).toBe('assistant');
    expect(r.choices[0].message.content.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(r.choices[0].finish_reason);
    expect(r.usage.prompt_tokens_details).toMatchObject({ cached_tokens: 4, cache_write_tokens: 3 });
    const tokens = tokensOf(r.usage);
    expect(tokens.prompt).toBeGreaterThan(7);
    expect(r.usage.cost).toBe(toNumber(computeCost(claude, tokens)));
    const e = await eventOf(r.id);
    expect(e).toMatchObject({
      provider_name: 'anth',
      upstream_model: 'claude-sonnet-4',
      usage_source: 'provider',
      tokens: { prompt: tokens.prompt, completion: tokens.completion, cached: 4, cache_write: 3 },
    });
    expect(e.upstream_id).toMatch(/^msg_/);
    expect(e.cost).toBe(String(r.usage.cost));
  });

  it('streams text to the OpenAI client with usage last and the same cost in the event', async () => {
    const stream = await client.chat.completions.create({
      model: 'anthropic/claude-t',
      messages,
      stream: true,
      stream_options: { include_usage: true },
      sim: { cached_tokens: 2, cache_write_tokens: 1 },
    } as never);
    let text = '';
    let id = '';
    let usage: Json = null;
    let finish: string | null = null;
    for await (const chunk of stream as unknown as AsyncIterable<Json>) {
      id = chunk.id;
      expect(chunk.model).toBe('anthropic/claude-t');
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('stop');
    expect(usage.prompt_tokens_details).toMatchObject({ cached_tokens: 2, cache_write_tokens: 1 });
    const tokens = tokensOf(usage);
    expect(usage.cost).toBe(toNumber(computeCost(claude, tokens)));
    const e = await eventOf(id);
    expect(e.streamed).toBe(true);
    expect(e.usage_source).toBe('provider');
    expect(e.cost).toBe(String(usage.cost));
    expect(e.upstream_id).toMatch(/^msg_/);
  });

  it('relays a tool call, not streamed and streamed', async () => {
    const r = (await client.chat.completions.create({
      model: 'anthropic/claude-t',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    })) as unknown as Json;
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    const call = r.choices[0].message.tool_calls[0];
    expect(call.function.name).toBe('get_weather');
    expect(typeof JSON.parse(call.function.arguments).city).toBe('string');

    const stream = await client.chat.completions.create({
      model: 'anthropic/claude-t',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      stream: true,
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual(JSON.parse(call.function.arguments));
    expect(finish).toBe('tool_calls');
  });

  it("without max_tokens the Messages request asks for no more than the model's max_output_tokens", async () => {
    const r = (await client.chat.completions.create({
      model: 'anthropic/claude-short',
      messages,
      sim: { completion_tokens: 50 },
    } as never)) as unknown as Json;
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage.completion_tokens).toBe(3);
  });

  it('an Anthropic stream error event becomes the §6 error chunk', async () => {
    const read = await readSse(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'anthropic/claude-t',
        messages,
        stream: true,
        sim: { error_after_chunks: 2 },
      }),
    });
    expect(read.status).toBe(200);
    expect(read.data.at(-1)).toBe('[DONE]');
    const err = read.chunks.find((ch: Json) => ch.error);
    expect(err.choices[0].finish_reason).toBe('error');
    expect(err.error.code).toBe(529);
    expect(err.error.metadata.provider_name).toBe('anth');
    const e = await eventOf(read.chunks[0].id);
    expect(e.error?.code).toBe(529);
  });

  it('fails over from an Anthropic provider answering 529 to an OpenAI-format provider', async () => {
    const before = paths.length;
    const r = (await client.chat.completions.create({
      model: 'anthropic/claude-or-openai',
      messages,
      sim: { error_status: 529 },
    } as never)) as unknown as Json;
    expect(paths.slice(before)).toEqual(['/v1/messages', '/v1/chat/completions']);
    expect(r.provider).toBe('oai');
    const e = await eventOf(r.id);
    expect(e.attempts?.map((a) => [a.provider, a.outcome])).toEqual([
      ['anth', 'http_529'],
      ['oai', 'ok'],
    ]);
    expect(e.cost).toBe(String(r.usage.cost));
  });

  it('a request the Messages API cannot express is a 400 before admission, or skips to an OpenAI candidate', async () => {
    const before = paths.length;
    const res = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude-only', messages, n: 2 }),
    });
    const body = (await res.json()) as Json;
    expect(res.status).toBe(400);
    expect(body.error.message).toMatch(/^n: /);
    expect(paths.length).toBe(before);

    // A `function`-role message has no Messages equivalent: the OpenAI-format candidate serves it.
    const start = paths.length;
    const r = (await client.chat.completions.create({
      model: 'anthropic/claude-or-openai',
      messages: [...messages, { role: 'function', name: 'lookup', content: 'nothing found' }],
    })) as unknown as Json;
    expect(paths.slice(start)).toEqual(['/v1/chat/completions']);
    expect(r.provider).toBe('oai');
  });
});
