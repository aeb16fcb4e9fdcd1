import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProviderSim, startProviderSim } from '../http/app';

let sim: ProviderSim;
beforeAll(async () => {
  sim = await startProviderSim({ apiKey: 'sk-sim' });
});
afterAll(() => sim.close());

const bash = {
  name: 'Bash',
  description: 'Run a command',
  input_schema: {
    type: 'object' as const,
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};
const other = {
  name: 'Read',
  description: 'Read a file',
  input_schema: { type: 'object' as const, properties: {} },
};
const ask = 'Please do this.\n[sim:bash] echo tollgate-$((6*7))\nThanks';

describe('scripted Bash turn, Anthropic format', () => {
  const client = () => new Anthropic({ apiKey: 'sk-sim', baseURL: sim.url, maxRetries: 0 });

  it('calls Bash with the marked command, then answers with the result (streamed and not)', async () => {
    const first = await client().messages.create({
      model: 'claude-sonnet-4',
      max_tokens: 1000,
      tools: [other, bash],
      messages: [{ role: 'user', content: [{ type: 'text', text: ask }] }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ name: 'Bash', input: { command: 'echo tollgate-$((6*7))' } });
    const final = await client()
      .messages.stream({
        model: 'claude-sonnet-4',
        max_tokens: 1000,
        tools: [other, bash],
        messages: [
          { role: 'user', content: ask },
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: (use as { id: string }).id,
                content: 'tollgate-42\n\n<system-reminder>\nnoise\n</system-reminder>',
              },
            ],
          },
        ],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('end_turn');
    expect(final.content).toEqual([{ type: 'text', text: 'Bash printed: tollgate-42' }]);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it('leaves a request without the marker, or without a Bash tool, to the ordinary simulation', async () => {
    const r = await client().messages.create({
      model: 'claude-sonnet-4',
      max_tokens: 1000,
      tools: [other],
      tool_choice: { type: 'none' },
      messages: [{ role: 'user', content: ask }],
    });
    expect(r.content.every((b) => b.type === 'text')).toBe(true);
  });

  it('accepts what Claude Code sends: system turns (with anthropic-beta), context_management, output_config', async () => {
    const res = await fetch(`${sim.baseUrl}/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-sim',
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'context-management-2025-06-27',
      },
      body: JSON.stringify({
        model: 'claude-sonnet-4',
        max_tokens: 32000,
        thinking: { type: 'adaptive', display: 'omitted' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        output_config: { effort: 'high' },
        metadata: { user_id: '{"session_id":"s"}' },
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'system', content: 'a reminder' },
          { role: 'user', content: 'again' },
        ],
      }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const plain = await fetch(`${sim.baseUrl}/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-sim',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }),
    });
    expect(plain.status).toBe(400);
  });
});

describe('scripted Bash turn, OpenAI format', () => {
  const client = () => new OpenAI({ apiKey: 'sk-sim', baseURL: sim.baseUrl, maxRetries: 0 });
  const tools = [other, bash].map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.input_schema },
  }));

  it('calls Bash with tool_calls, then answers with the tool message’s text (streamed and not)', async () => {
    const first = await client().chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      messages: [{ role: 'user', content: ask }],
    });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0] as {
      id: string;
      function: { name: string; arguments: string };
    };
    expect(call.function.name).toBe('Bash');
    expect(JSON.parse(call.function.arguments)).toMatchObject({ command: 'echo tollgate-$((6*7))' });

    const stream = await client().chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'user', content: ask },
        { role: 'assistant', content: null, tool_calls: [call as never] },
        { role: 'tool', tool_call_id: call.id, content: 'tollgate-42\n' },
      ],
    });
    let text = '';
    let usage = 0;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage.completion_tokens;
    }
    expect(text).toBe('Bash printed: tollgate-42');
    expect(usage).toBeGreaterThan(0);

    const streamedCall = await client().chat.completions.create({
      model: 'gpt-4o-mini',
      tools,
      stream: true,
      messages: [{ role: 'user', content: ask }],
    });
    let args = '';
    let name = '';
    for await (const c of streamedCall) {
      const tc = c.choices[0]?.delta.tool_calls?.[0];
      name += tc?.function?.name ?? '';
      args += tc?.function?.arguments ?? '';
    }
    expect(name).toBe('Bash');
    expect(JSON.parse(args).command).toBe('echo tollgate-$((6*7))');
  });
});
