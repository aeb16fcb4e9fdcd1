import { parseCatalog } from '@tollgate/catalog';
import { configEnv, loadConfig, type ProxyHandle, startProxy } from '@tollgate/proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSse } from '../../../test/sse-client';
import { bearer, type ProxyStack, startProxyStack } from '../../../test/stack';

/**
 * POST /responses through the real proxy (keys, Redis, RabbitMQ, the simulator): the usage event of
 * each request (exactly one, api_type `responses`), a cancelled stream billed for what was produced,
 * a provider failing mid-stream (`response.failed`, billed), failover before the first byte, and the
 * session of an agent client (Codex's `session-id` header) on the event.
 */

// biome-ignore lint/suspicious/noExplicitAny: test assertions walk response JSON
type Json = Record<string, any>;

let stack: ProxyStack;
beforeAll(async () => {
  stack = await startProxyStack();
});
afterAll(() => stack?.close());

const post = (body: object, headers: Record<string, string> = {}) =>
  fetch(`${stack.api}/responses`, {
    method: 'POST',
    headers: { ...bearer(stack.inference), ...headers },
    body: JSON.stringify(body),
  });

const eventsOf = (id: string) => stack.events.filter((e) => e.id === id);

describe('POST /responses usage events', () => {
  it('publishes exactly one usage event per request, api_type responses, streamed or not', async () => {
    const json = await post({ model: 'openai/gpt-4o-mini', input: 'Hi', sim: { completion_tokens: 4 } });
    const body = (await json.json()) as { id: string; usage: { cost: number; output_tokens: number } };
    const streamed = await readSse(`${stack.api}/responses`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', input: 'Hi', stream: true }),
    });
    const streamedId = streamed.headers.get('x-generation-id') as string;
    for (const id of [body.id, streamedId]) {
      const event = await stack.waitForEvent(id);
      expect(event).toMatchObject({ api_type: 'responses', cancelled: false, usage_source: 'provider' });
    }
    expect(Number((await stack.waitForEvent(body.id)).cost)).toBe(body.usage.cost);
    expect((await stack.waitForEvent(body.id)).tokens.completion).toBe(4);
    // Nothing else arrives for either request (a second event would be billed twice).
    await new Promise((r) => setTimeout(r, 300));
    expect(eventsOf(body.id)).toHaveLength(1);
    expect(eventsOf(streamedId)).toHaveLength(1);
  });

  it('bills a stream the client abandons with the usage the provider reports (drained, cancelled)', async () => {
    const r = await readSse(
      `${stack.api}/responses`,
      {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({
          model: 'openai/gpt-4o-mini',
          input: 'Long answer',
          stream: true,
          sim: { completion_tokens: 60, inter_token_ms: 10 },
        }),
      },
      { stopAfterData: 8 },
    );
    const id = r.headers.get('x-generation-id') as string;
    const event = await stack.waitForEvent(id, 10_000);
    // The provider bills all 60 tokens whether or not anyone reads them (docs/api.md).
    expect(event).toMatchObject({
      cancelled: true,
      streamed: true,
      usage_source: 'provider',
      api_type: 'responses',
    });
    expect(event.tokens.completion).toBe(60);
    expect(Number(event.cost)).toBeGreaterThan(0);
    await new Promise((r2) => setTimeout(r2, 200));
    expect(eventsOf(id)).toHaveLength(1);
  });

  it('ends a stream whose provider fails mid-way with response.failed, billed for what was produced', async () => {
    const r = await readSse(`${stack.api}/responses`, {
      method: 'POST',
      headers: bearer(stack.inference),
      body: JSON.stringify({
        model: 'openai/gpt-4o-mini',
        input: 'x',
        stream: true,
        sim: { error_after_chunks: 3 },
      }),
    });
    expect(r.status).toBe(200);
    const last = r.chunks.at(-1);
    expect(last).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'server_error' } },
    });
    expect(r.chunks.map((c) => c.sequence_number)).toEqual(r.chunks.map((_, i) => i));
    const event = await stack.waitForEvent(r.headers.get('x-generation-id') as string);
    expect(event).toMatchObject({ finish_reason: 'error', cancelled: false });
    expect(event.tokens.completion).toBeGreaterThan(0);
  });
  it("records Codex's session-id header as the event's session_id", async () => {
    const res = await post(
      { model: 'openai/gpt-4o-mini', input: 'Hi' },
      { 'session-id': '01a2175f-f50c-7741-9cdb-81738340fdcc' },
    );
    const { id } = (await res.json()) as { id: string };
    expect((await stack.waitForEvent(id)).session_id).toBe('01a2175f-f50c-7741-9cdb-81738340fdcc');
  });
});

