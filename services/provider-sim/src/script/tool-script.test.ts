import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../http/app';
import { toolScript } from './tool-script';

/** Scripted function calls on the chat, Anthropic and Responses endpoints, read by the official clients. */

const MARK = 'List it. <sim:call name="exec_command">{"cmd": "echo tollgate-ok"}</sim:call>';

let sim: ProviderSim;
let openai: OpenAI;
let anthropic: Anthropic;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-sim' });
  openai = new OpenAI({ baseURL: sim.baseUrl, apiKey: 'sk-sim', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: sim.url, apiKey: 'sk-sim', maxRetries: 0 });
});
afterAll(() => sim.close());

const chatTool = {
  type: 'function' as const,
  function: { name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
};

describe('toolScript', () => {
  it('calls the offered tools the last user turn names, then answers with the tool output', () => {
    expect(toolScript([{ role: 'user', text: MARK }], ['exec_command'])).toEqual({
      kind: 'calls',
      calls: [{ name: 'exec_command', arguments: '{"cmd":"echo tollgate-ok"}' }],
    });
    expect(
      toolScript(
        [
          { role: 'user', text: MARK },
          { role: 'assistant', text: '' },
          { role: 'tool', text: 'tollgate-ok\n' },
        ],
        ['exec_command'],
      ),
    ).toEqual({ kind: 'answer', text: 'Tool output: tollgate-ok' });
    expect(toolScript([{ role: 'user', text: MARK }], ['other'])).toBeNull();
    expect(toolScript([{ role: 'user', text: 'no marker' }], ['exec_command'])).toBeNull();
  });
});

describe('scripted calls on POST /v1/chat/completions', () => {
  it('answers tool_calls, then the text carrying the tool output (JSON)', async () => {
    const first = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: MARK }],
      tools: [chatTool],
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call).toMatchObject({
      type: 'function',
      function: { name: 'exec_command', arguments: '{"cmd":"echo tollgate-ok"}' },
    });
    const second = await openai.chat.completions.create({
      model: 'm',
      tools: [chatTool],
      messages: [
        { role: 'user', content: MARK },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: call.id, content: 'tollgate-ok' },
      ],
    });
    expect(second.choices[0]!.message.content).toBe('Tool output: tollgate-ok');
    expect(second.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it('streams the call with its arguments in pieces and the usage chunk', async () => {
    const stream = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: MARK }],
      tools: [chatTool],
      stream: true,
      stream_options: { include_usage: true },
    });
    let args = '';
    let name = '';
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const c of stream) {
      const tc = c.choices[0]?.delta.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      args += tc?.function?.arguments ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      usage = c.usage ?? usage;
    }
    expect({ name, args, finish }).toEqual({
      name: 'exec_command',
      args: '{"cmd":"echo tollgate-ok"}',
      finish: 'tool_calls',
    });
    expect(usage).toMatchObject({ completion_tokens: expect.any(Number) });
  });
});

describe('scripted calls on POST /v1/messages', () => {
  it('answers tool_use, then the text carrying the tool result', async () => {
    const tools = [
      {
        name: 'exec_command',
        input_schema: { type: 'object' as const, properties: { cmd: { type: 'string' } } },
      },
    ];
    const first = await anthropic.messages.create({
      model: 'c',
      max_tokens: 100,
      tools,
      messages: [{ role: 'user', content: MARK }],
    });
    const use = first.content.find((b) => b.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'exec_command', input: { cmd: 'echo tollgate-ok' } });
    const second = await anthropic.messages
      .stream({
        model: 'c',
        max_tokens: 100,
        tools,
        messages: [
          { role: 'user', content: MARK },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'tollgate-ok' }] },
        ],
      })
      .finalMessage();
    expect(second.content[0]).toMatchObject({ type: 'text', text: 'Tool output: tollgate-ok' });
  });
});

describe('POST /v1/responses', () => {
  const tools = [
    { type: 'function' as const, name: 'exec_command', parameters: { type: 'object' }, strict: false },
    { type: 'web_search' as const },
  ];

  it('streams a reasoning item with encrypted content and the scripted call; the SDK accumulates them', async () => {
    const stream = openai.responses.stream({
      model: 'm',
      input: [{ role: 'user', content: MARK }],
      tools,
      reasoning: { summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
    });
    const final = await stream.finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'function_call']);
    const reasoning = final.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.encrypted_content).toMatch(/^sim1\./);
    const call = final.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'exec_command', arguments: '{"cmd":"echo tollgate-ok"}' });
    expect(final.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);

    // The reasoning item goes back as it came (encrypted content intact) with the call and its output.
    const second = await openai.responses.create({
      model: 'm',
      tools,
      store: false,
      input: [
        { role: 'user', content: MARK },
        reasoning,
        call,
        { type: 'function_call_output', call_id: call.call_id, output: 'tollgate-ok' },
      ],
    });
    expect(second.output_text).toBe('Tool output: tollgate-ok');
  });

  it('refuses altered encrypted reasoning and stored state like a provider', async () => {
    const altered = openai.responses.create({
      model: 'm',
      input: [
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'sim1.AAAA.0000000000000000' },
        { role: 'user', content: 'x' },
      ],
    });
    await expect(altered).rejects.toMatchObject({ status: 400, param: 'input[0].encrypted_content' });
    await expect(
      openai.responses.create({ model: 'm', input: 'x', previous_response_id: 'resp_1' }),
    ).rejects.toMatchObject({
      status: 400,
    });
  });

  it('answers plain text with usage when nothing is scripted', async () => {
    const r = await openai.responses.create({ model: 'm', input: 'Hello', max_output_tokens: 3 });
    expect(r.status).toBe('incomplete');
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: 3 });
  });
});
