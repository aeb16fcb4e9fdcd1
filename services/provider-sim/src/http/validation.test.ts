import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, type Json } from '../../test/sse';
import { type ProviderSim, startProviderSim } from './app';

let sim: ProviderSim;
let keyed: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim();
  keyed = await startProviderSim({ apiKey: 'sk-upstream-secret' });
});
afterAll(async () => {
  await sim.close();
  await keyed.close();
});

async function post(body: unknown, raw = false) {
  const res = await fetch(`${sim.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, error: (JSON.parse(text) as { error: Record<string, unknown> }).error };
}

describe('input validation (OpenAI-style 400s)', () => {
  const cases: [string, unknown, Record<string, unknown>][] = [
    [
      'missing model',
      { messages: [{ role: 'user', content: 'x' }] },
      { message: 'you must provide a model parameter' },
    ],
    ['missing messages', { model: 'm' }, { param: 'messages', code: 'missing_required_parameter' }],
    ['messages not an array', { model: 'm', messages: 'hi' }, { param: 'messages', code: 'invalid_type' }],
    ['empty messages', { model: 'm', messages: [] }, { param: 'messages', code: 'empty_array' }],
    [
      'unknown role',
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      { param: 'messages[0].role', code: 'invalid_value' },
    ],
    ['missing content', { model: 'm', messages: [{ role: 'user' }] }, { param: 'messages[0].content' }],
    [
      'max_tokens not an integer',
      chat('x', { max_tokens: 'ten' }),
      { param: 'max_tokens', code: 'invalid_type' },
    ],
    [
      'max_tokens below 1',
      chat('x', { max_tokens: 0 }),
      { param: 'max_tokens', code: 'integer_below_min_value' },
    ],
    ['stream not a boolean', chat('x', { stream: 'yes' }), { param: 'stream', code: 'invalid_type' }],
    [
      'stream_options without stream',
      chat('x', { stream_options: { include_usage: true } }),
      { param: 'stream_options' },
    ],
    ['n above 1', chat('x', { n: 2 }), { param: 'n' }],
    ['sim not an object', chat('x', { sim: 3 }), { param: 'sim' }],
    [
      'sim.error_status out of range',
      chat('x', { sim: { error_status: 200 } }),
      { param: 'sim.error_status' },
    ],
    ['sim.ttft_ms negative', chat('x', { sim: { ttft_ms: -1 } }), { param: 'sim.ttft_ms' }],
  ];
  for (const [name, body, expected] of cases) {
    it(`rejects ${name} with 400`, async () => {
      const r = await post(body);
      expect(r.status, r.text).toBe(400);
      expect(r.error, r.text).toMatchObject({ type: 'invalid_request_error', ...expected });
    });
  }

  it('rejects a body that is not JSON with 400', async () => {
    const r = await post('{"model":', true);
    expect(r.status, r.text).toBe(400);
    expect(r.error.message).toMatch(/could not parse the JSON body/);
  });

  it('accepts an assistant message with null content (tool calls)', async () => {
    const r = await fetch(`${sim.baseUrl}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: '42' },
        ],
      }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
  });
});

describe('SIM_API_KEY', () => {
  const call = (authorization?: string) =>
    fetch(`${keyed.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: authorization ? { authorization } : {},
      body: JSON.stringify(chat('x')),
    });

  it('refuses a request without the key with 401', async () => {
    const res = await call();
    expect(res.status).toBe(401);
    expect(((await res.json()) as Json).error.type).toBe('invalid_request_error');
  });

  it('refuses a wrong key with 401 invalid_api_key', async () => {
    const res = await call('Bearer sk-wrong');
    expect(res.status).toBe(401);
    expect(((await res.json()) as Json).error.code).toBe('invalid_api_key');
  });

  it('accepts the configured key, and protects /v1/models but not health checks', async () => {
    expect((await call('Bearer sk-upstream-secret')).status).toBe(200);
    expect((await fetch(`${keyed.baseUrl}/models`)).status).toBe(401);
    expect((await fetch(`${keyed.url}/healthz`)).status).toBe(200);
  });
});

describe('strict mode (OpenAI refuses unknown arguments)', () => {
  it('answers 400 "Unrecognized request argument supplied" naming the fields; sim still accepted', async () => {
    const strict = await startProviderSim({ strict: true });
    try {
      const post = (body: unknown) =>
        fetch(`${strict.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const one = await post({ ...chat('hi'), usage: { include: true } });
      const oneBody = (await one.json()) as Json;
      expect(one.status, JSON.stringify(oneBody)).toBe(400);
      expect(oneBody.error).toEqual({
        message: 'Unrecognized request argument supplied: usage',
        type: 'invalid_request_error',
        param: null,
        code: null,
      });
      const two = (await (await post({ ...chat('hi'), models: [], provider: {} })).json()) as Json;
      expect(two.error.message).toBe('Unrecognized request arguments supplied: models, provider');
      const ok = await post({ ...chat('hi'), sim: { completion_tokens: 2 }, store: false });
      expect(ok.status).toBe(200);
    } finally {
      await strict.close();
    }
  });
});
