import { encode } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, type Json, parseSse } from '../../test/sse';
import { countPromptTokens } from '../completion/prompt-tokens';
import { type ProviderSim, startProviderSim } from './app';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim();
});
afterAll(() => sim.close());

async function post(body: unknown) {
  const res = await fetch(`${sim.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { res, text, json: () => JSON.parse(text) as Record<string, Json> };
}

const contentOf = (chunks: Record<string, Json>[]) =>
  chunks
    .filter((c) => c.choices?.[0]?.delta?.content !== undefined)
    .map((c) => c.choices[0].delta.content as string);

describe('POST /v1/chat/completions (not streamed)', () => {
  it('answers a chat.completion object shaped like OpenAI with consistent usage', async () => {
    const { res, text, json } = await post(chat('Tell me about gateways.'));
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const body = json();
    expect(body.id).toMatch(/^chatcmpl-[A-Za-z0-9]{24}$/);
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('gpt-4o-mini');
    expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(5);
    const choice = body.choices[0];
    expect(choice.index).toBe(0);
    expect(choice.message.role).toBe('assistant');
    expect(choice.finish_reason).toBe('stop');
    const content = choice.message.content as string;
    expect(content.length).toBeGreaterThan(0);
    const u = body.usage;
    expect(u.completion_tokens).toBe(encode(content).length);
    expect(u.prompt_tokens).toBe(countPromptTokens([{ role: 'user', content: 'Tell me about gateways.' }]));
    expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    expect(u.prompt_tokens_details).toEqual({ cached_tokens: 0, audio_tokens: 0 });
    expect(u.completion_tokens_details.reasoning_tokens).toBe(0);
  });

  it('counts prompt tokens with the OpenAI per-message overhead', async () => {
    const messages = [
      { role: 'system', content: 'You are terse.' },
      {
        role: 'user',
        name: 'ann',
        content: [
          { type: 'text', text: 'Hello' },
          { type: 'text', text: ' world' },
        ],
      },
    ];
    const { json } = await post({ model: 'm', messages });
    const expected =
      3 +
      (3 + 1 + encode('You are terse.').length) +
      (3 + 1 + 1 + 1 + encode('Hello').length + encode(' world').length);
    expect(json().usage.prompt_tokens).toBe(expected);
  });

  it('derives the text from the prompt: same prompt, same text; other prompt, other text', async () => {
    const a = (await post(chat('alpha'))).json().choices[0].message.content;
    const b = (await post(chat('alpha'))).json().choices[0].message.content;
    const c = (await post(chat('beta'))).json().choices[0].message.content;
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });

  it('stops with finish_reason length at max_tokens and at max_completion_tokens', async () => {
    const a = (await post(chat('long one', { max_tokens: 3 }))).json();
    expect(a.choices[0].finish_reason).toBe('length');
    expect(a.usage.completion_tokens).toBe(3);
    expect(encode(a.choices[0].message.content).length).toBe(3);
    const b = (await post(chat('long one', { max_completion_tokens: 2 }))).json();
    expect(b.choices[0].finish_reason).toBe('length');
    expect(b.usage.completion_tokens).toBe(2);
    const both = (await post(chat('long one', { max_tokens: 5, max_completion_tokens: 4 }))).json();
    expect(both.usage.completion_tokens).toBe(4);
  });

  it('generates exactly sim.completion_tokens tokens, still capped by max_tokens', async () => {
    const a = (await post(chat('x', { sim: { completion_tokens: 100 } }))).json();
    expect(a.usage.completion_tokens).toBe(100);
    expect(encode(a.choices[0].message.content).length).toBe(100);
    expect(a.choices[0].finish_reason).toBe('stop');
    const b = (await post(chat('x', { max_tokens: 10, sim: { completion_tokens: 100 } }))).json();
    expect(b.usage.completion_tokens).toBe(10);
    expect(b.choices[0].finish_reason).toBe('length');
    const zero = (await post(chat('x', { sim: { completion_tokens: 0 } }))).json();
    expect(zero.choices[0].message.content).toBe('');
    expect(zero.usage.completion_tokens).toBe(0);
  });
});

describe('POST /v1/chat/completions (streamed)', () => {
  it('streams a role chunk, one content chunk per token, a finish chunk and [DONE]', async () => {
    const { res, text } = await post(chat('Stream me', { stream: true }));
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const sse = parseSse(text);
    expect(sse.done, text).toBe(true);
    const chunks = sse.json as Record<string, Json>[];
    const id = chunks[0]!.id;
    expect(id).toMatch(/^chatcmpl-/);
    for (const c of chunks) {
      expect(c.id).toBe(id);
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.model).toBe('gpt-4o-mini');
      expect('usage' in c).toBe(false);
    }
    expect(chunks[0]!.choices[0].delta).toEqual({ role: 'assistant' });
    const last = chunks.at(-1)!;
    expect(last.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    const pieces = contentOf(chunks);
    for (const p of pieces) expect(encode(p)).toHaveLength(1);
    const full = (await post(chat('Stream me'))).json();
    expect(pieces.join('')).toBe(full.choices[0].message.content);
    expect(pieces.length).toBe(full.usage.completion_tokens);
  });

  it('adds a usage chunk with empty choices before [DONE] only when include_usage is true', async () => {
    const { text } = await post(chat('Stream me', { stream: true, stream_options: { include_usage: true } }));
    const sse = parseSse(text);
    const chunks = sse.json as Record<string, Json>[];
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices, text).toEqual([]);
    expect(usageChunk.id).toBe(chunks[0]!.id);
    const full = (await post(chat('Stream me'))).json();
    expect(usageChunk.usage).toEqual(full.usage);
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('stop');
    expect(sse.done).toBe(true);

    const off = parseSse(
      (await post(chat('Stream me', { stream: true, stream_options: { include_usage: false } }))).text,
    );
    expect(off.json.some((c) => Array.isArray(c.choices) && c.choices.length === 0)).toBe(false);
  });

  it('ends with finish_reason length when max_tokens cuts the stream', async () => {
    const { text } = await post(
      chat('Stream me', { stream: true, max_tokens: 4, stream_options: { include_usage: true } }),
    );
    const chunks = parseSse(text).json as Record<string, Json>[];
    expect(contentOf(chunks)).toHaveLength(4);
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('length');
    expect(chunks.at(-1)!.usage.completion_tokens).toBe(4);
  });
});

describe('other routes', () => {
  it('lists models in the OpenAI list shape', async () => {
    const res = await fetch(`${sim.baseUrl}/models`);
    const body = (await res.json()) as { object: string; data: { id: string; object: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id)).toContain('gpt-4o-mini');
    expect(body.data[0]!.object).toBe('model');
  });

  it('answers health checks and 404s unknown routes in the OpenAI error shape', async () => {
    expect((await fetch(`${sim.url}/healthz`)).status).toBe(200);
    const res = await fetch(`${sim.baseUrl}/images/generations`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as Json).error.type).toBe('invalid_request_error');
  });
});
