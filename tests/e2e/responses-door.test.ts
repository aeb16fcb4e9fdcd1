/**
 * POST /responses through the whole stack (tests/support/stack.ts) with the clients that speak it:
 * the openai SDK (responses.create, responses.stream, a function-tool round trip, text.format), the
 * AI SDK's default OpenAI provider, the OpenAI Agents SDK and the real Codex CLI, against an
 * OpenAI-format model and an Anthropic-format model (the simulator scripts the tool calls:
 * services/provider-sim README "Scripted function calls"). Billing: one generation record and one
 * spend entry per request, streamed or not, cost in the answer; a key out of money gets an
 * OpenAI-shaped error the SDK raises.
 */
import type { IncomingMessage } from 'node:http';
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, OpenAIProvider, Runner, tool } from '@openai/agents';
import { tool as aiTool, generateText, jsonSchema, stepCountIs, streamText } from 'ai';
import OpenAI from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCodex } from '../support/codex';
import { MODEL, type Stack, startStack } from '../support/stack';

let stack: Stack;
let client: OpenAI;
let db: pg.Client;

beforeAll(async () => {
  stack = await startStack();
  client = new OpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey, maxRetries: 0 });
  db = new pg.Client({ connectionString: stack.infra.database.url });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await stack?.close();
});

const CLAUDE = 'anthropic/claude-sonnet-4.5';
const NATIVE = 'openai/gpt-5.1-codex';
const MODELS = [
  ['an OpenAI-format model', MODEL],
  ['an Anthropic-format model', CLAUDE],
  ['a provider serving the Responses API itself (native pass-through)', NATIVE],
] as const;
const call = (name: string, args: object) => `<sim:call name="${name}">${JSON.stringify(args)}</sim:call>`;
const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: {
    type: 'object' as const,
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false as const,
  },
  strict: true,
};

