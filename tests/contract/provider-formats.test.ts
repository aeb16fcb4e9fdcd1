/**
 * The adapter contract suite: one set of behaviours, run against every provider wire format
 * (openai, anthropic, gemini, azure, bedrock) through the whole stack (tests/support/stack.ts) with
 * the official `openai` client. The simulator stands for each provider and checks what the real
 * service checks (Gemini's key header, Azure's api-version and api-key, Bedrock's SigV4 signature over
 * the exact request), so a translation or signing mistake fails here. For each format:
 *   - a completion, not streamed and streamed, priced exactly from the provider's usage (cached tokens
 *     at the cache price), the generation record holding the same cost;
 *   - tools (a forced function call comes back as tool_calls, streamed and not);
 *   - images (a data: URI reaches the provider);
 *   - each error class → the right failover decision: the model's second provider is a plain OpenAI
 *     provider that never receives the `sim` faults, so a failover shows as an answer from it.
 */
import { type Catalog, type CatalogModel, computeCost, parseCatalog } from '@tollgate/catalog';
import { toDecimal } from '@tollgate/money';
import { SIM_AWS_CREDENTIALS } from '@tollgate/provider-sim';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, type Stack, startStack } from '../support/stack';

const SIM_KEY = 'sim-contract-key';
const FORMATS = ['openai', 'anthropic', 'gemini', 'azure', 'bedrock'] as const;
type Format = (typeof FORMATS)[number];

function contractCatalog(simUrl: string): Catalog {
  const model = (format: Format, upstream: string) => `
  - id: contract/${format}
    name: ${format} contract model
    context_length: 100000
    max_output_tokens: 2000
    created: 1
    providers: [{ provider: ${format}-sim, model: ${upstream} }, { provider: plain, model: gpt-4o-mini }]
    pricing: { prompt: "0.000001", completion: "0.000002", cache_read: "0.0000001", cache_write: "0.00000125" }`;
  return parseCatalog(
    `
providers:
  - { name: openai-sim, base_url: "${simUrl}/v1", api_key_env: SIM_KEY, simulator: true }
  - { name: anthropic-sim, base_url: "${simUrl}/v1", format: anthropic, api_key_env: SIM_KEY, simulator: true }
  - { name: gemini-sim, base_url: "${simUrl}/v1beta", format: gemini, api_key_env: SIM_KEY, simulator: true }
  - { name: azure-sim, base_url: "${simUrl}", format: azure, api_version: "2024-10-21", api_key_env: SIM_KEY, simulator: true }
  - { name: bedrock-sim, base_url: "${simUrl}", format: bedrock, region: us-east-1, simulator: true }
  - { name: gemini-badkey, base_url: "${simUrl}/v1beta", format: gemini, api_key_env: WRONG_KEY, simulator: true }
  - { name: azure-noversion, base_url: "${simUrl}", format: azure, api_version: "latest", api_key_env: SIM_KEY, simulator: true }
  - { name: bedrock-west, base_url: "${simUrl}", format: bedrock, region: us-west-2, simulator: true }
  - { name: plain, base_url: "${simUrl}/v1", api_key_env: SIM_KEY }
models:${model('openai', 'gpt-4o-mini')}${model('anthropic', 'claude-sonnet-4')}${model('gemini', 'gemini-2.5-flash')}${model('azure', 'gpt-4o-mini-deployment')}${model('bedrock', 'anthropic.claude-3-5-haiku-20241022-v1:0')}
  - id: contract/misconfigured
    name: every cloud provider misconfigured, then plain
    context_length: 100000
    created: 1
    providers:
      - { provider: gemini-badkey, model: gemini-2.5-flash }
      - { provider: azure-noversion, model: gpt-4o-mini }
      - { provider: bedrock-west, model: amazon.nova-lite-v1:0 }
      - { provider: plain, model: gpt-4o-mini }
    pricing: { prompt: "0.000001", completion: "0.000002" }
`,
    { env: { SIM_KEY, WRONG_KEY: 'not-the-key' } },
  );
}

let stack: Stack;
let client: OpenAI;
const requests: string[] = [];

