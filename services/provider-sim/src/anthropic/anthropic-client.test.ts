import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../http/app';

let sim: ProviderSim;
let client: Anthropic;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-ant-sim' });
  client = new Anthropic({ baseURL: sim.url, apiKey: 'sk-ant-sim', maxRetries: 0 });
});
afterAll(() => sim.close());

// `sim` is not part of the Anthropic types: the client passes unknown body fields through.
const simBody = (sim: Record<string, unknown>) => ({ sim }) as unknown as Record<string, never>;
const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'Weather of a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

describe('the official Anthropic client against the simulator', () => {
  it('creates a message', async () => {
    const m = await client.messages.create({
      model: 'claude-sonnet-4',
      max_tokens: 256,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(m.type).toBe('message');
    expect(m.stop_reason).toBe('end_turn');
    expect(m.content[0]!.type).toBe('text');
    expect(m.usage.input_tokens).toBeGreaterThan(0);
  });

  it('streams and assembles the same message with cumulative usage', async () => {
    const params = {
      model: 'claude-sonnet-4',
      max_tokens: 256,
      messages: [{ role: 'user' as const, content: 'Hi' }],
      ...simBody({ cached_tokens: 3, cache_write_tokens: 2 }),
    };
    const plain = await client.messages.create(params);
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content).toEqual(plain.content);
    expect(final.usage).toMatchObject({
      input_tokens: plain.usage.input_tokens,
      output_tokens: plain.usage.output_tokens,
      cache_read_input_tokens: 3,
      cache_creation_input_tokens: 2,
    });
  });

  it('streams a tool call that the client parses into its input', async () => {
    const final = await client.messages
      .stream({
        model: 'claude-sonnet-4',
        max_tokens: 256,
        tools,
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const call = final.content[0] as Anthropic.ToolUseBlock;
    expect(call.type).toBe('tool_use');
    expect(typeof (call.input as { city: unknown }).city).toBe('string');
    // …and the tool result round trip is accepted.
    const answer = await client.messages.create({
      model: 'claude-sonnet-4',
      max_tokens: 256,
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '21 degrees' }] },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
  });

  it('raises the SDK error classes for rate limit, overload and bad key', async () => {
    const body = {
      model: 'claude-sonnet-4',
      max_tokens: 16,
      messages: [{ role: 'user' as const, content: 'Hi' }],
    };
    await expect(
      client.messages.create({ ...body, ...simBody({ error_status: 429 }) }),
    ).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    const overloaded = await client.messages
      .create({ ...body, ...simBody({ error_status: 529 }) })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    const bad = new Anthropic({ baseURL: sim.url, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.messages.create(body)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('surfaces a mid-stream overloaded_error as an error of the stream', async () => {
    const stream = client.messages.stream({
      model: 'claude-sonnet-4',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Hi' }],
      ...simBody({ error_after_chunks: 2 }),
    });
    await expect(stream.finalMessage()).rejects.toThrow(/Overloaded/);
  });
});
