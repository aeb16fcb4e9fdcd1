import { computeCost, parseCatalog } from '@tollgate/catalog';
import { type ProviderSim, startProviderSim } from '@tollgate/provider-sim';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokensFromUsage } from '../openai/usage';
import { SseReader } from '../sse';
import type { ProviderFailure } from '../wire-format';
import { type AnthropicErrorClass, failureOfClass } from './errors';
import {
  buildMessagesRequest,
  classifyHttpError,
  MessagesStreamReader,
  messagesHeaders,
  messagesPath,
  readMessage,
  type StreamRead,
} from './index';

/**
 * The adapter against the provider simulator's Anthropic mode (a real HTTP server speaking the
 * Messages API, strict about its request format): OpenAI-format request in, Anthropic on the wire,
 * OpenAI-shaped completion, chunks and usage out — priced with the catalog's cost function.
 */
let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-ant-sim' });
});
afterAll(() => sim.close());

const catalog = parseCatalog(
  `
providers:
  - name: anthropic-sim
    base_url: http://127.0.0.1:1/v1
models:
  - id: anthropic/claude-sonnet-4
    name: Claude Sonnet 4
    context_length: 200000
    max_output_tokens: 64000
    created: 1747267200
    providers: [{ provider: anthropic-sim, model: claude-sonnet-4-20250514 }]
    pricing: { prompt: "0.000003", completion: "0.000015", cache_read: "0.0000003", cache_write: "0.00000375" }
`,
  { env: {} },
);
const model = catalog.model('anthropic/claude-sonnet-4')!;
const CTX = { model: 'anthropic/claude-sonnet-4', created: 1_800_000_000 };

// biome-ignore lint/suspicious/noExplicitAny: tests walk arbitrary response JSON
type Json = any;

async function post(openAiBody: Record<string, unknown>, key = 'sk-ant-sim') {
  const body = buildMessagesRequest(openAiBody, { model: 'claude-sonnet-4-20250514', simulator: true });
  return fetch(`${sim.url}${messagesPath(sim.baseUrl)}`, {
    method: 'POST',
    headers: messagesHeaders(key),
    body: JSON.stringify(body),
  });
}

async function complete(openAiBody: Record<string, unknown>): Promise<Json> {
  const res = await post(openAiBody);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return readMessage(JSON.parse(text), CTX);
}

/** Streams through the adapter; returns the OpenAI chunks and what the reader reported. */
async function stream(openAiBody: Record<string, unknown>) {
  const res = await post({ ...openAiBody, stream: true });
  expect(res.status).toBe(200);
  const sse = new SseReader();
  const reader = new MessagesStreamReader(CTX.model, CTX.created);
  const reads: StreamRead[] = [];
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    for (const ev of sse.push(bytes)) reads.push(reader.read(ev.type, ev.data));
  }
  for (const ev of sse.end()) reads.push(reader.read(ev.type, ev.data));
  const chunks = reads.flatMap((r) => r.chunks).map((c) => JSON.parse(c) as Json);
  return { chunks, done: reads.some((r) => r.done), error: reads.find((r) => r.error)?.error };
}

/** The official openai client's own stream accumulator over the translated chunks. */
function openAiAccumulate(chunks: Json[]) {
  const body = new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(new TextEncoder().encode(`${JSON.stringify(chunk)}\n`));
      c.close();
    },
  });
  return ChatCompletionStream.fromReadableStream(body).finalChatCompletion();
}

const conversation = {
  model: 'anthropic/claude-sonnet-4',
  messages: [
    { role: 'system', content: 'Be brief.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Describe this' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      ],
    },
  ],
};
const weatherTools = {
  tools: [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ],
};

