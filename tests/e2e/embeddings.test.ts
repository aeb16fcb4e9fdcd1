/**
 * POST /embeddings through the whole stack with real clients: the `openai` SDK (string, list, token
 * arrays, base64 — the SDK's default, decoded by it — and `dimensions`), LangChain's OpenAIEmbeddings
 * and the AI SDK's embed/embedMany; each provider format's embeddings endpoint (OpenAI, Azure, Gemini
 * batchEmbedContents, Bedrock Titan and Cohere InvokeModel, SigV4-checked by the simulator); limits
 * (inputs, tokens per input and per request, dimensions) as 400/413 naming the limit; the key's
 * limit, allowed_models and credits; failover to the second provider; the generation record with the
 * exact cost; GET /models filtering by output_modalities.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { OpenAIEmbeddings } from '@langchain/openai';
import { type Catalog, parseCatalog } from '@tollgate/catalog';
import { toDecimal, toUnits } from '@tollgate/money';
import { SIM_AWS_CREDENTIALS } from '@tollgate/provider-sim';
import { embed, embedMany } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, type Stack, startStack } from '../support/stack';

const SIM_KEY = 'sim-embeddings-key';
const PRICE = '0.00000002';

function catalog(simUrl: string): Catalog {
  const emb = (
    id: string,
    providers: string,
    limits = '{ dimensions: 1536, custom_dimensions: true, max_inputs: 8, max_tokens_per_request: 400 }',
    ctx = 100,
  ) => `
  - id: ${id}
    name: ${id}
    context_length: ${ctx}
    created: 1
    output_modalities: [embeddings]
    embeddings: ${limits}
    providers: ${providers}
    pricing: { prompt: "${PRICE}" }`;
  return parseCatalog(
    `
providers:
  - { name: oai, base_url: "${simUrl}/v1", api_key_env: SIM_KEY, simulator: true }
  - { name: backup, base_url: "${simUrl}/v1", api_key_env: SIM_KEY }
  - { name: az, base_url: "${simUrl}", format: azure, api_version: "2024-10-21", api_key_env: SIM_KEY, simulator: true }
  - { name: gem, base_url: "${simUrl}/v1beta", format: gemini, api_key_env: SIM_KEY, simulator: true }
  - { name: br, base_url: "${simUrl}", format: bedrock, region: us-east-1, simulator: true }
models:${emb('openai/text-embedding-3-small', '[{ provider: oai, model: text-embedding-3-small }, { provider: backup, model: text-embedding-3-small }]')}${emb('azure/embed', '[{ provider: az, model: embed-deployment }]')}${emb('google/gemini-embedding', '[{ provider: gem, model: gemini-embedding-001 }]', '{ dimensions: 768, custom_dimensions: true, max_inputs: 8, max_tokens_per_request: 400 }')}${emb('amazon/titan-embed', '[{ provider: br, model: amazon.titan-embed-text-v2:0 }]', '{ dimensions: 1024, custom_dimensions: true, max_inputs: 1, max_tokens_per_request: 100 }')}${emb('cohere/embed', '[{ provider: br, model: cohere.embed-english-v3 }]', '{ dimensions: 1024, max_inputs: 8, max_tokens_per_request: 400 }')}
  - id: openai/gpt-4o-mini
    name: chat
    context_length: 1000
    created: 1
    providers: [{ provider: oai, model: gpt-4o-mini }]
    pricing: { prompt: "0.000001", completion: "0.000002" }
`,
    { env: { SIM_KEY } },
  );
}

let stack: Stack;
let client: OpenAI;
const MODEL = 'openai/text-embedding-3-small';

beforeAll(async () => {
  process.env.AWS_ACCESS_KEY_ID = SIM_AWS_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = SIM_AWS_CREDENTIALS.secretAccessKey;
  stack = await startStack({ catalog, sim: { apiKey: SIM_KEY } });
  client = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
});
afterAll(() => stack?.close());

const costOf = (tokens: number) => Number(toDecimal(BigInt(tokens) * toUnits(PRICE)));
type Usage = { prompt_tokens: number; total_tokens: number; cost: number };

describe('POST /embeddings with the openai SDK', () => {
  it('embeds a string (floats) with usage, exact cost and one generation record', async () => {
    const r = await client.embeddings.create({
      model: MODEL,
      input: 'hello gateway',
      encoding_format: 'float',
    });
    expect(r.object).toBe('list');
    expect(r.data).toHaveLength(1);
    expect(r.data[0]?.embedding).toHaveLength(1536);
    const usage = r.usage as Usage;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens);
    expect(usage.cost).toBe(costOf(usage.prompt_tokens));
    const id = (r as unknown as { id: string }).id;
    const record = await stack.waitForGeneration(id);
    expect(record.body.data).toMatchObject({
      model: MODEL,
      provider_name: 'oai',
      tokens_prompt: usage.prompt_tokens,
      tokens_completion: 0,
      total_cost: costOf(usage.prompt_tokens),
      api_type: 'embeddings',
    });
  });

  it('answers a list in input order; base64 (the SDK default) decodes to the same vectors as floats', async () => {
    const input = ['first text', 'second, longer text', 'third'];
    const floats = await client.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
    const decoded = await client.embeddings.create({ model: MODEL, input });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1, 2]);
    for (let i = 0; i < input.length; i++) {
      const single = await client.embeddings.create({
        model: MODEL,
        input: input[i] as string,
        encoding_format: 'float',
      });
      expect(floats.data[i]?.embedding).toEqual(single.data[0]?.embedding);
      expect(decoded.data[i]?.embedding).toEqual(floats.data[i]?.embedding);
    }
    const raw = await stack.api('/embeddings', {
      key: stack.inferenceKey,
      body: { model: MODEL, input: 'x', encoding_format: 'base64' },
    });
    expect(typeof raw.body.data[0].embedding).toBe('string');
  });

  it('takes token arrays and honours dimensions', async () => {
    const r = await client.embeddings.create({
      model: MODEL,
      input: [
        [1, 2, 3],
        [4, 5],
      ],
      dimensions: 64,
      encoding_format: 'float',
    });
    expect(r.data.map((d) => d.embedding.length)).toEqual([64, 64]);
    expect(r.usage.prompt_tokens).toBe(5);
  });

  it('a provider reporting 0 prompt tokens is billed the exact count of the input, as estimated', async () => {
    const res = await stack.api('/embeddings', {
      key: stack.inferenceKey,
      body: { model: MODEL, input: [[1, 2, 3, 4, 5, 6, 7]], sim: { prompt_tokens: 0 } },
    });
    expect(res.status).toBe(200);
    expect(res.body.usage.prompt_tokens).toBe(7);
    expect(res.body.usage.cost).toBe(costOf(7));
    const record = await stack.waitForGeneration(res.body.id);
    expect(record.body.data).toMatchObject({
      tokens_prompt: 7,
      total_cost: costOf(7),
      usage_source: 'estimated',
    });
  });

  it('fails over to the second provider before the first byte', async () => {
    const res = await stack.api('/embeddings', {
      key: stack.inferenceKey,
      body: { model: MODEL, input: 'fail over', sim: { error_status: 503 } },
    });
    expect(res.status, describeResponse(res)).toBe(200);
    expect(res.body.provider).toBe('backup');
    const record = await stack.waitForGeneration(res.body.id);
    expect(record.body.data.attempts.map((a: { provider: string }) => a.provider)).toEqual(['oai', 'backup']);
  });
});

describe('limits', () => {
  const post = (body: Record<string, unknown>, key = stack.inferenceKey) =>
    stack.api('/embeddings', { key, body });

  it('refuses too many inputs, a long input, too many tokens and dimensions it cannot give, naming the limit', async () => {
    const many = await post({ model: MODEL, input: Array.from({ length: 9 }, () => 'a') });
    expect(many.status).toBe(400);
    expect(many.body.error.message).toContain('max_inputs');
    const long = await post({ model: MODEL, input: ['ok', 'word '.repeat(150)] });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/input\[1\].*context_length/);
    const total = await post({ model: MODEL, input: Array.from({ length: 8 }, () => 'word '.repeat(60)) });
    expect(total.status, describeResponse(total)).toBe(413);
    expect(total.body.error.message).toContain('max_tokens_per_request');
    const dims = await post({ model: MODEL, input: 'x', dimensions: 4096 });
    expect(dims.status).toBe(400);
    expect(dims.body.error.message).toContain('dimensions');
    const cohere = await post({ model: 'cohere/embed', input: 'x', dimensions: 8 });
    expect(cohere.status).toBe(400);
  });

  it('refuses bad input shapes, a chat model here and an embeddings model on chat', async () => {
    for (const input of ['', [], [1, 'a'], [[]], 5]) {
      const r = await post({ model: MODEL, input });
      expect(r.status, JSON.stringify(input)).toBe(400);
    }
    const chat = await post({ model: 'openai/gpt-4o-mini', input: 'x' });
    expect(chat.status).toBe(400);
    expect(chat.body.error.message).toContain('not an embeddings model');
    const reverse = await stack.api('/chat/completions', {
      key: stack.inferenceKey,
      body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(reverse.status).toBe(400);
    expect(reverse.body.error.message).toContain('POST /embeddings');
  });

  it("holds the key's allowed_models and spend limit, and the account's credits", async () => {
    const { key: chatOnly } = await stack.createInferenceKey(stack.account.managementKey, {
      allowed_models: ['openai/gpt-4o-mini'],
    });
    expect((await post({ model: MODEL, input: 'x' }, chatOnly)).status).toBe(403);
    const { key: tiny } = await stack.createInferenceKey(stack.account.managementKey, {
      limit: 0.0000001,
      limit_reset: 'daily',
    });
    const limited = await post({ model: MODEL, input: 'word '.repeat(80) }, tiny);
    expect(limited.status, describeResponse(limited)).toBe(403);
    expect(limited.body.error.metadata.error_type).toBe('key_limit_exceeded');
    const broke = await stack.createAccount();
    const { key: poor } = await stack.createInferenceKey(broke.managementKey);
    expect((await post({ model: MODEL, input: 'x' }, poor)).status).toBe(402);
  });
});

describe('every provider format', () => {
  it.each([
    ['azure/embed', 'az', 1536],
    ['google/gemini-embedding', 'gem', 768],
    ['amazon/titan-embed', 'br', 1024],
    ['cohere/embed', 'br', 1024],
  ])('%s answers through %s with %i dimensions, priced exactly', async (model, provider, dims) => {
    const input = model === 'amazon/titan-embed' ? ['only one'] : ['one', 'two'];
    const res = await stack.api('/embeddings', { key: stack.inferenceKey, body: { model, input } });
    expect(res.status, describeResponse(res)).toBe(200);
    expect(res.body.provider).toBe(provider);
    expect(res.body.data.map((d: { embedding: number[] }) => d.embedding.length)).toEqual(
      input.map(() => dims),
    );
    expect(res.body.usage.cost).toBe(costOf(res.body.usage.prompt_tokens));
    const record = await stack.waitForGeneration(res.body.id);
    expect(record.body.data.total_cost).toBe(costOf(res.body.usage.prompt_tokens));
  });

  it('Gemini and Bedrock take text: token arrays are a 400', async () => {
    const r = await stack.api('/embeddings', {
      key: stack.inferenceKey,
      body: { model: 'google/gemini-embedding', input: [[1, 2]] },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('token arrays');
  });
});

describe('clients', () => {
  it("LangChain's OpenAIEmbeddings embeds documents and a query", async () => {
    const emb = new OpenAIEmbeddings({
      model: MODEL,
      apiKey: stack.inferenceKey,
      configuration: { baseURL: stack.baseUrl },
      maxRetries: 0,
    });
    const docs = await emb.embedDocuments(['alpha', 'beta']);
    expect(docs.map((d) => d.length)).toEqual([1536, 1536]);
    const query = await emb.embedQuery('alpha');
    expect(query).toEqual(docs[0]);
  });

  it("the AI SDK's embed and embedMany", async () => {
    const provider = createOpenAICompatible({
      name: 'tollgate',
      baseURL: stack.baseUrl,
      apiKey: stack.inferenceKey,
    });
    const one = await embed({ model: provider.textEmbeddingModel(MODEL), value: 'alpha', maxRetries: 0 });
    expect(one.embedding).toHaveLength(1536);
    expect(one.usage.tokens).toBeGreaterThan(0);
    const many = await embedMany({
      model: provider.textEmbeddingModel(MODEL),
      values: ['alpha', 'beta', 'gamma'],
      maxRetries: 0,
    });
    expect(many.embeddings).toHaveLength(3);
    expect(many.embeddings[0]).toEqual(one.embedding);
  });
});

describe('GET /models', () => {
  it('lists embedding models and filters by output_modalities', async () => {
    const all = await stack.api('/models', { key: stack.inferenceKey });
    expect(all.body.data.map((m: { id: string }) => m.id)).toEqual(
      expect.arrayContaining([MODEL, 'openai/gpt-4o-mini']),
    );
    const emb = await stack.api('/models?output_modalities=embeddings', { key: stack.inferenceKey });
    const ids = emb.body.data.map((m: { id: string }) => m.id);
    expect(ids).toContain(MODEL);
    expect(ids).not.toContain('openai/gpt-4o-mini');
    expect(emb.body.data[0].architecture).toMatchObject({
      modality: 'text->embeddings',
      output_modalities: ['embeddings'],
    });
    const text = await stack.api('/models?output_modalities=text', { key: stack.inferenceKey });
    expect(text.body.data.map((m: { id: string }) => m.id)).toEqual(['openai/gpt-4o-mini']);
    expect((await stack.api('/models?output_modalities=audio', { key: stack.inferenceKey })).status).toBe(
      400,
    );
  });
});
