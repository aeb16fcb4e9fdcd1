/**
 * The official `@anthropic-ai/sdk` client against the whole stack (in-process services, real
 * Postgres, Redis, RabbitMQ) through the Anthropic Messages door: once against an Anthropic-format
 * model (native: the body passes through) and once against an OpenAI-format model (translated).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeResponse, type Stack, startStack } from '../support/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

/** `ANTHROPIC_BASE_URL=<origin>/api`: the SDK appends `/v1/messages`. */
const client = (opts: { apiKey?: string; authToken?: string; prefix?: 'api' | 'alias' } = {}) =>
  new Anthropic({
    baseURL: opts.prefix === 'alias' ? stack.origin : `${stack.origin}/api`,
    apiKey: opts.apiKey ?? null,
    authToken: opts.authToken ?? (opts.apiKey ? null : stack.inferenceKey),
    maxRetries: 0,
  });

async function apiError(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(Anthropic.APIError);
    return err as InstanceType<typeof Anthropic.APIError>;
  }
  throw new Error('expected an APIError');
}

const bash = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: {
    type: 'object' as const,
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};

describe.each([
  ['native (Anthropic-format provider)', 'anthropic/claude-sonnet-4.5'],
  ['translated (OpenAI-format provider)', 'openai/gpt-4o-mini'],
])('@anthropic-ai/sdk through the Messages door, %s', (_name, model) => {
  it('creates a message: text, usage, request id and a priced generation record of api_type messages', async () => {
    const { data: msg, response } = await client()
      .messages.create({
        model,
        max_tokens: 64,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'Say hello' }],
      })
      .withResponse();
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.content[0]?.type).toBe('text');
    expect((msg.content[0] as { text: string }).text.length).toBeGreaterThan(0);
    expect(['end_turn', 'max_tokens']).toContain(msg.stop_reason);
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);
    const id = response.headers.get('x-generation-id') as string;
    expect(id).toMatch(/^gen-\d+-[A-Za-z0-9]{20}$/);
    const record = await stack.waitForGeneration(id);
    expect(record.status, describeResponse(record)).toBe(200);
    expect(record.body.data.model).toBe(model);
    expect(record.body.data.total_cost).toBeGreaterThan(0);
    expect(record.body.data.tokens_completion).toBe(msg.usage.output_tokens);
    expect(record.body.data.api_type).toBe('messages');
  });

  it('streams: Anthropic events in order, the final message with usage', async () => {
    const stream = client().messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Count to five' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types).toContain('content_block_delta');
    expect(types.at(-1)).toBe('message_stop');
    expect(types.at(-2)).toBe('message_delta');
    expect((final.content[0] as { text: string }).text.length).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
  });

  it('runs a tool round trip: tool_use of Bash, tool_result back, the answer carries the result', async () => {
    const ask = 'Run it. <sim:call name="Bash">{"command":"echo tollgate-$((6*7))"}</sim:call>';
    const first = await client().messages.create({
      model,
      max_tokens: 256,
      tools: [bash],
      messages: [{ role: 'user', content: ask }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ name: 'Bash', input: { command: 'echo tollgate-$((6*7))' } });
    const stream = client().messages.stream({
      model,
      max_tokens: 256,
      tools: [bash],
      messages: [
        { role: 'user', content: ask },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'tollgate-42' }] },
      ],
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    expect(final.content).toMatchObject([{ type: 'text', text: 'Tool output: tollgate-42' }]);
  });

  it('streams a tool call as input_json_delta', async () => {
    const stream = client().messages.stream({
      model,
      max_tokens: 256,
      tools: [bash],
      messages: [{ role: 'user', content: '<sim:call name="Bash">{"command":"ls /"}</sim:call>' }],
    });
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')
        deltas.push(e.delta.partial_json);
    });
    const final = await stream.finalMessage();
    expect(deltas.join('').length).toBeGreaterThan(0);
    expect(final.content.find((b) => b.type === 'tool_use')).toMatchObject({ input: { command: 'ls /' } });
  });

  it('counts tokens', async () => {
    const r = await client().messages.countTokens({
      model,
      messages: [{ role: 'user', content: 'Hello there' }],
      tools: [bash],
    });
    expect(r.input_tokens).toBeGreaterThan(5);
  });

  it('accepts both auth headers (x-api-key and Bearer) and both prefixes', async () => {
    for (const c of [
      client({ apiKey: stack.inferenceKey }),
      client({ authToken: stack.inferenceKey, prefix: 'alias' }),
    ]) {
      const m = await c.messages.create({
        model,
        max_tokens: 8,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(m.type).toBe('message');
    }
  });

  it('ends a stream that fails mid-way with an error event the SDK raises', async () => {
    const stream = client().messages.stream({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
      // the simulator's fault injection (forwarded to simulator providers only)
      sim: { error_after_chunks: 2 },
    });
    const err = await apiError(stream.finalMessage());
    expect(JSON.stringify(err.error)).toMatch(/overloaded_error|api_error/);
  });
});

