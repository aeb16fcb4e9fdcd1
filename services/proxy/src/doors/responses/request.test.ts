import { readFileSync } from 'node:fs';
import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { parseResponsesRequest } from './request';

type Json = Record<string, unknown>;

const codex = JSON.parse(readFileSync(new URL('./codex-request.fixture.json', import.meta.url), 'utf8')) as {
  body: Json;
};

function refusal(body: unknown): AppError {
  try {
    parseResponsesRequest(body);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`);
}

describe('parseResponsesRequest', () => {
  it('turns a string input into one user message and echoes the defaults', () => {
    const r = parseResponsesRequest({ model: 'm', input: 'Hello' });
    expect(r.chat).toEqual({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], stream: false });
    expect(r.stream).toBe(false);
    expect(r.withheld).toEqual([]);
    expect(r.echo.tool_choice).toBe('auto');
    expect(r.echo.text).toEqual({ format: { type: 'text' } });
  });

  it('translates instructions, developer/system/user/assistant messages, images, calls and their outputs', () => {
    const r = parseResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      stream: true,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Dev.' }] },
        { role: 'system', content: 'Sys.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look: ' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'c2', name: 'spawn_agent', namespace: 'agents', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'Sunny' },
        {
          type: 'function_call_output',
          call_id: 'c2',
          output: [
            { type: 'input_text', text: 'spawned' },
            { type: 'input_image', image_url: 'https://example.com/a.png' },
          ],
        },
      ],
    });
    expect(r.stream).toBe(true);
    expect(r.chat.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Dev.' },
      { role: 'system', content: 'Sys.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look: ' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'c2', type: 'function', function: { name: 'agents__spawn_agent', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Sunny' },
      { role: 'tool', tool_call_id: 'c2', content: 'spawned' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
    ]);
  });

  it('maps the generation options onto chat fields', () => {
    const r = parseResponsesRequest({
      model: 'm',
      input: 'x',
      max_output_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u1',
      reasoning: { effort: 'low', summary: 'auto' },
      text: {
        format: { type: 'json_schema', name: 'city', schema: { type: 'object' }, strict: true },
        verbosity: 'low',
      },
      metadata: { a: 'b' },
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'k',
      client_metadata: { turn_id: 't' },
      store: false,
      background: false,
      parallel_tool_calls: false,
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }],
    });
    expect(r.chat).toMatchObject({
      max_completion_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u1',
      reasoning_effort: 'low',
      verbosity: 'low',
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'city', schema: { type: 'object' }, strict: true },
      },
    });
    // Accepted, not forwarded: metadata, include, prompt_cache_key, client_metadata, store.
    for (const f of ['metadata', 'include', 'prompt_cache_key', 'client_metadata', 'store', 'background']) {
      expect(r.chat).not.toHaveProperty(f);
    }
    expect(r.encryptedReasoning).toBe(true);
    const routed = parseResponsesRequest({
      model: 'm',
      input: 'x',
      models: ['a/b'],
      provider: { order: ['sim'] },
    });
    expect(routed.chat).toMatchObject({ models: ['a/b'], provider: { order: ['sim'] } });
    expect(r.echo).toMatchObject({
      metadata: { a: 'b' },
      max_output_tokens: 300,
      reasoning: { effort: 'low', summary: 'auto' },
    });
  });

  it('flattens namespace tools, withholds hosted tools and names them', () => {
    const r = parseResponsesRequest({
      model: 'm',
      input: 'x',
      tools: [
        {
          type: 'function',
          name: 'exec_command',
          parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
        },
        { type: 'web_search', external_web_access: true },
        {
          type: 'namespace',
          name: 'multi_agent_v1',
          description: 'd',
          tools: [{ type: 'function', name: 'spawn_agent' }],
        },
        { type: 'file_search', vector_store_ids: ['v'] },
        { type: 'web_search' },
      ],
      tool_choice: { type: 'function', name: 'spawn_agent', namespace: 'multi_agent_v1' },
    });
    expect((r.chat.tools as Json[]).map((t) => (t.function as Json).name)).toEqual([
      'exec_command',
      'multi_agent_v1__spawn_agent',
    ]);
    expect(r.chat.tool_choice).toEqual({
      type: 'function',
      function: { name: 'multi_agent_v1__spawn_agent' },
    });
    expect(r.withheld).toEqual(['web_search', 'file_search']);
    expect(r.names.call('multi_agent_v1__spawn_agent')).toEqual({
      name: 'spawn_agent',
      namespace: 'multi_agent_v1',
    });
    expect(r.names.call('exec_command')).toEqual({ name: 'exec_command', namespace: null });
  });

  it('gives the model only the functions an allowed_tools choice allows', () => {
    const r = parseResponsesRequest({
      model: 'm',
      input: 'x',
      tools: [
        { type: 'function', name: 'a' },
        { type: 'function', name: 'b' },
      ],
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }] },
    });
    expect((r.chat.tools as Json[]).map((t) => (t.function as Json).name)).toEqual(['b']);
    expect(r.chat.tool_choice).toBe('required');
  });

  it('accepts everything Codex 0.169 sends, on every provider format', () => {
    const r = parseResponsesRequest(codex.body);
    expect(r.stream).toBe(true);
    const names = (r.chat.tools as Json[]).map((t) => (t.function as Json).name);
    expect(names).toContain('exec_command');
    expect(names).toContain('multi_agent_v1__spawn_agent');
    expect(r.withheld).toEqual(['web_search']);
    const messages = r.chat.messages as Json[];
    expect(messages[0]?.role).toBe('system');
    expect(messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'run echo hi' }] });
    expect(r.chat).not.toHaveProperty('client_metadata');
    expect(r.chat).not.toHaveProperty('include');
  });

  it.each([
    [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ store: true }, 'store'],
    [{ background: true }, 'background'],
    [{ conversation: 'conv_1' }, 'conversation'],
    [{ prompt: { id: 'p' } }, 'prompt'],
    [{ truncation: 'auto' }, 'truncation'],
    [{ service_tier: 'priority' }, 'service_tier'],
    [{ tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } }, 'tool_choice'],
    [{ tools: [{ type: 'file_search' }], tool_choice: { type: 'file_search' } }, 'tool_choice'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input.0'],
    [
      { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] },
      'input.0.content.0.image_url',
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
      'input.0.content.0.type',
    ],
  ])('refuses %j with a 400 naming %s', (extra, field) => {
    const err = refusal({ model: 'm', input: 'x', ...extra });
    expect(err.status).toBe(400);
    expect(err.message.startsWith(`${field}:`) || err.metadata.field === field).toBe(true);
  });

  it.each([
    [{}, 'model: required'],
    [{ model: 'm' }, 'input: required'],
    [{ model: 'm', input: 5 }, 'input: expected a string or an array of input items'],
    [{ model: 'm', input: [] }, 'input: must contain at least one message'],
    [{ model: 'm', input: 'x', max_output_tokens: 0 }, 'max_output_tokens: expected a positive integer'],
    [{ model: 'm', input: 'x', temperature: 3 }, 'temperature: expected a number from 0 to 2'],
    [{ model: 'm', input: 'x', tools: [{ type: 'function', name: 'a.b' }] }, 'tools.0.name:'],
    [{ model: 'm', input: 'x', text: { format: { type: 'json_schema', schema: {} } } }, 'text.format.name:'],
    [{ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input.0.call_id:'],
    [{ model: 'm', input: [{ role: 'tool', content: 'x' }] }, 'input.0.role:'],
    [{ model: 'm', input: 'x', metadata: { a: 1 } }, 'metadata.a:'],
  ])('refuses a malformed body %j', (body, message) => {
    expect(refusal(body).message).toContain(message);
  });
});
