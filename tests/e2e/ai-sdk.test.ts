/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against the whole stack: generateText and
 * streamText, usage and cost, errors surfaced as APICallError, X-Title in the generation record.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const gateway = (apiKey: string, headers?: Record<string, string>) =>
  createOpenAICompatible({ name: 'tollgate', baseURL: stack.baseUrl, apiKey, headers, includeUsage: true });

async function expectCallError(promise: Promise<unknown>): Promise<APICallError> {
  try {
    await promise;
  } catch (err) {
    expect(APICallError.isInstance(err), String(err)).toBe(true);
    return err as APICallError;
  }
  throw new Error('expected an APICallError');
}

describe('Vercel AI SDK (@ai-sdk/openai-compatible)', () => {
  it('generateText returns text, token usage and the request id', async () => {
    const result = await generateText({
      model: gateway(stack.inferenceKey)(MODEL),
      prompt: 'Say hello',
      maxOutputTokens: 12,
      maxRetries: 0,
    });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.response.id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    expect(result.response.headers?.['x-generation-id']).toBe(result.response.id);
    expect(['stop', 'length']).toContain(result.finishReason);
  });

  it('streamText streams the text and reports usage once the stream closes', async () => {
    const result = streamText({
      model: gateway(stack.inferenceKey)(MODEL),
      prompt: 'Count to five',
      maxOutputTokens: 20,
      maxRetries: 0,
    });
    const parts: string[] = [];
    for await (const delta of result.textStream) parts.push(delta);
    expect(parts.length).toBeGreaterThan(1);
    const usage = await result.usage;
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect((await result.response).id).toMatch(/^gen-/);
  });

  it('surfaces an unknown model as a 400 APICallError (generateText and streamText)', async () => {
    const err = await expectCallError(
      generateText({ model: gateway(stack.inferenceKey)('nobody/no-model'), prompt: 'x', maxRetries: 0 }),
    );
    expect(err.statusCode).toBe(400);
    expect(err.message).toMatch(/nobody\/no-model/);

    const errors: unknown[] = [];
    const streamed = streamText({
      model: gateway(stack.inferenceKey)('nobody/no-model'),
      prompt: 'x',
      maxRetries: 0,
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    for await (const _ of streamed.textStream) {
      // drain
    }
    expect(errors).toHaveLength(1);
    expect(APICallError.isInstance(errors[0])).toBe(true);
    expect((errors[0] as APICallError).statusCode).toBe(400);
  });

  it('surfaces a bad key as a 401 APICallError', async () => {
    const err = await expectCallError(
      generateText({ model: gateway('sk-tg-v1-not-a-real-key')(MODEL), prompt: 'x', maxRetries: 0 }),
    );
    expect(err.statusCode).toBe(401);
  });

  it('sends X-Title as a header and finds it as app in the generation record (streamed)', async () => {
    const result = streamText({
      model: gateway(stack.inferenceKey, { 'X-Title': 'ai-sdk e2e' })(MODEL),
      prompt: 'Title me',
      maxOutputTokens: 8,
      maxRetries: 0,
    });
    await result.consumeStream();
    const id = (await result.response).id;
    const usage = await result.usage;
    const record = await stack.waitForGeneration(id);
    expect(record.status, describeResponse(record)).toBe(200);
    expect(record.body.data).toMatchObject({
      id,
      app: 'ai-sdk e2e',
      streamed: true,
      usage_source: 'provider',
      tokens_completion: usage.outputTokens,
    });
  });
});