beforeAll(async () => {
  // The proxy's Bedrock signer reads the standard AWS variables (the simulator's credentials).
  process.env.AWS_ACCESS_KEY_ID = SIM_AWS_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = SIM_AWS_CREDENTIALS.secretAccessKey;
  stack = await startStack({ catalog: contractCatalog, sim: { apiKey: SIM_KEY } });
  stack.services.sim.server.on('request', (req) => requests.push(`${req.method} ${req.url}`));
  client = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
});
afterAll(() => stack?.close());

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
// A 1×1 PNG.
const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

type Usage = OpenAI.CompletionUsage & { cost: number };

/** The exact cost of the usage the client was given, at the model's catalog prices. */
function expectedCost(model: CatalogModel, u: Usage): string {
  return toDecimal(
    computeCost(model, {
      prompt: u.prompt_tokens,
      completion: u.completion_tokens,
      cached: u.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWrite:
        (u.prompt_tokens_details as { cache_write_tokens?: number } | undefined)?.cache_write_tokens ?? 0,
    }),
  );
}

async function expectRecorded(id: string, cost: string, provider: string): Promise<void> {
  const r = await stack.waitForGeneration(id);
  expect(r.status, describeResponse(r)).toBe(200);
  expect(r.body.data.provider_name).toBe(provider);
  expect(r.body.data.total_cost).toBe(Number(cost));
}

