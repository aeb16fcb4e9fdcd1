/**
 * LangChain's ChatOpenAI (`@langchain/openai`) pointed at the gateway through
 * `configuration.baseURL`: invoke, stream, errors, X-Title in the generation record.
 */
import { AIMessageChunk } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const chatModel = (apiKey: string, options: { model?: string; headers?: Record<string, string> } = {}) =>
  new ChatOpenAI({
    model: options.model ?? MODEL,
    apiKey,
    maxTokens: 16,
    maxRetries: 0,
    configuration: { baseURL: stack.baseUrl, defaultHeaders: options.headers },
  });

async function expectStatus(promise: Promise<unknown>, status: number): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    expect((err as { status?: number }).status, String(err)).toBe(status);
    return err as Error;
  }
  throw new Error(`expected an error with status ${status}`);
}

describe('LangChain ChatOpenAI', () => {
  it('invoke returns the answer with token usage', async () => {
    const message = await chatModel(stack.inferenceKey).invoke('Say hello');
    expect(typeof message.content).toBe('string');
    expect(String(message.content).length).toBeGreaterThan(0);
    expect(message.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(message.id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
  });

  it('stream yields chunks that concatenate to the answer, with usage at the end', async () => {
    let full: AIMessageChunk | undefined;
    let chunks = 0;
    for await (const chunk of await chatModel(stack.inferenceKey).stream('Count to five')) {
      chunks++;
      full = full ? full.concat(chunk) : chunk;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(full).toBeInstanceOf(AIMessageChunk);
    expect(String(full?.content).length).toBeGreaterThan(0);
    expect(full?.usage_metadata?.output_tokens).toBeGreaterThan(0);
  });

  it('surfaces an unknown model as a 400 error', async () => {
    const err = await expectStatus(
      chatModel(stack.inferenceKey, { model: 'nobody/no-model' }).invoke('x'),
      400,
    );
    expect(err.message).toMatch(/nobody\/no-model/);
  });

  it('surfaces a bad key as a 401 error (invoke and stream)', async () => {
    await expectStatus(chatModel('sk-tg-v1-not-a-real-key').invoke('x'), 401);
    const drain = async () => {
      for await (const _ of await chatModel('sk-tg-v1-not-a-real-key').stream('x')) {
        // drain
      }
    };
    await expectStatus(drain(), 401);
  });

  it('sends X-Title as a header and finds it as app in the generation record', async () => {
    const message = await chatModel(stack.inferenceKey, { headers: { 'X-Title': 'langchain e2e' } }).invoke(
      'Title me',
    );
    const id = message.id ?? '';
    const record = await stack.waitForGeneration(id);
    expect(record.status, describeResponse(record)).toBe(200);
    expect(record.body.data).toMatchObject({
      id,
      app: 'langchain e2e',
      tokens_prompt: message.usage_metadata?.input_tokens,
      tokens_completion: message.usage_metadata?.output_tokens,
    });
  });
});
