/**
 * OpenRouter's own client, `@openrouter/sdk`, against the whole stack with nothing but the base URL
 * and the key changed. Every call parses the response with the SDK's own zod schemas, so a missing or
 * mistyped field fails here.
 */
import { OpenRouter } from '@openrouter/sdk';
import type { EventStream } from '@openrouter/sdk/lib/event-streams.js';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let inference: OpenRouter;
let management: OpenRouter;

beforeAll(async () => {
  stack = await startStack();
  inference = new OpenRouter({ apiKey: stack.inferenceKey, serverURL: stack.baseUrl });
  management = new OpenRouter({ apiKey: stack.account.managementKey, serverURL: stack.baseUrl });
});
afterAll(() => stack?.close());

describe('@openrouter/sdk', () => {
  it('chat.send non-streamed returns content and usage with cost', async () => {
    const result = (await inference.chat.send({
      chatRequest: { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], maxTokens: 12 },
    })) as ChatResult;
    expect(result.choices[0]?.message.content).toBeTruthy();
    expect(result.usage?.totalTokens).toBeGreaterThan(0);
    expect(result.usage?.cost).toBeGreaterThan(0);
  });

  it('chat.send streamed yields content chunks then one usage chunk', async () => {
    const stream = (await inference.chat.send({
      chatRequest: {
        model: MODEL,
        messages: [{ role: 'user', content: 'Say hello' }],
        maxTokens: 12,
        stream: true,
      },
    })) as EventStream<ChatStreamChunk>;
    let text = '';
    const usages: unknown[] = [];
    let lastHadUsage = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      lastHadUsage = chunk.usage !== undefined;
      if (chunk.usage !== undefined) usages.push(chunk.usage);
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usages).toHaveLength(1);
    expect(lastHadUsage).toBe(true);
  });

  it('models.list returns the catalog', async () => {
    const models = await inference.models.list();
    expect(models.result.data.map((m) => m.id)).toContain(MODEL);
  });

  it('endpoints.list returns the providers of a model', async () => {
    const [author, slug] = MODEL.split('/') as [string, string];
    const res = await inference.endpoints.list({ author, slug });
    expect(res.data.id).toBe(MODEL);
    expect(res.data.endpoints.length).toBeGreaterThan(0);
  });

  it('generations.getGeneration returns the record of a completion', async () => {
    const result = (await inference.chat.send({
      chatRequest: { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], maxTokens: 12 },
    })) as ChatResult;
    await stack.waitForGeneration(result.id);
    const gen = await inference.generations.getGeneration({ id: result.id });
    expect(gen.data.id).toBe(result.id);
    expect(gen.data.totalCost).toBeGreaterThan(0);
  });

  it('apiKeys create/get/list/update/delete', async () => {
    const created = await management.apiKeys.create({ requestBody: { name: 'sdk-key', limit: 5 } });
    expect(created.key).toMatch(/^sk-tg-v1-/);
    const hash = created.data.hash;
    const got = await management.apiKeys.get({ hash });
    expect(got.data.name).toBe('sdk-key');
    const list = await management.apiKeys.list();
    expect(list.data.map((k) => k.hash)).toContain(hash);
    const updated = await management.apiKeys.update({
      hash,
      requestBody: { name: 'renamed', disabled: true },
    });
    expect(updated.data.name).toBe('renamed');
    expect(updated.data.disabled).toBe(true);
    const deleted = await management.apiKeys.delete({ hash });
    expect(deleted.deleted).toBe(true);
  });

  it('analytics.getUserActivity (GET /activity) parses', async () => {
    const activity = await management.analytics.getUserActivity();
    expect(Array.isArray(activity.data)).toBe(true);
  });

  it('getCurrentKeyMetadata (GET /key) and credits.getCredits', async () => {
    const key = await inference.apiKeys.getCurrentKeyMetadata();
    expect(key.data.label).toBeTruthy();
    const credits = await management.credits.getCredits();
    expect(credits.data.totalCredits).toBeGreaterThan(0);
  });
});
