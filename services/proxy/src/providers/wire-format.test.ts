import { parseCatalog } from '@tollgate/catalog';
import { describe, expect, it } from 'vitest';
import { wireFormatOf } from './index';

const catalog = parseCatalog(
  `
providers:
  - name: oa
    base_url: https://api.example.com/v1/
    simulator: true
  - name: an
    base_url: https://api.anthropic.example/v1
    format: anthropic
    simulator: true
models:
  - id: vendor/both
    name: Both
    context_length: 200000
    max_output_tokens: 1000
    created: 1747267200
    providers: [{ provider: oa, model: gpt-up }, { provider: an, model: claude-up }]
    pricing: { prompt: "0.000003", completion: "0.000015" }
`,
  { env: {} },
);
const model = catalog.model('vendor/both')!;
const [oa, an] = model.providers.map((p) => ({
  model,
  provider: p.provider,
  upstreamModel: p.upstreamModel,
}));
const CTX = { model: 'vendor/both', created: 1_800_000_000 };
const body = {
  model: 'vendor/both',
  messages: [{ role: 'user', content: 'Hi' }],
  service_tier: 'priority',
  store: true,
  sim: { delay_ms: 1 },
  stream: true,
};

describe('wire format registry', () => {
  it('picks the adapter by catalog format (OpenAI when absent)', () => {
    expect(wireFormatOf(undefined).name).toBe('openai');
    expect(wireFormatOf(oa!.provider.format).name).toBe('openai');
    expect(wireFormatOf(an!.provider.format).name).toBe('anthropic');
  });
});

describe('openai adapter', () => {
  const f = wireFormatOf('openai');

  it('targets <base path>/chat/completions with a Bearer key', () => {
    expect(f.path('https://api.example.com/v1/')).toBe('/v1/chat/completions');
    expect(f.headers('sk-1')).toMatchObject({ authorization: 'Bearer sk-1' });
    expect(f.headers(undefined).authorization).toBeUndefined();
  });

  it('sends only documented fields, the provider model and include_usage for streams', () => {
    const out = f.requestBody(f.prepare(body), oa!, body, true);
    expect(out).toEqual({
      model: 'gpt-up',
      messages: body.messages,
      sim: body.sim,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(f.requestBody(f.prepare(body), oa!, body, false).stream_options).toBeUndefined();
  });

  it('relays answers as they are and needs no stream bridge', () => {
    const json = { id: 'x', object: 'chat.completion', choices: [] };
    expect(f.readResponse(json, CTX)).toBe(json);
    expect(f.streamBridge(CTX)).toBeNull();
  });

  it('classifies error answers by status: what happened, a summary without the provider text', () => {
    const overloaded = f.classifyHttpError(503, '{"error":{"message":"org-abcdef overloaded"}}', 'oa');
    expect(overloaded).toMatchObject({ failure: 'unavailable', detail: 'org-abcdef overloaded' });
    expect(overloaded.summary).toMatchObject({ status: 502, type: 'provider_error' });
    expect(overloaded.summary.message).not.toContain('org-abcdef');
    expect(f.classifyHttpError(429, '', 'oa')).toMatchObject({ failure: 'rate_limited' });
    expect(f.classifyHttpError(402, '', 'oa')).toMatchObject({ failure: 'credentials' });
    expect(f.classifyHttpError(409, '', 'oa')).toMatchObject({ failure: 'unavailable' });
    expect(f.classifyHttpError(400, '{"error":{"type":"billing_error"}}', 'oa')).toMatchObject({
      failure: 'caller',
    });
  });
});

describe('anthropic adapter', () => {
  const f = wireFormatOf('anthropic');

  it('targets <base path>/messages with x-api-key and anthropic-version', () => {
    expect(f.path('https://api.anthropic.example/v1')).toBe('/v1/messages');
    expect(f.headers('sk-ant')).toMatchObject({ 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' });
  });

  it("builds the Messages body per candidate: its model, the model's output cap, sim for simulators", () => {
    const out = f.requestBody(f.prepare(body), an!, body, true);
    expect(out).toMatchObject({ model: 'claude-up', max_tokens: 1000, stream: true, sim: body.sim });
    expect(out.stream_options).toBeUndefined();
    expect(out.service_tier).toBeUndefined();
    const capped = { ...body, max_tokens: 50 };
    expect(f.requestBody(f.prepare(capped), an!, capped, true).max_tokens).toBe(50);
  });

  it('refuses what Messages cannot express in prepare (its candidates are skipped)', () => {
    expect(() => f.prepare({ ...body, n: 2 })).toThrow(/n must be 1/);
  });

  it('reads a Message into a chat.completion and bridges its stream', () => {
    const read = f.readResponse(
      {
        type: 'message',
        id: 'msg_1',
        content: [{ type: 'text', text: 'Hello' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 3, output_tokens: 1 },
      },
      CTX,
    );
    expect(read).toMatchObject({
      object: 'chat.completion',
      model: 'vendor/both',
      choices: [{ message: { content: 'Hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1 },
    });
    expect(f.readResponse({ object: 'chat.completion' }, CTX)).toBeNull();
    expect(f.streamBridge(CTX)).not.toBeNull();
  });

  it('reads a 400 billing_error as the credentials, another 400 as the caller, a 529 as unavailable', () => {
    const billing = f.classifyHttpError(
      400,
      '{"type":"error","error":{"type":"billing_error","message":"low"}}',
      'an',
    );
    expect(billing).toMatchObject({ failure: 'credentials', detail: 'low' });
    const caller = f.classifyHttpError(
      400,
      '{"type":"error","error":{"type":"invalid_request_error"}}',
      'an',
    );
    expect(caller).toMatchObject({ failure: 'caller' });
    expect(caller.summary.status).toBe(400);
    expect(f.classifyHttpError(529, '', 'an')).toMatchObject({ failure: 'unavailable' });
  });
});