describe('what Claude Code sends, natively', () => {
  it('forwards anthropic-beta: a system turn inside messages reaches the provider (which accepts it only with a beta)', async () => {
    const body = {
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 32,
      thinking: { type: 'adaptive', display: 'omitted' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'high' },
      metadata: { user_id: '{"session_id":"s"}' },
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: 'a reminder' },
        { role: 'user', content: 'again' },
      ],
    };
    const withBeta = await stack.api('/messages', {
      key: stack.inferenceKey,
      body,
      headers: { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'context-management-2025-06-27' },
    });
    expect(withBeta.status, describeResponse(withBeta)).toBe(200);
    // Without the header the provider refuses the system turn: the beta really went through above.
    const without = await stack.api('/messages', { key: stack.inferenceKey, body });
    expect(without.status, describeResponse(without)).toBe(400);
  });
});

describe('prompt caching on the native path', () => {
  const model = 'anthropic/claude-sonnet-4.5';
  /**
   * ~200 prompt tokens: ≈ $0.00075 at the 5-minute cache-write price ($3.75/M), ≈ $0.0012 at the 1-hour
   * one ($6/M). Under ALWAYS_EXACT_CHARS (1,024), so counted exactly however loaded the machine is (a
   * longer prompt may be counted by its bytes past the count's time budget, a larger worst case).
   */
  const prompt = 'word '.repeat(200);
  const ask = (ttl: '5m' | '1h', text = prompt) => ({
    model,
    max_tokens: 1,
    messages: [
      { role: 'user', content: [{ type: 'text', text, cache_control: { type: 'ephemeral', ttl } }] },
    ],
  });

  it('reserves a 1-hour cache write at its price: a limit between the 5-minute and the 1-hour worst case admits only the former', async () => {
    const { key } = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'cache',
      limit: 0.001,
    });
    const fiveMinutes = await stack.api('/messages', { key, body: ask('5m') });
    expect(fiveMinutes.status, describeResponse(fiveMinutes)).toBe(200);
    const oneHour = await stack.api('/messages', {
      key: (await stack.createInferenceKey(stack.account.managementKey, { name: 'cache1h', limit: 0.001 }))
        .key,
      body: ask('1h'),
    });
    expect(oneHour.status, describeResponse(oneHour)).toBe(402);
    expect(oneHour.body.error.type).toBe('billing_error');
  });

  it('bills cache reads and both cache-write durations from the provider’s usage', async () => {
    const res = await stack.api('/messages', {
      key: stack.inferenceKey,
      body: {
        // ~1,600 prompt tokens, room for the 600 cached and written below.
        ...ask('1h', 'word '.repeat(1600)),
        sim: { cached_tokens: 100, cache_write_tokens: 200, cache_write_1h_tokens: 300 },
      },
    });
    expect(res.status, describeResponse(res)).toBe(200);
    expect(res.body.usage).toMatchObject({
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 500,
      cache_creation: { ephemeral_1h_input_tokens: 300 },
    });
    const record = await stack.waitForGeneration(res.headers.get('x-generation-id') as string);
    const g = record.body.data;
    expect(g.tokens_cached).toBe(100);
    expect(g.tokens_cache_write).toBe(500);
    // input × $3/M + 100 × $0.3/M + 200 × $3.75/M + 300 × $6/M + output × $15/M, exactly.
    const input = res.body.usage.input_tokens as number;
    const output = res.body.usage.output_tokens as number;
    const expected = (input * 3 + 100 * 0.3 + 200 * 3.75 + 300 * 6 + output * 15) / 1e6;
    expect(g.total_cost).toBeCloseTo(expected, 12);
  });
});

