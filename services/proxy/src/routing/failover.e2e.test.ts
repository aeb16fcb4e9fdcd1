import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { type Catalog, computeCost, parseCatalog } from '@tollgate/catalog';
import type { UsageEventV1 } from '@tollgate/events';
import { toNumber } from '@tollgate/money';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from '../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../test/stack';
import { OPENAI_CHAT_FIELDS } from '../providers/openai/request';

// Failover through the real proxy: the provider simulator is the healthy provider; small HTTP
// servers play a provider that is down, failing, rate limiting, rejecting our key, hanging, or
// rejecting unknown arguments the way OpenAI does.

interface FakeProvider {
  url: string;
  requests: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

async function fakeProvider(
  answer: (body: Record<string, unknown>, res: ServerResponse) => void,
): Promise<FakeProvider> {
  const requests: Array<Record<string, unknown>> = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      requests.push(body);
      answer(body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const status =
  (code: number, headers: Record<string, string> = {}) =>
  (_b: unknown, res: ServerResponse) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message: `upstream says ${code} for org-secret123`, type: 'x' } }));
  };

/** Answers like OpenAI: 400 for any argument it does not know, else a small completion. */
const strictOpenAI = (body: Record<string, unknown>, res: ServerResponse) => {
  const unknown = Object.keys(body).find((k) => !OPENAI_CHAT_FIELDS.has(k));
  res.writeHead(unknown ? 400 : 200, { 'content-type': 'application/json' });
  if (unknown) {
    res.end(
      JSON.stringify({
        error: {
          message: `Unrecognized request argument supplied: ${unknown}`,
          type: 'invalid_request_error',
        },
      }),
    );
    return;
  }
  res.end(
    JSON.stringify({
      id: 'chatcmpl-strict',
      object: 'chat.completion',
      created: 1,
      model: String(body.model),
      choices: [{ index: 0, message: { role: 'assistant', content: 'strict ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    }),
  );
};

let sim: ProviderSim;
let simRequests = 0;
let catalog: Catalog;
let stack: ProxyStack;
const fakes: Record<string, FakeProvider> = {};
let closedPort: number;

const catalogYaml = (urls: Record<string, string>) => `
providers:
  - { name: down, base_url: "${urls.down}" }
  - { name: broken, base_url: "${urls.broken}" }
  - { name: limited, base_url: "${urls.limited}" }
  - { name: badkey, base_url: "${urls.badkey}" }
  - { name: hanging, base_url: "${urls.hanging}" }
  - { name: refuses, base_url: "${urls.refuses}" }
  - { name: strict, base_url: "${urls.strict}" }
  - { name: unpaid, base_url: "${urls.unpaid}" }
  - { name: anthro-billing, base_url: "${urls.anthroBilling}", format: anthropic }
  - { name: anthro-invalid, base_url: "${urls.anthroInvalid}", format: anthropic }
  - { name: sim, base_url: "${urls.sim}", simulator: true }
  - { name: sim2, base_url: "${urls.sim}", simulator: true }
models:
${[
  ['t/down-sim', 'down', 'sim'],
  ['t/broken-sim', 'broken', 'sim'],
  ['t/limited-sim', 'limited', 'sim'],
  ['t/badkey-sim', 'badkey', 'sim'],
  ['t/hanging-sim', 'hanging', 'sim'],
  ['t/refuses-sim', 'refuses', 'sim'],
  ['t/limited', 'limited'],
  ['t/broken', 'broken'],
  ['t/strict', 'strict'],
  ['t/sim-sim2', 'sim', 'sim2'],
  ['t/unpaid-sim', 'unpaid', 'sim'],
  ['t/anthro-billing-sim', 'anthro-billing', 'sim'],
  ['t/anthro-invalid-sim', 'anthro-invalid', 'sim'],
]
  .map(
    ([id, ...providers]) => `  - id: ${id}
    name: ${id}
    context_length: 8000
    max_output_tokens: 100
    created: 1
    providers: [${providers.map((p) => `{ provider: ${p}, model: gpt-4o-mini }`).join(', ')}]
    pricing: { prompt: "0.000001", completion: "0.000002" }`,
  )
  .join('\n')}
  - id: t/dear
    name: dear
    context_length: 8000
    max_output_tokens: 100
    created: 1
    providers: [{ provider: broken, model: gpt-4o }]
    pricing: { prompt: "0.00001", completion: "0.00003" }
  - id: t/cheap
    name: cheap
    context_length: 8000
    max_output_tokens: 100
    created: 1
    providers: [{ provider: sim, model: gpt-4o-mini }]
    pricing: { prompt: "0.0000001", completion: "0.0000002" }
`;

beforeAll(async () => {
  sim = await startProviderSim();
  sim.server.on('request', () => simRequests++);
  fakes.broken = await fakeProvider(status(500));
  fakes.limited = await fakeProvider(status(429, { 'retry-after': '7' }));
  fakes.badkey = await fakeProvider(status(401));
  fakes.refuses = await fakeProvider(status(400));
  fakes.strict = await fakeProvider(strictOpenAI);
  fakes.unpaid = await fakeProvider(status(402));
  const anthropicError = (type: string) => (_b: unknown, res: ServerResponse) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type, message: `${type} for org-secret123` } }));
  };
  fakes.anthroBilling = await fakeProvider(anthropicError('billing_error'));
  fakes.anthroInvalid = await fakeProvider(anthropicError('invalid_request_error'));
  fakes.hanging = await fakeProvider(() => {}); // never answers
  const closed = await fakeProvider(status(200));
  closedPort = Number(new URL(closed.url).port);
  await closed.close(); // nothing listens there any more: connection refused
  catalog = parseCatalog(
    catalogYaml({
      down: `http://127.0.0.1:${closedPort}/v1`,
      broken: fakes.broken.url,
      limited: fakes.limited.url,
      badkey: fakes.badkey.url,
      hanging: fakes.hanging.url,
      refuses: fakes.refuses.url,
      strict: fakes.strict.url,
      unpaid: fakes.unpaid.url,
      anthroBilling: fakes.anthroBilling.url,
      anthroInvalid: fakes.anthroInvalid.url,
      sim: sim.baseUrl,
    }),
    { env: {} },
  );
  stack = await startProxyStack({
    env: { UPSTREAM_TIMEOUT_MS: '400', SERVER_SOCKET_TIMEOUT_MS: '60000', CIRCUIT_FAILURE_THRESHOLD: '1000' },
    deps: { catalog },
  });
});
afterAll(async () => {
  await stack?.close();
  await sim?.close();
  for (const f of Object.values(fakes)) await f.close();
});

