import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, readUntilCut } from '../../test/sse';
import { type ProviderSim, startProviderSim } from '../http/app';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-ant-sim' });
});
afterAll(() => sim.close());

const HEADERS = {
  'content-type': 'application/json',
  'x-api-key': 'sk-ant-sim',
  'anthropic-version': '2023-06-01',
};
const send = (body: unknown, headers: Record<string, string> = HEADERS) =>
  fetch(`${sim.baseUrl}/messages`, { method: 'POST', headers, body: JSON.stringify(body) });
const msg = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4',
  max_tokens: 1024,
  messages: [{ role: 'user', content: 'Hello there' }],
  ...extra,
});

/** Anthropic SSE: `event:` + `data:` pairs. */
function events(raw: string): { event: string; data: Json }[] {
  return raw
    .split('\n\n')
    .filter((e) => e.trim())
    .map((e) => {
      const [ev, data] = e.split('\n');
      expect(ev, raw).toMatch(/^event: /);
      expect(data, raw).toMatch(/^data: /);
      const parsed = JSON.parse(data!.slice(6)) as Json;
      expect(parsed.type, raw).toBe(ev!.slice(7));
      return { event: ev!.slice(7), data: parsed };
    });
}

const weather = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer' },
    },
    required: ['city', 'unit', 'days'],
  },
};

