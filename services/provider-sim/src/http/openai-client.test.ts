import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from './app';

let sim: ProviderSim;
let client: OpenAI;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-sim' });
  client = new OpenAI({ baseURL: sim.baseUrl, apiKey: 'sk-sim', maxRetries: 0 });
});
afterAll(() => sim.close());

// `sim` is not part of the OpenAI types: the client passes unknown body fields through.
const simBody = (sim: Record<string, unknown>) => ({ sim }) as unknown as Record<string, never>;

describe('the official openai client against the simulator', () => {
  it('creates a completion', async () => {
    const c = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(c.object).toBe('chat.completion');
    expect(c.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(c.usage!.total_tokens).toBe(c.usage!.prompt_tokens + c.usage!.completion_tokens);
  });

  it('streams with include_usage and gets the same text and usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    const plain = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(text).toBe(plain.choices[0]!.message.content);
    expect(finish).toBe('stop');
    expect(usage).toEqual(plain.usage);
  });

  it('surfaces sim.error_status as an APIError with the status and message', async () => {
    const err = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...simBody({ error_status: 429 }) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
  });

  it('throws while iterating a stream that fails mid-way (error_after_chunks)', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      ...simBody({ error_after_chunks: 2 }),
    });
    let chunks = 0;
    await expect(
      (async () => {
        for await (const _ of stream) chunks++;
      })(),
    ).rejects.toThrow();
    expect(chunks).toBe(3); // role chunk + 2 content chunks
  });

  it('throws while iterating a stream whose connection is cut (cut_after_chunks)', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      ...simBody({ cut_after_chunks: 2 }),
    });
    await expect(
      (async () => {
        for await (const _ of stream) {
        }
      })(),
    ).rejects.toThrow();
  });

  it('lists models', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toContain('gpt-4o-mini');
  });

  it('is refused with a wrong key', async () => {
    const bad = new OpenAI({ baseURL: sim.baseUrl, apiKey: 'nope', maxRetries: 0 });
    await expect(bad.models.list()).rejects.toMatchObject({ status: 401 });
  });
});