const messages = [{ role: 'user', content: 'Route me somewhere healthy.' }];
// biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary JSON
type Json = Record<string, any>;

async function chat(body: Record<string, unknown>): Promise<{ res: Response; json: Json }> {
  const res = await fetch(`${stack.api}/chat/completions`, {
    method: 'POST',
    headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
    body: JSON.stringify({ messages, ...body }),
  });
  return { res, json: (await res.json()) as Json };
}

const eventOf = (id: string): Promise<UsageEventV1> => stack.waitForEvent(id);

describe('failover before the first byte', () => {
  it.each([
    ['connection refused', 't/down-sim', 'unreachable'],
    ['HTTP 500', 't/broken-sim', 'http_500'],
    ['HTTP 429', 't/limited-sim', 'http_429'],
    ['HTTP 401 (our key is bad)', 't/badkey-sim', 'http_401'],
    ['timeout before headers', 't/hanging-sim', 'timeout'],
    ['HTTP 402 (our provider account is out of credit)', 't/unpaid-sim', 'http_402'],
    ["Anthropic's 400 billing_error (credit balance too low)", 't/anthro-billing-sim', 'http_400'],
  ])('%s moves to the next provider; only the serving attempt is billed', async (_name, model, outcome) => {
    const { res, json } = await chat({ model });
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.provider).toBe('sim');
    expect(json.model).toBe(model);
    const e = await eventOf(json.id);
    expect(e.provider_name).toBe('sim');
    expect(e.cost).toBe(String(json.usage.cost));
    expect(e.attempts?.map((a) => [a.provider, a.outcome])).toEqual([
      [e.attempts?.[0]?.provider, outcome],
      ['sim', 'ok'],
    ]);
    expect(stack.events.filter((x) => x.id === json.id)).toHaveLength(1);
  });

  it('streams through a failover unchanged: chunks, usage with the serving provider, [DONE]', async () => {
    const read = await readSse(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 't/broken-sim', messages, stream: true }),
    });
    expect(read.status).toBe(200);
    expect(read.data.at(-1)).toBe('[DONE]');
    const usage = read.chunks.at(-1) as Json;
    expect(usage.provider).toBe('sim');
    expect(usage.usage.cost).toBeGreaterThan(0);
    const e = await eventOf(usage.id);
    expect(e.attempts?.map((a) => a.outcome)).toEqual(['http_500', 'ok']);
  });

  it("does not fail over on the caller's own 400: the provider's refusal is the answer", async () => {
    const before = simRequests;
    const { res, json } = await chat({ model: 't/refuses-sim' });
    expect(res.status).toBe(400);
    expect(json.error.metadata.provider_name).toBe('refuses');
    expect(JSON.stringify(json)).not.toContain('org-secret123');
    expect(simRequests).toBe(before);
  });

  it("does not fail over on Anthropic's 400 invalid_request_error, streamed or not", async () => {
    const before = simRequests;
    const { res, json } = await chat({ model: 't/anthro-invalid-sim' });
    expect(res.status).toBe(400);
    expect(json.error.metadata.provider_name).toBe('anthro-invalid');
    expect(JSON.stringify(json)).not.toContain('org-secret123');
    const streamed = await fetch(`${stack.api}/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(stack.inference), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 't/anthro-invalid-sim', messages, stream: true }),
    });
    expect(streamed.status).toBe(400);
    await streamed.body?.cancel();
    expect(simRequests).toBe(before);
  });

  it('passes the last 429 and its Retry-After to the client when every provider failed', async () => {
    const { res, json } = await chat({ model: 't/limited' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(json.error.metadata.error_type).toBe('provider_error');
  });

  it('answers 502 when every candidate failed, and bills nothing', async () => {
    const { res, json } = await chat({ model: 't/broken' });
    expect(res.status).toBe(502);
    expect(json.error.metadata.provider_name).toBe('broken');
  });
});

describe('OpenRouter routing fields', () => {
  it("models: falls back to the next model, billed at the serving model's prices", async () => {
    const { res, json } = await chat({ model: 't/dear', models: ['t/cheap'] });
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.model).toBe('t/cheap');
    const e = await eventOf(json.id);
    expect(e.model).toBe('t/cheap');
    const cheap = catalog.model('t/cheap')!;
    const tokens = { prompt: json.usage.prompt_tokens, completion: json.usage.completion_tokens };
    expect(json.usage.cost).toBe(toNumber(computeCost(cheap, tokens)));
  });

  it('provider.allow_fallbacks=false: the first candidate failure is the answer', async () => {
    const { res } = await chat({ model: 't/broken-sim', provider: { allow_fallbacks: false } });
    expect(res.status).toBe(502);
  });

  it('provider.order, only and ignore choose and order the providers', async () => {
    const ordered = await chat({ model: 't/sim-sim2', provider: { order: ['sim2'] } });
    expect(ordered.json.provider).toBe('sim2');
    const only = await chat({ model: 't/broken-sim', provider: { only: ['sim'] } });
    expect(only.json.provider).toBe('sim');
    expect((await eventOf(only.json.id)).attempts).toHaveLength(1);
    const ignored = await chat({ model: 't/sim-sim2', provider: { ignore: ['sim'] } });
    expect(ignored.json.provider).toBe('sim2');
    const none = await chat({ model: 't/sim-sim2', provider: { only: ['nobody'] } });
    expect(none.res.status).toBe(400);
    expect(none.json.error.message).toMatch(/provider\.only/);
  });

  it('provider.sort=price and max_price (USD per million tokens)', async () => {
    const sorted = await chat({ model: 't/dear', models: ['t/cheap'], provider: { sort: 'price' } });
    expect(sorted.json.model).toBe('t/cheap');
    expect((await eventOf(sorted.json.id)).attempts).toHaveLength(1); // the cheap one first, no failure
    const capped = await chat({
      model: 't/dear',
      models: ['t/cheap'],
      provider: { max_price: { prompt: 1 } },
    });
    expect(capped.json.model).toBe('t/cheap');
    const nothing = await chat({ model: 't/dear', provider: { max_price: { completion: 0.5 } } });
    expect(nothing.res.status).toBe(400);
    expect(nothing.json.error.message).toMatch(/max_price/);
  });

  it.each([
    [{ models: 'x' }, 'models'],
    [{ models: ['no/such'] }, 'models[0]'],
    [{ provider: [] }, 'provider'],
    [{ provider: { order: [1] } }, 'provider.order'],
    [{ provider: { allow_fallbacks: 'no' } }, 'provider.allow_fallbacks'],
    [{ provider: { sort: 'speed' } }, 'provider.sort'],
    [{ provider: { max_price: { prompt: -1 } } }, 'provider.max_price.prompt'],
  ])('rejects %j with 400 naming %s', async (fields, field) => {
    const { res, json } = await chat({ model: 't/sim-sim2', ...fields });
    expect(res.status).toBe(400);
    expect(json.error.message.startsWith(`${field}:`)).toBe(true);
  });

  it('never forwards OpenRouter-only fields: an upstream that rejects unknown arguments like OpenAI answers', async () => {
    const { res, json } = await chat({
      model: 't/strict',
      models: ['t/strict'],
      provider: { sort: 'price' },
      usage: { include: true },
      transforms: ['middle-out'],
      route: 'fallback',
      plugins: [],
      store: true,
      service_tier: 'priority',
    });
    expect(res.status, JSON.stringify(json)).toBe(200);
    expect(json.choices[0].message.content).toBe('strict ok');
    expect(Object.keys(fakes.strict!.requests.at(-1)!).sort()).toEqual(['messages', 'model']);
  });
});

describe('real clients through a failover', () => {
  it('the openai client and the Vercel AI SDK get answers unchanged', async () => {
    const openai = new OpenAI({ apiKey: stack.inference.key, baseURL: stack.api, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: 't/down-sim',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const provider = createOpenAICompatible({
      name: 'tollgate',
      baseURL: stack.api,
      apiKey: stack.inference.key,
    });
    const { text } = await generateText({ model: provider('t/broken-sim'), prompt: 'hi', maxRetries: 0 });
    expect(text.length).toBeGreaterThan(0);
  });
});