describe('errors in Anthropic’s shape', () => {
  it('401 authentication_error for an unknown key', async () => {
    const err = await apiError(
      client({ apiKey: `sk-tg-v1-${'0'.repeat(64)}` }).messages.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err.status).toBe(401);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });

  it('400 invalid_request_error naming the field: unknown model, missing max_tokens, untranslatable top_k', async () => {
    const unknown = await apiError(
      client().messages.create({
        model: 'nope/nope',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(unknown.status).toBe(400);
    expect(unknown.error).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringMatching(/^model:/) },
    });
    const r = await stack.api('/messages', {
      key: stack.inferenceKey,
      method: 'POST',
      body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] },
    });
    expect(r.status, describeResponse(r)).toBe(400);
    expect(r.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/^max_tokens:/) },
    });
    // top_k: Anthropic's sampling option, with no OpenAI equivalent (not in the SDK's types any more).
    const withTopK = (model: string) =>
      ({
        model,
        max_tokens: 8,
        top_k: 5,
        messages: [{ role: 'user', content: 'x' }],
      }) as Anthropic.MessageCreateParamsNonStreaming;
    const topK = await apiError(client().messages.create(withTopK('openai/gpt-4o-mini')));
    expect(topK.status).toBe(400);
    expect((topK.error as { error: { message: string } }).error.message).toMatch(/^top_k:/);
    // The native path passes it through.
    const native = await client().messages.create(withTopK('anthropic/claude-sonnet-4.5'));
    expect(native.type).toBe('message');
  });

  it('402 billing_error for a key whose limit cannot cover the request', async () => {
    const small = await stack.createInferenceKey(stack.account.managementKey, { name: 'tiny', limit: 0.001 });
    const err = await apiError(
      client({ authToken: small.key }).messages.create({
        model: 'anthropic/claude-sonnet-4.5',
        max_tokens: 8000,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
  });

  it('402 billing_error for an account without credits', async () => {
    const broke = await stack.createAccount();
    const { key } = await stack.createInferenceKey(broke.managementKey);
    const err = await apiError(
      client({ authToken: key }).messages.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
  });

  it('403 permission_error for a model outside the key’s allowed_models', async () => {
    const { key } = await stack.createInferenceKey(stack.account.managementKey, {
      name: 'only-mini',
      allowed_models: ['openai/gpt-4o-mini'],
    });
    const err = await apiError(
      client({ authToken: key }).messages.create({
        model: 'anthropic/claude-sonnet-4.5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err.status).toBe(403);
    expect(err.error).toMatchObject({
      error: { type: 'permission_error', message: expect.stringMatching(/allowed_models/) },
    });
  });

  it('403 permission_error for a management key', async () => {
    const err = await apiError(
      client({ authToken: stack.account.managementKey }).messages.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(err.status).toBe(403);
    expect(err.error).toMatchObject({ error: { type: 'permission_error' } });
  });
});

describe('GET /models with anthropic-version', () => {
  it('lists the catalog in Anthropic’s shape too', async () => {
    const page = await client().models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids).toContain('anthropic/claude-sonnet-4.5');
    const m = page.data.find((x) => x.id === 'anthropic/claude-sonnet-4.5');
    expect(m).toMatchObject({ type: 'model', display_name: 'Anthropic: Claude Sonnet 4.5' });
    expect(Number.isNaN(Date.parse(m?.created_at ?? ''))).toBe(false);
  });
});
