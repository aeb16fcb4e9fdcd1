import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, type Json, parseSse, readUntilCut } from '../../test/sse';
import { type ProviderSim, startProviderSim } from './app';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim();
});
afterAll(() => sim.close());

const send = (body: unknown) =>
  fetch(`${sim.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const streamed = (sim: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  chat('fault please', { stream: true, stream_options: { include_usage: true }, sim, ...extra });
const plain = (sim: Record<string, unknown>) => chat('fault please', { sim });
const contentChunks = (json: Record<string, Json>[]) =>
  json.filter((c) => c.choices?.[0]?.delta?.content !== undefined);

describe('sim.error_status', () => {
  it('answers the status with an OpenAI error body before any byte (streamed)', async () => {
    const res = await send(streamed({ error_status: 503 }));
    const text = await res.text();
    expect(res.status, text).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(JSON.parse(text).error).toMatchObject({ type: 'server_error', param: null });
  });

  it('answers the status with an OpenAI error body (not streamed), with a custom message', async () => {
    const res = await send(plain({ error_status: 429, error_message: 'slow down' }));
    const body = (await res.json()) as Json;
    expect(res.status, JSON.stringify(body)).toBe(429);
    expect(body.error).toEqual({
      message: 'slow down',
      type: 'requests',
      param: null,
      code: 'rate_limit_exceeded',
    });
  });

  it('relays 4xx statuses too', async () => {
    const res = await send(plain({ error_status: 400 }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as Json).error.type).toBe('invalid_request_error');
  });
});

describe('sim.error_after_chunks', () => {
  it('streams N content chunks then an error event and ends without [DONE]', async () => {
    const res = await send(streamed({ error_after_chunks: 3 }));
    const text = await res.text();
    expect(res.status).toBe(200);
    const sse = parseSse(text);
    expect(sse.done, text).toBe(false);
    expect(contentChunks(sse.json)).toHaveLength(3);
    const last = sse.json.at(-1) as Json;
    expect(last.error, text).toMatchObject({ type: 'server_error', param: null, code: null });
    expect(typeof last.error.message).toBe('string');
    expect(sse.json.some((c: Json) => c.usage)).toBe(false);
  });

  it('errors after the last content chunk when N exceeds the completion', async () => {
    const sse = parseSse(
      await (await send(streamed({ error_after_chunks: 1000, completion_tokens: 5 }))).text(),
    );
    expect(contentChunks(sse.json)).toHaveLength(5);
    expect((sse.json.at(-1) as Json).error).toBeDefined();
  });

  it('answers 500 server_error when not streamed', async () => {
    const res = await send(plain({ error_after_chunks: 2 }));
    expect(res.status).toBe(500);
    expect(((await res.json()) as Json).error.type).toBe('server_error');
  });
});

describe('sim.cut_after_chunks', () => {
  it('streams N content chunks then destroys the connection: no finish, no usage, no [DONE]', async () => {
    const res = await send(streamed({ cut_after_chunks: 4 }));
    expect(res.status).toBe(200);
    const { raw, cut } = await readUntilCut(res);
    expect(cut, raw).toBe(true);
    const sse = parseSse(raw);
    expect(sse.done).toBe(false);
    expect(contentChunks(sse.json)).toHaveLength(4);
    expect(sse.json.some((c: Json) => c.choices?.[0]?.finish_reason)).toBe(false);
    expect(sse.json.some((c: Json) => c.usage)).toBe(false);
  });

  it('cuts before the first content chunk with N = 0', async () => {
    const { raw, cut } = await readUntilCut(await send(streamed({ cut_after_chunks: 0 })));
    expect(cut).toBe(true);
    expect(contentChunks(parseSse(raw).json)).toHaveLength(0);
  });

  it('destroys the connection without a response when not streamed', async () => {
    await expect(send(plain({ cut_after_chunks: 1 }))).rejects.toThrow();
  });

  it('keeps serving other requests after a cut', async () => {
    await readUntilCut(await send(streamed({ cut_after_chunks: 1 })));
    expect((await send(chat('still alive'))).status).toBe(200);
  });
});

describe('sim.omit_usage', () => {
  it('ends a stream normally but without the usage chunk even when include_usage is true', async () => {
    const text = await (await send(streamed({ omit_usage: true }))).text();
    const sse = parseSse(text);
    expect(sse.done).toBe(true);
    expect(
      sse.json.some((c: Json) => Array.isArray(c.choices) && c.choices.length === 0),
      text,
    ).toBe(false);
    expect((sse.json.at(-1) as Json).choices[0].finish_reason).toBe('stop');
  });

  it('answers without a usage field when not streamed', async () => {
    const body = (await (await send(plain({ omit_usage: true }))).json()) as Json;
    expect(body.choices[0].message.content.length).toBeGreaterThan(0);
    expect('usage' in body).toBe(false);
  });
});

describe('cached, cache-write and reasoning tokens', () => {
  it('reports them in usage, reasoning inside completion_tokens (not streamed)', async () => {
    const body = (await (
      await send(
        chat('a somewhat longer prompt for caching purposes', {
          sim: { cached_tokens: 5, cache_write_tokens: 3, reasoning_tokens: 7, completion_tokens: 10 },
        }),
      )
    ).json()) as Json;
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(5);
    expect(body.usage.prompt_tokens_details.cache_write_tokens).toBe(3);
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(7);
    expect(body.usage.completion_tokens).toBe(17);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 17);
  });

  it('reports them in the usage chunk (streamed)', async () => {
    const sse = parseSse(
      await (await send(streamed({ cached_tokens: 4, reasoning_tokens: 2, completion_tokens: 3 }))).text(),
    );
    const usage = (sse.json.at(-1) as Json).usage;
    expect(usage.prompt_tokens_details.cached_tokens).toBe(4);
    expect('cache_write_tokens' in usage.prompt_tokens_details).toBe(false);
    expect(usage.completion_tokens_details.reasoning_tokens).toBe(2);
    expect(usage.completion_tokens).toBe(5);
    expect(contentChunks(sse.json)).toHaveLength(3);
  });

  it('clamps cached and cache-write tokens to the prompt', async () => {
    const body = (await (
      await send(chat('hi', { sim: { cached_tokens: 1000, cache_write_tokens: 1000 } }))
    ).json()) as Json;
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(body.usage.prompt_tokens);
    expect(body.usage.prompt_tokens_details.cache_write_tokens).toBe(0);
  });

  it('counts reasoning against max_tokens like max_completion_tokens does', async () => {
    const body = (await (
      await send(chat('x', { max_completion_tokens: 10, sim: { reasoning_tokens: 8, completion_tokens: 5 } }))
    ).json()) as Json;
    expect(body.usage.completion_tokens).toBe(10);
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(8);
    expect(body.choices[0].finish_reason).toBe('length');
  });
});

describe('latency', () => {
  it('waits sim.ttft_ms before the first byte and sim.inter_token_ms between tokens (streamed)', async () => {
    const start = performance.now();
    const res = await send(streamed({ ttft_ms: 120, inter_token_ms: 30, completion_tokens: 4 }));
    const reader = res.body!.getReader();
    await reader.read();
    const firstByte = performance.now() - start;
    while (!(await reader.read()).done) {}
    const total = performance.now() - start;
    expect(firstByte).toBeGreaterThanOrEqual(110);
    expect(total).toBeGreaterThanOrEqual(110 + 3 * 30 - 10);
  });

  it('waits ttft + inter-token time before answering (not streamed)', async () => {
    const start = performance.now();
    await (await send(plain({ ttft_ms: 50, inter_token_ms: 20, completion_tokens: 4 }))).json();
    expect(performance.now() - start).toBeGreaterThanOrEqual(50 + 3 * 20 - 10);
  });

  it('applies the configured defaults when the request has no sim delays', async () => {
    const slow = await startProviderSim({ ttftMs: 80, interTokenMs: 0 });
    try {
      const start = performance.now();
      await (
        await fetch(`${slow.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify(chat('x')) })
      ).json();
      expect(performance.now() - start).toBeGreaterThanOrEqual(70);
    } finally {
      await slow.close();
    }
  });

  it('survives a client going away mid-stream', async () => {
    const res = await send(streamed({ inter_token_ms: 20, completion_tokens: 50 }));
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect((await send(chat('after abort'))).status).toBe(200);
  });
});
