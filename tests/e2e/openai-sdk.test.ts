/**
 * The official `openai` npm client against the whole stack (in-process services, real Postgres,
 * Redis, RabbitMQ): only the base URL and the key change, as the spec promises.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let client: OpenAI;

beforeAll(async () => {
  stack = await startStack();
  client = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
});
afterAll(() => stack?.close());

async function expectApiError(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(OpenAI.APIError);
    return err as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('expected the client to throw an APIError');
}

describe('openai npm client', () => {
  it('completes a chat and reports cost and cached tokens in usage', async () => {
    const { data: completion, response } = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 12 })
      .withResponse();
    expect(completion.id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    expect(response.headers.get('x-generation-id')).toBe(completion.id);
    expect(completion.choices[0]?.message.content).toEqual(expect.any(String));
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const usage = completion.usage as OpenAI.CompletionUsage & { cost: number; is_byok: boolean };
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.cost).toBeGreaterThan(0);
    expect(usage.is_byok).toBe(false);
    expect(usage.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it('works under the /v1 alias too (clients that append /v1 themselves)', async () => {
    const alias = new OpenAI({ baseURL: stack.aliasUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
    const completion = await alias.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
    });
    expect(completion.choices[0]?.finish_reason).toMatch(/stop|length/);
  });

  it('streams content chunks and a final usage chunk with the cost', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Count to five' }],
      stream: true,
      max_tokens: 20,
    });
    let text = '';
    let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
    const ids = new Set<string>();
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toMatch(/stop|length/);
    expect(ids.size).toBe(1);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.cost).toBeGreaterThan(0);
  });

  it('surfaces a mid-stream provider failure to the caller', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Fail midway' }],
      stream: true,
      // @ts-expect-error simulator fault injection, passed through by the gateway
      sim: { error_after_chunks: 2 },
    });
    const consume = async () => {
      for await (const _chunk of stream) {
        // drain
      }
    };
    const err = await expectApiError(consume());
    expect(err.message).toMatch(/mid-stream|server/i);
  });

  it('bills a stream the provider cut without usage from an estimate, marked in the generation record', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Cut me off' }],
      stream: true,
      // @ts-expect-error simulator fault injection, passed through by the gateway
      sim: { cut_after_chunks: 3 },
    });
    let id = '';
    let text = '';
    const drain = async () => {
      for await (const chunk of stream) {
        id ||= chunk.id ?? '';
        text += chunk.choices[0]?.delta?.content ?? '';
      }
    };
    // The gateway ends the stream with an estimated usage chunk, an error chunk and [DONE]: the
    // client raises the error chunk.
    const err = await expectApiError(drain());
    expect(err.message).toMatch(/unreachable|closed/);
    expect(id).toMatch(/^gen-/);
    expect(text.length).toBeGreaterThan(0);
    const record = await stack.waitForGeneration(id);
    expect(record.status, describeResponse(record)).toBe(200);
    expect(record.body.data).toMatchObject({ id, streamed: true, usage_source: 'estimated' });
    expect(record.body.data.tokens_completion).toBeGreaterThanOrEqual(3);
    expect(record.body.data.total_cost).toBeGreaterThan(0);
  });

  it('surfaces a key over its spend limit as 403 key_limit_exceeded', async () => {
    const limited = await stack.createInferenceKey(stack.account.managementKey, {
      limit: 0.000001,
      limit_reset: 'daily',
    });
    const capped = new OpenAI({ baseURL: stack.baseUrl, apiKey: limited.key, maxRetries: 0 });
    const err = await expectApiError(
      capped.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'x' }],
        max_tokens: 500,
      }),
    );
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.error).toMatchObject({ metadata: { error_type: 'key_limit_exceeded', period: 'daily' } });
  });

  it('surfaces an account without credits as 402', async () => {
    const broke = await stack.createAccount();
    const { key } = await stack.createInferenceKey(broke.managementKey);
    const poor = new OpenAI({ baseURL: stack.baseUrl, apiKey: key, maxRetries: 0 });
    const err = await expectApiError(
      poor.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ metadata: { error_type: 'payment_required' } });
  });

  it('lists the models of the catalog', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain(MODEL);
  });

  it('surfaces an unknown model as a 400 BadRequestError', async () => {
    const err = await expectApiError(
      client.chat.completions.create({
        model: 'nobody/no-model',
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/nobody\/no-model/);
  });

  it('surfaces a bad key as a 401 AuthenticationError', async () => {
    const bad = new OpenAI({ baseURL: stack.baseUrl, apiKey: 'sk-tg-v1-not-a-real-key', maxRetries: 0 });
    const err = await expectApiError(
      bad.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
  });

  it('surfaces a management key on a model endpoint as 403 with required_scope', async () => {
    const mgmt = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.account.managementKey, maxRetries: 0 });
    const err = await expectApiError(
      mgmt.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.error).toMatchObject({ metadata: { error_type: 'forbidden', required_scope: 'inference' } });
  });

  it('sends X-Title as a header and finds it as app in the generation record', async () => {
    const titled = new OpenAI({
      baseURL: stack.baseUrl,
      apiKey: stack.inferenceKey,
      maxRetries: 0,
      defaultHeaders: { 'X-Title': 'openai-sdk e2e' },
    });
    const completion = await titled.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Title me' }],
      max_tokens: 8,
    });
    const record = await stack.waitForGeneration(completion.id);
    expect(record.status, describeResponse(record)).toBe(200);
    expect(record.body.data).toMatchObject({
      id: completion.id,
      model: MODEL,
      app: 'openai-sdk e2e',
      streamed: false,
      usage_source: 'provider',
      tokens_prompt: completion.usage?.prompt_tokens,
      tokens_completion: completion.usage?.completion_tokens,
    });
    expect(record.body.data.total_cost).toBe((completion.usage as unknown as { cost: number }).cost);
  });
});