describe('POST /v1/messages (not streamed)', () => {
  it('answers a Message with text, end_turn and usage', async () => {
    const res = await send(msg({ system: 'Be brief.' }));
    const body = (await res.json()) as Json;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    expect(body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4',
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(body.id).toMatch(/^msg_[A-Za-z0-9]{24}$/);
    expect(body.content).toHaveLength(1);
    expect(body.content[0].type).toBe('text');
    expect(body.content[0].text.length).toBeGreaterThan(0);
    expect(body.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.output_tokens).toBeGreaterThan(0);
  });

  it('splits input into input, cache read and cache creation tokens (input excludes both)', async () => {
    const plain = (await (await send(msg())).json()) as Json;
    const total = plain.usage.input_tokens;
    const body = (await (
      await send(msg({ sim: { cached_tokens: 4, cache_write_tokens: 3, completion_tokens: 5 } }))
    ).json()) as Json;
    expect(body.usage).toMatchObject({
      input_tokens: total - 7,
      cache_read_input_tokens: 4,
      cache_creation_input_tokens: 3,
      output_tokens: 5,
    });
  });

  it('stops at max_tokens with stop_reason max_tokens', async () => {
    const body = (await (await send(msg({ max_tokens: 3 }))).json()) as Json;
    expect(body).toMatchObject({ stop_reason: 'max_tokens', usage: { output_tokens: 3 } });
  });

  it('stops before a stop sequence and names it', async () => {
    const full = (await (await send(msg({ sim: { completion_tokens: 30 } }))).json()) as Json;
    const text: string = full.content[0].text;
    const stop = text.slice(10, 14);
    const body = (await (
      await send(msg({ stop_sequences: ['never-there', stop], sim: { completion_tokens: 30 } }))
    ).json()) as Json;
    expect(body).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: stop });
    expect(body.content[0].text).toBe(text.slice(0, text.indexOf(stop)));
  });

  it('calls a tool with input matching its schema when tool_choice is any', async () => {
    const body = (await (await send(msg({ tools: [weather], tool_choice: { type: 'any' } }))).json()) as Json;
    expect(body.stop_reason, JSON.stringify(body)).toBe('tool_use');
    expect(body.content).toHaveLength(1);
    const call = body.content[0];
    expect(call).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { unit: 'celsius' } });
    expect(call.id).toMatch(/^toolu_/);
    expect(typeof call.input.city).toBe('string');
    expect(Number.isInteger(call.input.days)).toBe(true);
  });

  it('answers a tool result with text, and tool_choice none with text', async () => {
    const first = (await (await send(msg({ tools: [weather] }))).json()) as Json;
    const call = first.content[0];
    expect(call.type).toBe('tool_use');
    const followUp = msg({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [call] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '21 degrees' }] },
      ],
    });
    const second = (await (await send(followUp)).json()) as Json;
    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
    const none = (await (
      await send(msg({ tools: [weather], tool_choice: { type: 'none' } }))
    ).json()) as Json;
    expect(none.stop_reason).toBe('end_turn');
  });

  it('gives the same text as the OpenAI mode for the same conversation', async () => {
    const anthropic = (await (
      await send(msg({ system: 'Be brief.', sim: { completion_tokens: 12 } }))
    ).json()) as Json;
    const openai = (await (
      await fetch(`${sim.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-ant-sim' },
        body: JSON.stringify({
          model: 'm',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Hello there' },
          ],
          sim: { completion_tokens: 12 },
        }),
      })
    ).json()) as Json;
    expect(anthropic.content[0].text).toBe(openai.choices[0].message.content);
  });
});

describe('POST /v1/messages (streamed)', () => {
  it('sends message_start, a text block, ping, message_delta and message_stop with usage', async () => {
    const res = await send(msg({ stream: true, sim: { completion_tokens: 6, cached_tokens: 2 } }));
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const raw = await res.text();
    const ev = events(raw);
    expect(ev.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array(6).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(ev[0]!.data.message).toMatchObject({
      role: 'assistant',
      content: [],
      usage: { cache_read_input_tokens: 2, output_tokens: 1 },
    });
    expect(ev[1]!.data).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    const text = ev
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => e.data.delta.text)
      .join('');
    const json = (await (
      await send(msg({ sim: { completion_tokens: 6, cached_tokens: 2 } }))
    ).json()) as Json;
    expect(text).toBe(json.content[0].text);
    expect(ev.at(-2)!.data).toMatchObject({
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 6, cache_read_input_tokens: 2 },
    });
  });

  it('streams a tool call as input_json_delta pieces that join to the input', async () => {
    const raw = await (
      await send(msg({ stream: true, tools: [weather], tool_choice: { type: 'tool', name: 'get_weather' } }))
    ).text();
    const ev = events(raw);
    const start = ev.find((e) => e.event === 'content_block_start')!.data;
    expect(start.content_block).toMatchObject({ type: 'tool_use', name: 'get_weather', input: {} });
    const deltas = ev.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta);
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.every((d: Json) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(deltas.map((d: Json) => d.partial_json).join(''))).toMatchObject({ unit: 'celsius' });
    expect(ev.at(-2)!.data.delta.stop_reason).toBe('tool_use');
  });
});

describe('faults (sim object) in Anthropic mode', () => {
  it('error_status answers Anthropic error bodies with retry-after', async () => {
    for (const [status, type] of [
      [429, 'rate_limit_error'],
      [529, 'overloaded_error'],
      [500, 'api_error'],
      [401, 'authentication_error'],
      [400, 'invalid_request_error'],
    ] as const) {
      const res = await send(msg({ stream: status === 529, sim: { error_status: status, retry_after: 7 } }));
      const body = (await res.json()) as Json;
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.headers.get('retry-after')).toBe('7');
      expect(body).toMatchObject({ type: 'error', error: { type } });
      expect(body.request_id).toMatch(/^req_/);
    }
  });

  it('error_after_chunks: N deltas then an error event, no message_stop', async () => {
    const ev = events(
      await (await send(msg({ stream: true, sim: { error_after_chunks: 2, error_message: 'busy' } }))).text(),
    );
    expect(ev.filter((e) => e.event === 'content_block_delta')).toHaveLength(2);
    expect(ev.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } },
    });
    const res = await send(msg({ sim: { error_after_chunks: 2 } }));
    expect(res.status).toBe(500);
  });

  it('cut_after_chunks destroys the connection after N deltas; omit_usage drops usage', async () => {
    const cut = await readUntilCut(await send(msg({ stream: true, sim: { cut_after_chunks: 3 } })));
    expect(cut.cut).toBe(true);
    expect(cut.raw.match(/event: content_block_delta/g)).toHaveLength(3);
    expect(cut.raw).not.toContain('message_stop');
    const plain = (await (await send(msg({ sim: { omit_usage: true } }))).json()) as Json;
    expect(plain.usage).toBeUndefined();
    const raw = await (await send(msg({ stream: true, sim: { omit_usage: true } }))).text();
    expect(raw).not.toContain('usage');
  });
});

describe('validation and auth like the Messages API', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['max_tokens missing', { max_tokens: undefined }, /^max_tokens: Field required/],
    [
      'a system role in messages',
      { messages: [{ role: 'system', content: 'x' }] },
      /^messages\.0\.role: Unexpected role "system"/,
    ],
    ['an OpenAI-only field', { n: 1 }, /^n: Extra inputs are not permitted/],
    [
      'an OpenAI image part',
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      /Input tag 'image_url'/,
    ],
    ['temperature above 1', { temperature: 1.5 }, /^temperature: Input should be less than or equal to 1/],
    [
      'a tool_result without its tool_use',
      {
        messages: [
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] },
        ],
      },
      /unexpected `tool_use_id`/,
    ],
    [
      'a tool_use left unanswered',
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
          { role: 'user', content: 'b' },
        ],
      },
      /without `tool_result`/,
    ],
    [
      'tool_choice without tools',
      { tool_choice: { type: 'any' } },
      /tool_choice may only be specified while providing tools/,
    ],
    ['a malformed sim field', { sim: { error_status: 'x' } }, /^sim\.error_status: /],
  ];
  for (const [name, patch, message] of cases) {
    it(`refuses ${name} with 400 invalid_request_error`, async () => {
      const res = await send({ ...msg(), ...patch });
      const body = (await res.json()) as Json;
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toMatch(message);
    });
  }

  it('needs the key as x-api-key or Bearer (401 authentication_error) and anthropic-version', async () => {
    const noKey = await send(msg(), {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    });
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as Json).error.type).toBe('authentication_error');
    const bearer = await send(msg(), {
      'content-type': 'application/json',
      authorization: 'Bearer sk-ant-sim',
      'anthropic-version': '2023-06-01',
    });
    expect(bearer.status).toBe(200);
    const wrong = await send(msg(), { ...HEADERS, 'x-api-key': 'sk-wrong' });
    expect(wrong.status).toBe(401);
    const noVersion = await send(msg(), { 'content-type': 'application/json', 'x-api-key': 'sk-ant-sim' });
    expect(noVersion.status).toBe(400);
    expect(((await noVersion.json()) as Json).error.message).toMatch(/anthropic-version/);
  });
});