describe.each(FORMATS)('provider format %s', (format) => {
  const modelId = `contract/${format}`;
  const provider = `${format}-sim`;
  const catalogModel = () => stack.catalog.model(modelId) as CatalogModel;
  const messages = [
    { role: 'system' as const, content: 'Be brief.' },
    { role: 'user' as const, content: `Say hello over ${format}.` },
  ];

  it('answers a completion priced exactly from the provider usage (cached tokens at the cache price)', async () => {
    const r = (await client.chat.completions.create({
      model: modelId,
      messages,
      max_tokens: 30,
      sim: { cached_tokens: 4 },
    } as never)) as unknown as OpenAI.ChatCompletion & { provider: string; usage: Usage };
    expect(r.provider).toBe(provider);
    expect(r.model).toBe(modelId);
    expect(r.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(r.choices[0]?.finish_reason);
    expect(r.usage.prompt_tokens_details?.cached_tokens).toBe(4);
    expect(r.usage.prompt_tokens).toBeGreaterThan(4);
    const cost = expectedCost(catalogModel(), r.usage);
    expect(r.usage.cost).toBe(Number(cost));
    await expectRecorded(r.id, cost, provider);
  });

  it('streams content, the finish and a usage chunk priced exactly', async () => {
    const stream = await client.chat.completions.create({
      model: modelId,
      messages,
      max_tokens: 30,
      stream: true,
      sim: { cached_tokens: 2, reasoning_tokens: format === 'gemini' ? 3 : 0 },
    } as never);
    let text = '';
    let finish: string | null = null;
    let usage: Usage | undefined;
    let id = '';
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      id = chunk.id;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage as Usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(finish);
    expect(usage, 'usage chunk').toBeDefined();
    const u = usage as Usage;
    expect(u.prompt_tokens_details?.cached_tokens).toBe(2);
    if (format === 'gemini') expect(u.completion_tokens_details?.reasoning_tokens).toBe(3);
    const cost = expectedCost(catalogModel(), u);
    expect(u.cost).toBe(Number(cost));
    await expectRecorded(id, cost, provider);
  });

  it('calls a forced tool (not streamed and streamed)', async () => {
    const body = {
      model: modelId,
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
      max_tokens: 100,
    };
    const r = await client.chat.completions.create(body);
    const call = r.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(typeof JSON.parse(call.function.arguments).city).toBe('string');
    expect(r.choices[0]?.finish_reason).toBe('tool_calls');

    const stream = await client.chat.completions.create({ ...body, stream: true });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(typeof JSON.parse(args).city).toBe('string');
    expect(finish).toBe('tool_calls');
  });

  it('answers a tool result turn with text', async () => {
    const r = await client.chat.completions.create({
      model: modelId,
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny, 21 °C' },
      ],
      max_tokens: 30,
    });
    expect(r.choices[0]?.message.content?.length).toBeGreaterThan(0);
  });

  it('sends an image (data: URI) to the provider', async () => {
    const plain = await client.chat.completions.create({
      model: modelId,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }] }],
      max_tokens: 10,
    });
    const withImage = await client.chat.completions.create({
      model: modelId,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: PIXEL } },
          ],
        },
      ],
      max_tokens: 10,
    });
    // The simulator counts an image it received (85 tokens in every mode).
    expect((withImage.usage?.prompt_tokens ?? 0) - (plain.usage?.prompt_tokens ?? 0)).toBeGreaterThanOrEqual(
      80,
    );
  });

  it('is reached by every front door: Messages and Responses, streamed and not', async () => {
    const key = stack.inferenceKey;
    const message = await stack.api('/messages', {
      key,
      body: { model: modelId, max_tokens: 30, messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(message.status, describeResponse(message)).toBe(200);
    expect(message.body.type).toBe('message');
    expect(message.body.content[0].text.length).toBeGreaterThan(0);
    expect(message.body.usage.input_tokens).toBeGreaterThan(0);
    const messageStream = await stack.api('/messages', {
      key,
      body: { model: modelId, max_tokens: 30, stream: true, messages: [{ role: 'user', content: 'Hi' }] },
    });
    expect(messageStream.status).toBe(200);
    expect(messageStream.text).toContain('event: message_stop');
    const response = await stack.api('/responses', {
      key,
      body: { model: modelId, input: 'Hi', max_output_tokens: 30 },
    });
    expect(response.status, describeResponse(response)).toBe(200);
    expect(response.body.object).toBe('response');
    expect(response.body.output_text ?? JSON.stringify(response.body.output)).toBeTruthy();
    expect(response.body.usage.input_tokens).toBeGreaterThan(0);
    const responseStream = await stack.api('/responses', {
      key,
      body: { model: modelId, input: 'Hi', max_output_tokens: 30, stream: true },
    });
    expect(responseStream.status).toBe(200);
    expect(responseStream.text).toContain('response.completed');
    for (const r of [message, response]) {
      const id = r.headers.get('x-generation-id') as string;
      const record = await stack.waitForGeneration(id);
      expect(record.body.data.provider_name).toBe(provider);
    }
  });

  it('a stream error after the first byte ends with the error chunk (no failover)', async () => {
    const res = await stack.api('/chat/completions', {
      key: stack.inferenceKey,
      body: { model: modelId, messages, max_tokens: 30, stream: true, sim: { error_after_chunks: 2 } },
    });
    expect(res.status).toBe(200);
    expect(res.text).toContain('"error"');
    expect(res.text).not.toContain('"provider":"plain"');
  });
  it.each([
    // The caller's mistake first: the failures after it may open the provider's circuit.
    [400, false],
    [429, true],
    [500, true],
    [503, true],
    [401, true],
    [403, true],
  ])('an HTTP %i from the provider fails over: %s', async (status, failsOver) => {
    const res = await stack.api('/chat/completions', {
      key: stack.inferenceKey,
      body: { model: modelId, messages, max_tokens: 5, sim: { error_status: status } },
    });
    if (failsOver) {
      expect(res.status, describeResponse(res)).toBe(200);
      expect(res.body.provider).toBe('plain');
    } else {
      expect(res.status, `${res.body?.provider} ${describeResponse(res)}`).toBe(400);
      expect(res.body.error.metadata.provider_name).toBe(provider);
    }
  });
});

describe('cloud credentials the provider checks', () => {
  it('a wrong Gemini key, an Azure api-version the service refuses, a SigV4 scope of another region: each fails over', async () => {
    const before = requests.length;
    const res = await stack.api('/chat/completions', {
      key: stack.inferenceKey,
      body: { model: 'contract/misconfigured', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 },
    });
    expect(res.status, describeResponse(res)).toBe(200);
    expect(res.body.provider).toBe('plain');
    const tried = requests.slice(before);
    expect(tried[0]).toMatch(/^POST \/v1beta\/models\/gemini-2\.5-flash:generateContent$/);
    expect(tried[1]).toMatch(
      /^POST \/openai\/deployments\/gpt-4o-mini\/chat\/completions\?api-version=latest$/,
    );
    expect(tried[2]).toMatch(/^POST \/model\/amazon\.nova-lite-v1%3A0\/converse$/);
    expect(tried[3]).toBe('POST /v1/chat/completions');
    const record = await stack.waitForGeneration(res.body.id);
    const attempts = record.body.data.attempts as Array<{ provider: string; status: number | null }>;
    expect(attempts.map((a) => [a.provider, a.status])).toEqual([
      ['gemini-badkey', 400],
      ['azure-noversion', 404],
      ['bedrock-west', 403],
      ['plain', 200],
    ]);
  });
});