describe('POST /responses failover', () => {
  let proxy: ProxyHandle;
  beforeAll(async () => {
    const yaml = `
providers:
  - { name: dead, base_url: "http://127.0.0.1:9/v1" }
  - { name: sim, base_url: "${stack.sim.url}/v1", simulator: true }
  - { name: sim-anthropic, base_url: "${stack.sim.url}/v1", format: anthropic, simulator: true }
models:
  - id: test/failover
    name: failover
    context_length: 100000
    created: 1
    providers: [{ provider: dead, model: m }, { provider: sim-anthropic, model: claude-x }, { provider: sim, model: m }]
    pricing: { prompt: "0.000001", completion: "0.000002" }
`;
    const env = configEnv(stack.config);
    proxy = await startProxy(loadConfig({ ...env, PORT: '0' }), {
      catalog: parseCatalog(yaml, { format: 'yaml', env: {} }),
    });
  });
  afterAll(() => proxy?.close());

  it('fails over before the first byte to the next provider (an Anthropic one), streamed and not', async () => {
    for (const stream of [false, true]) {
      const res = await fetch(`${proxy.url}/api/v1/responses`, {
        method: 'POST',
        headers: bearer(stack.inference),
        body: JSON.stringify({ model: 'test/failover', input: 'Hi', stream }),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const id = res.headers.get('x-generation-id') as string;
      const event = await stack.waitForEvent(id);
      expect(event.provider_name).toBe('sim-anthropic');
      expect(event.attempts?.map((a) => a.provider)).toEqual(['dead', 'sim-anthropic']);
      expect(text).toContain(stream ? 'response.completed' : '"status":"completed"');
    }
  });
});

describe('POST /responses to a provider that serves the Responses API (native)', () => {
  const NATIVE = 'openai/gpt-5.1-codex';
  const call = '<sim:call name="exec_command">{"cmd":"ls"}</sim:call>';
  const tools = [
    { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
    { type: 'web_search' },
  ];

  it('passes the body through to <base>/responses; reasoning items round-trip with their encrypted content', async () => {
    const paths: string[] = [];
    const seen = (req: { url?: string }) => paths.push(String(req.url));
    stack.sim.server.on('request', seen);
    try {
      const first = await post({
        model: NATIVE,
        input: [{ role: 'user', content: `List files. ${call}` }],
        tools,
        reasoning: { effort: 'low', summary: 'auto' },
        include: ['reasoning.encrypted_content'],
        store: false,
        metadata: { kept: 'here' },
      });
      const r1 = (await first.json()) as Json;
      expect(first.status, JSON.stringify(r1)).toBe(200);
      expect(first.headers.get('x-tollgate-withheld-tools')).toBe('web_search');
      expect(r1.id).toBe(first.headers.get('x-generation-id'));
      expect(r1.model).toBe(NATIVE);
      const [reasoning, fc] = r1.output as Json[];
      expect(reasoning).toMatchObject({
        type: 'reasoning',
        encrypted_content: expect.stringMatching(/^sim1\./),
      });
      expect(fc).toMatchObject({ type: 'function_call', name: 'exec_command', arguments: '{"cmd":"ls"}' });
      expect(r1.usage).toMatchObject({
        output_tokens_details: { reasoning_tokens: expect.any(Number) },
        cost: expect.any(Number),
      });
      const e1 = await stack.waitForEvent(r1.id as string);
      expect(e1).toMatchObject({
        api_type: 'responses',
        usage_source: 'provider',
        withheld_tools: ['web_search'],
      });
      expect(e1.tokens.reasoning).toBeGreaterThan(0);
      expect(Number(e1.cost)).toBe((r1.usage as Json).cost);

      // The second turn sends the reasoning item back as it came: the provider verifies it.
      const second = await post({
        model: NATIVE,
        tools,
        stream: true,
        input: [
          { role: 'user', content: `List files. ${call}` },
          reasoning,
          fc,
          { type: 'function_call_output', call_id: fc?.call_id, output: 'a.txt' },
        ],
      });
      const text = await second.text();
      expect(second.status, text).toBe(200);
      const events = text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as Json);
      const done = events.at(-1) as Json;
      expect(done.type).toBe('response.completed');
      const response = done.response as Json;
      expect(response).toMatchObject({ id: second.headers.get('x-generation-id'), model: NATIVE });
      expect(JSON.stringify(response.output)).toContain('Tool output: a.txt');
      expect((response.usage as Json).cost).toBeGreaterThan(0);
      expect(paths.filter((u) => u === '/v1/responses')).toHaveLength(2);
    } finally {
      stack.sim.server.off('request', seen);
    }
  });

  it('relays the provider refusing an altered reasoning item as a 400', async () => {
    const res = await post({
      model: NATIVE,
      input: [
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'sim1.AAAA.0000000000000000' },
        { role: 'user', content: 'x' },
      ],
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Json;
    expect(body.error).toMatchObject({ type: 'invalid_request_error' });
  });
});