describe.each(MODELS)('POST /responses with the openai SDK (%s)', (_label, model) => {
  it('answers a string input with output_text, usage and its cost', async () => {
    const { data: r, response } = await client.responses.create({ model, input: 'Say hello' }).withResponse();
    expect(r.object).toBe('response');
    expect(r.status).toBe('completed');
    expect(r.model).toBe(model);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.usage?.input_tokens).toBeGreaterThan(0);
    expect(r.usage?.output_tokens).toBeGreaterThan(0);
    expect((r.usage as unknown as { cost: number }).cost).toBeGreaterThan(0);
    expect(response.headers.get('x-generation-id')).toBe(r.id);
  });

  it('answers a list input (instructions, developer and user messages)', async () => {
    const r = await client.responses.create({
      model,
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Name a colour.' }] },
      ],
      max_output_tokens: 50,
    });
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.max_output_tokens).toBe(50);
    expect(r.instructions).toBe('Be brief.');
  });

  it('streams the typed events, and finalResponse() has the text and the priced usage', async () => {
    const stream = client.responses.stream({ model, input: 'Tell me something' });
    const types = new Set<string>();
    let text = '';
    for await (const e of stream) {
      types.add(e.type);
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    const final = await stream.finalResponse();
    for (const t of [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.output_item.done',
      'response.completed',
    ]) {
      expect(types).toContain(t);
    }
    expect(final.output_text).toBe(text);
    expect((final.usage as unknown as { cost: number }).cost).toBeGreaterThan(0);
    const record = await stack.waitForGeneration(final.id);
    expect(record.body.data).toMatchObject({ streamed: true, model });
  });

  it('runs a function-tool round trip', async () => {
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: `Weather in Paris? ${call('get_weather', { city: 'Paris' })}` },
    ];
    const first = await client.responses.create({ model, input, tools: [weatherTool] });
    const fc = first.output.find(
      (o) => o.type === 'function_call',
    ) as OpenAI.Responses.ResponseFunctionToolCall;
    expect(fc).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const second = await client.responses.create({
      model,
      tools: [weatherTool],
      input: [...input, fc, { type: 'function_call_output', call_id: fc.call_id, output: 'sunny, 21 C' }],
    });
    expect(second.output_text).toBe('Tool output: sunny, 21 C');
  });

  it('the Agents SDK runs an agent with one function tool to its final output', async () => {
    const seen: string[] = [];
    const weather = tool({
      name: 'get_weather',
      description: 'Weather of a city',
      parameters: weatherTool.parameters,
      strict: true,
      execute: async (args) => {
        seen.push((args as { city: string }).city);
        return 'rain';
      },
    });
    const agent = new Agent({ name: 'forecaster', instructions: 'Use the tool.', model, tools: [weather] });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client }),
      tracingDisabled: true,
    });
    const result = await runner.run(agent, `Weather in Rome? ${call('get_weather', { city: 'Rome' })}`);
    expect(seen).toEqual(['Rome']);
    expect(result.finalOutput).toBe('Tool output: rain');
  });

  it("the AI SDK's default OpenAI provider: generateText, streamText and a tool call", async () => {
    const openai = createOpenAI({ baseURL: stack.baseUrl, apiKey: stack.inferenceKey });
    const plain = await generateText({ model: openai(model), prompt: 'Say hello', maxRetries: 0 });
    expect(plain.text.length).toBeGreaterThan(0);
    expect(plain.usage.inputTokens).toBeGreaterThan(0);
    const streamed = streamText({ model: openai(model), prompt: 'Count to five', maxRetries: 0 });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text.length).toBeGreaterThan(0);
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);
    const tooled = await generateText({
      model: openai(model),
      prompt: `Weather in Oslo? ${call('get_weather', { city: 'Oslo' })}`,
      tools: {
        get_weather: aiTool({
          inputSchema: jsonSchema<{ city: string }>({
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          }),
          execute: async ({ city }) => `${city}: snow`,
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    expect(tooled.text).toBe('Tool output: Oslo: snow');
  });

  it('the real Codex CLI completes a task with its shell tool', async () => {
    // What reached the provider's /responses (the native path): Codex's reasoning items come back.
    const bodies: string[] = [];
    const capture = (req: IncomingMessage) => {
      if (req.url !== '/v1/responses') return;
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString('utf8');
      });
      req.on('end', () => bodies.push(body));
    };
    stack.services.sim.server.on('request', capture);
    const run = await runCodex({
      baseUrl: stack.baseUrl,
      apiKey: stack.inferenceKey,
      model,
      prompt: `Run the command. ${call('exec_command', { cmd: 'echo tollgate-codex-ok' })}`,
    });
    stack.services.sim.server.off('request', capture);
    expect(run.code, `${run.stderr}\n${run.stdout}`).toBe(0);
    expect(run.lastMessage).toContain('tollgate-codex-ok');
    if (model === NATIVE) {
      // The second turn carried the first turn's reasoning item, encrypted content intact (the
      // simulator verifies it and would have refused an altered one).
      expect(bodies.length).toBeGreaterThanOrEqual(2);
      const items = JSON.parse(bodies.at(-1) as string).input as Array<Record<string, unknown>>;
      expect(
        items.some((i) => i.type === 'reasoning' && String(i.encrypted_content).startsWith('sim1.')),
      ).toBe(true);
    } else expect(bodies).toEqual([]);
    // Its two turns (the call, then the answer with the output) are recorded under its session.
    await vi.waitFor(
      async () => {
        const rows = await db.query<{ session_id: string | null; api_type: string }>(
          'select session_id, api_type from billing.generations where model = $1 and session_id is not null',
          [model],
        );
        expect(rows.rows.length).toBeGreaterThanOrEqual(2);
        expect(new Set(rows.rows.map((r) => r.api_type))).toEqual(new Set(['responses']));
      },
      { timeout: 10_000, interval: 100 },
    );
  });
});