describe('Anthropic adapter against the simulator (not streamed)', () => {
  it('returns an OpenAI chat.completion with usage priced exactly, cached and cache-write tokens included', async () => {
    const c = await complete({
      ...conversation,
      sim: { cached_tokens: 5, cache_write_tokens: 4, completion_tokens: 9 },
    });
    expect(c).toMatchObject({
      object: 'chat.completion',
      model: 'anthropic/claude-sonnet-4',
      choices: [{ index: 0, finish_reason: 'stop' }],
    });
    expect(c.id).toMatch(/^msg_/);
    expect(c.choices[0].message.content.length).toBeGreaterThan(0);
    const tokens = tokensFromUsage(c.usage);
    expect(tokens).toMatchObject({ cached: 5, cacheWrite: 4, completion: 9 });
    expect(c.usage.total_tokens).toBe(tokens.prompt + 9);
    // Anthropic reports input without the cache figures; prompt = input + read + write.
    const raw = (await (
      await post({ ...conversation, sim: { cached_tokens: 5, cache_write_tokens: 4, completion_tokens: 9 } })
    ).json()) as Json;
    expect(tokens.prompt).toBe(raw.usage.input_tokens + 9);
    // (prompt − 9)·3e-6 + 5·3e-7 + 4·3.75e-6 + 9·1.5e-5 USD, in 1e-10 units.
    const uncached = BigInt(tokens.prompt - 9);
    expect(computeCost(model, tokens)).toBe(uncached * 30_000n + 5n * 3_000n + 4n * 37_500n + 9n * 150_000n);
  });

  it('maps max_tokens to finish_reason length and a stop sequence to stop', async () => {
    const cut = await complete({ ...conversation, max_tokens: 3 });
    expect(cut.choices[0].finish_reason).toBe('length');
    expect(cut.usage.completion_tokens).toBe(3);
    const full = await complete({ ...conversation, sim: { completion_tokens: 20 } });
    const text: string = full.choices[0].message.content;
    const stopped = await complete({
      ...conversation,
      stop: [text.slice(8, 12)],
      sim: { completion_tokens: 20 },
    });
    expect(stopped.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { content: text.slice(0, text.indexOf(text.slice(8, 12))) },
    });
  });

  it('returns tool calls with JSON arguments, and a tool-result round trip is accepted by the provider', async () => {
    const c = await complete({ ...conversation, ...weatherTools, tool_choice: 'required' });
    const msg = c.choices[0].message;
    expect(c.choices[0].finish_reason).toBe('tool_calls');
    expect(msg.content).toBeNull();
    expect(msg.tool_calls).toHaveLength(1);
    expect(msg.tool_calls[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(typeof JSON.parse(msg.tool_calls[0].function.arguments).city).toBe('string');
    const next = await complete({
      ...conversation,
      ...weatherTools,
      messages: [
        ...conversation.messages,
        msg,
        { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: '21C' },
      ],
    });
    expect(next.choices[0].finish_reason).toBe('stop');
  });
});

describe('Anthropic adapter against the simulator (streamed)', () => {
  it('translates the event stream to OpenAI chunks: role, content, finish, usage — same text as not streamed', async () => {
    const body = { ...conversation, sim: { completion_tokens: 7, cached_tokens: 3 } };
    const s = await stream(body);
    expect(s.done).toBe(true);
    expect(s.chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const contents = s.chunks.filter((c) => c.choices[0]?.delta?.content);
    expect(contents).toHaveLength(7);
    const finish = s.chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish).toHaveLength(1);
    expect(finish[0].choices[0].finish_reason).toBe('stop');
    const last = s.chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(tokensFromUsage(last.usage)).toMatchObject({ completion: 7, cached: 3 });
    expect(new Set(s.chunks.map((c) => c.id)).size).toBe(1);
    const plain = await complete(body);
    expect(contents.map((c) => c.choices[0].delta.content).join('')).toBe(plain.choices[0].message.content);
    expect(last.usage).toEqual(plain.usage);
    const acc = await openAiAccumulate(s.chunks);
    expect(acc.choices[0]!.message.content).toBe(plain.choices[0].message.content);
  });

  it('streams tool calls as tool_calls deltas the openai client assembles into the same call', async () => {
    const body = {
      ...conversation,
      ...weatherTools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    };
    const s = await stream(body);
    const first = s.chunks.find((c) => c.choices[0]?.delta?.tool_calls)!;
    expect(first.choices[0].delta.tool_calls[0]).toMatchObject({
      index: 0,
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    expect(s.chunks.filter((c) => c.choices[0]?.delta?.tool_calls).length).toBeGreaterThan(2);
    const acc = await openAiAccumulate(s.chunks);
    expect(acc.choices[0]!.finish_reason).toBe('tool_calls');
    const call = acc.choices[0]!.message.tool_calls![0]! as Json;
    expect(call.function.name).toBe('get_weather');
    expect(typeof JSON.parse(call.function.arguments).city).toBe('string');
  });

  it('ends without a usage chunk when the provider sent no usage (the proxy then estimates)', async () => {
    const s = await stream({ ...conversation, sim: { omit_usage: true, completion_tokens: 3 } });
    expect(s.done).toBe(true);
    expect(s.chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(s.chunks.some((c) => c.usage)).toBe(false);
    const plain = await complete({ ...conversation, sim: { omit_usage: true } });
    expect(plain.usage).toBeUndefined();
  });

  it('ignores ping, block stops and event types it does not know', () => {
    const r = new MessagesStreamReader('m', 1);
    expect(r.read('ping', '{"type":"ping"}')).toEqual({ chunks: [], done: false });
    expect(r.read('content_block_stop', '{"type":"content_block_stop","index":0}').chunks).toEqual([]);
    expect(r.read('future_event', '{"type":"future_event"}').chunks).toEqual([]);
    expect(r.read('content_block_delta', 'not json').chunks).toEqual([]);
    expect(
      r.read(
        'content_block_delta',
        '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}',
      ).chunks,
    ).toEqual([]);
  });

  it('turns a mid-stream overloaded_error into a classified error with OpenAI-style error data', async () => {
    const s = await stream({ ...conversation, sim: { error_after_chunks: 2 } });
    expect(s.done).toBe(false);
    expect(s.error).toMatchObject({
      errorClass: 'overloaded',
      providerType: 'overloaded_error',
    });
    expect(s.chunks.at(-1)).toEqual({
      error: { message: 'Overloaded', type: 'overloaded_error', code: null },
    });
  });
});

describe('Anthropic errors classified (what happened: dispatch decides the failover)', () => {
  const cases: [Record<string, unknown>, string, number, AnthropicErrorClass, ProviderFailure][] = [
    [{ sim: { error_status: 429, retry_after: 3 } }, 'sk-ant-sim', 429, 'rate_limited', 'rate_limited'],
    [{ sim: { error_status: 529 } }, 'sk-ant-sim', 529, 'overloaded', 'unavailable'],
    [{ sim: { error_status: 500 } }, 'sk-ant-sim', 500, 'server', 'unavailable'],
    [{}, 'sk-wrong', 401, 'credentials', 'credentials'],
    [{ sim: { error_status: 400 } }, 'sk-ant-sim', 400, 'caller', 'caller'],
    [{ sim: { error_status: 413 } }, 'sk-ant-sim', 413, 'caller', 'caller'],
  ];
  for (const [extra, key, status, errorClass, failure] of cases) {
    it(`HTTP ${status} → ${errorClass} (${failure})`, async () => {
      const res = await post({ ...conversation, ...extra }, key);
      expect(res.status).toBe(status);
      if (status === 429) expect(res.headers.get('retry-after')).toBe('3');
      const c = classifyHttpError(res.status, await res.text());
      expect(c).toMatchObject({ errorClass });
      expect(failureOfClass(c.errorClass)).toBe(failure);
      expect(c.detail).toBeTruthy();
    });
  }

  it('classifies by status when the body is not Anthropic JSON (a proxy page)', () => {
    expect(classifyHttpError(502, '<html>Bad gateway</html>')).toMatchObject({
      errorClass: 'server',
      detail: null,
    });
    expect(
      classifyHttpError(404, '{"type":"error","error":{"type":"not_found_error","message":"model: x"}}'),
    ).toMatchObject({
      errorClass: 'caller',
      providerType: 'not_found_error',
    });
    expect(
      classifyHttpError(400, '{"type":"error","error":{"type":"billing_error","message":"credit balance"}}')
        .errorClass,
    ).toBe('credentials');
  });
});
