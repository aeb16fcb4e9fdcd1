/**
 * `@openrouter/ai-sdk-provider` with the Vercel AI SDK against the whole stack, with nothing but the
 * base URL and the key changed: generateText, streamText, and usage accounting with cost.
 */
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const provider = () => createOpenRouter({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey });

describe('@openrouter/ai-sdk-provider', () => {
  it('generateText returns text and usage with cost', async () => {
    const result = await generateText({
      model: provider().chat(MODEL, { usage: { include: true } }),
      prompt: 'Say hello',
      maxOutputTokens: 12,
      maxRetries: 0,
    });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    const usage = (result.providerMetadata?.openrouter as { usage?: { cost?: number } } | undefined)?.usage;
    expect(usage?.cost).toBeGreaterThan(0);
  });

  it('streamText streams text and ends with usage with cost', async () => {
    const result = streamText({
      model: provider().chat(MODEL, { usage: { include: true } }),
      prompt: 'Say hello',
      maxOutputTokens: 12,
      maxRetries: 0,
    });
    let text = '';
    for await (const part of result.textStream) text += part;
    expect(text.length).toBeGreaterThan(0);
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    const meta = (await result.providerMetadata)?.openrouter as { usage?: { cost?: number } } | undefined;
    expect(meta?.usage?.cost).toBeGreaterThan(0);
  });
});