describe('POST /responses: structured output and refusals', () => {
  it('answers text.format json_schema with JSON of the schema', async () => {
    const r = await client.responses.create({
      model: MODEL,
      input: 'A city and its population',
      text: {
        format: {
          type: 'json_schema',
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string' }, population: { type: 'integer' } },
            required: ['name', 'population'],
            additionalProperties: false,
          },
        },
      },
    });
    const parsed = JSON.parse(r.output_text) as { name: unknown; population: unknown };
    expect(typeof parsed.name).toBe('string');
    expect(typeof parsed.population).toBe('number');
    expect(r.text?.format).toMatchObject({ type: 'json_schema', name: 'city' });
  });

  it('withholds a hosted tool from the provider and says so in a header and the generation record', async () => {
    const { data, response } = await client.responses
      .create({ model: CLAUDE, input: 'Search the web', tools: [{ type: 'web_search' }, weatherTool] })
      .withResponse();
    expect(response.headers.get('x-tollgate-withheld-tools')).toBe('web_search');
    const record = await stack.waitForGeneration(data.id);
    expect(record.body.data).toMatchObject({ api_type: 'responses', withheld_tools: ['web_search'] });
  });

  it("refuses what needs stored state with a 400 naming the field, in OpenAI's error shape", async () => {
    const err = await client.responses
      .create({ model: MODEL, input: 'x', previous_response_id: 'resp_1' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'previous_response_id',
    });
  });

  it("holds a key to its allowed models and its spend limit, in OpenAI's error shape", async () => {
    const allowed = await stack.createInferenceKey(stack.account.managementKey, {
      allowed_models: ['openai/*'],
    });
    const narrow = new OpenAI({ baseURL: stack.baseUrl, apiKey: allowed.key, maxRetries: 0 });
    expect((await narrow.responses.create({ model: MODEL, input: 'x' })).status).toBe('completed');
    const refused = await narrow.responses.create({ model: CLAUDE, input: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: 'permission_error',
      code: 403,
    });
    // The worst case (max_output_tokens at the model's price) does not fit a tiny limit.
    const capped = await stack.createInferenceKey(stack.account.managementKey, {
      limit: 0.000001,
      limit_reset: 'daily',
    });
    const poor = new OpenAI({ baseURL: stack.baseUrl, apiKey: capped.key, maxRetries: 0 });
    const over = await poor.responses
      .create({ model: MODEL, input: 'x', max_output_tokens: 1000 })
      .catch((e: unknown) => e);
    expect(over).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((over as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: 'insufficient_quota',
      metadata: { error_type: 'key_limit_exceeded' },
    });
  });

  it('a key out of money gets an OpenAI-shaped 402 that the SDK raises', async () => {
    const broke = await stack.createAccount();
    const { key } = await stack.createInferenceKey(broke.managementKey);
    const poor = new OpenAI({ baseURL: stack.baseUrl, apiKey: key, maxRetries: 0 });
    const err = await poor.responses.create({ model: MODEL, input: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.error).toMatchObject({
      type: 'insufficient_quota',
      code: 402,
      metadata: { error_type: 'payment_required' },
    });
    expect(e.type).toBe('insufficient_quota');
    expect(e.message).toMatch(/credit/i);
  });
});

describe('POST /responses: billing', () => {
  it('one request is one generation record and one spend entry, streamed or not (LiteLLM #15740)', async () => {
    const { key, hash } = await stack.createInferenceKey(stack.account.managementKey);
    const own = new OpenAI({ baseURL: stack.baseUrl, apiKey: key, maxRetries: 0 });
    const ids: string[] = [];
    const costs: number[] = [];
    for (const model of [MODEL, CLAUDE]) {
      const r = await own.responses.create({ model, input: 'One' });
      ids.push(r.id);
      costs.push((r.usage as unknown as { cost: number }).cost);
      const s = await own.responses.stream({ model, input: 'Two' }).finalResponse();
      ids.push(s.id);
      costs.push((s.usage as unknown as { cost: number }).cost);
    }
    await vi.waitFor(
      async () => {
        const rows = await db.query('select id, total_cost from billing.generations where key_id = $1', [
          hash,
        ]);
        expect(rows.rowCount).toBe(ids.length);
      },
      { timeout: 10_000, interval: 100 },
    );
    const doors = await db.query<{ api_type: string }>(
      'select distinct api_type from billing.generations where key_id = $1',
      [hash],
    );
    expect(doors.rows).toEqual([{ api_type: 'responses' }]);
    const gens = await db.query<{ id: string; total_cost: string }>(
      'select id, total_cost::text from billing.generations where key_id = $1 order by id',
      [hash],
    );
    expect(gens.rows.map((g) => g.id).sort()).toEqual([...ids].sort());
    const total = gens.rows.reduce((sum, g) => sum + Number(g.total_cost), 0);
    expect(total).toBeCloseTo(
      costs.reduce((a, b) => a + b, 0),
      12,
    );
    // Every spend period of the key holds exactly the sum of its records: nothing counted twice.
    const spend = await db.query<{ period: string; amount: string }>(
      'select period, amount::text from billing.key_spend where key_id = $1',
      [hash],
    );
    expect(spend.rowCount).toBeGreaterThan(0);
    for (const row of spend.rows) expect(Number(row.amount)).toBeCloseTo(total, 12);
  });
});
