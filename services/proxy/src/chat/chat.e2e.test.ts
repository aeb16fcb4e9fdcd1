import { REQUEST_ID_PATTERN } from '@tollgate/auth';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, type ProxyStack, startProxyStack } from '../testing/stack';

let stack: ProxyStack;
let client: OpenAI;

beforeAll(async () => {
  stack = await startProxyStack();
  client = new OpenAI({ apiKey: stack.inference.key, baseURL: stack.api, maxRetries: 0 });
});
afterAll(async () => {
  await stack?.close();
});

const messages = [{ role: 'user' as const, content: 'Say something about gateways.' }];

async function waitForEvent(id: string) {
  return vi.waitFor(
    () => {
      const e = stack.eventFor(id);
      if (!e) throw new Error(`no usage event for ${id} yet (${stack.events.length} events)`);
      return e;
    },
    { timeout: 5_000, interval: 20 },
  );
}

describe('POST /chat/completions, non-streamed', () => {
  it('answers through the openai client with the request id, the catalog model and a completed usage', async () => {
    const res = await client.chat.completions
      .create({
        model: 'openai/gpt-4o-mini',
        messages,
        sim: { completion_tokens: 7, cached_tokens: 3 },
      } as never)
      .withResponse();
    const body = res.data as unknown as Record<string, any>;
    expect(body.id).toMatch(REQUEST_ID_PATTERN);
    expect(res.response.headers.get('x-generation-id')).toBe(body.id);
    expect(body.model).toBe('openai/gpt-4o-mini');
    expect(body.choices[0].message.content.length).toBeGreaterThan(0);
    expect(body.usage).toMatchObject({
      completion_tokens: 7,
      prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      is_byok: false,
    });
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 7);
    expect(typeof body.usage.cost).toBe('number');
    expect(body.usage.cost).toBeGreaterThan(0);

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
      tokens: { prompt: body.usage.prompt_tokens, completion: 7, cached: 3, cache_write: 0, reasoning: 0 },
      is_byok: false,
      error: null,
      app: null,
    });
    expect(event.upstream_id).toMatch(/^chatcmpl-/);
    expect(Number(event.cost)).toBe(body.usage.cost);
  });
});

describe('POST /chat/completions, streamed', () => {
  it('streams through the openai client: every chunk carries the request id, usage last', async () => {
    const stream = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages,
      stream: true,
      sim: { completion_tokens: 5, reasoning_tokens: 2 },
    } as never);
    const chunks: any[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<any>) chunks.push(chunk);
    const id = chunks[0].id;
    expect(id).toMatch(REQUEST_ID_PATTERN);
    for (const c of chunks) {
      expect(c.id).toBe(id);
      expect(c.model).toBe('openai/gpt-4o-mini');
    }
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      completion_tokens: 7,
      completion_tokens_details: { reasoning_tokens: 2 },
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      is_byok: false,
    });
    expect(last.usage.cost).toBeGreaterThan(0);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text.length).toBeGreaterThan(0);
    const event = await waitForEvent(id);
    expect(event).toMatchObject({
      streamed: true,
      usage_source: 'provider',
      finish_reason: 'stop',
      cancelled: false,
    });
  });
});
