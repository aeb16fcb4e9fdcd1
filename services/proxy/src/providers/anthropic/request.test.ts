import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { buildMessagesRequest, DEFAULT_MAX_TOKENS, messagesHeaders, messagesPath } from './request';

const build = (body: Record<string, unknown>, simulator = false) =>
  buildMessagesRequest(body, { model: 'claude-sonnet-4-20250514', simulator });

function refusal(body: Record<string, unknown>): AppError {
  try {
    build(body);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected a 400');
}

describe('buildMessagesRequest', () => {
  it('moves system and developer messages to the top-level system, sets the provider model and a default max_tokens', () => {
    const out = build({
      model: 'anthropic/claude-sonnet-4',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(out).toEqual({
      model: 'claude-sonnet-4-20250514',
      max_tokens: DEFAULT_MAX_TOKENS,
      system: 'Be brief.\n\nAnswer in French.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    });
  });

  it('passes prompt-caching breakpoints (cache_control) on system, user and image parts and tools', () => {
    const out = build({
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'You are a librarian.' },
            { type: 'text', text: 'BOOK '.repeat(10), cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Summarise', cache_control: { type: 'ephemeral', ttl: '1h' } },
            {
              type: 'image_url',
              image_url: { url: 'https://x.test/a.png' },
              cache_control: { type: 'ephemeral' },
            },
          ],
        },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'f', parameters: { type: 'object' } },
          cache_control: { type: 'ephemeral' },
        },
      ],
    });
    expect(out.system).toEqual([
      { type: 'text', text: 'You are a librarian.' },
      { type: 'text', text: 'BOOK '.repeat(10), cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Be brief.' },
    ]);
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarise', cache_control: { type: 'ephemeral', ttl: '1h' } },
          {
            type: 'image',
            source: { type: 'url', url: 'https://x.test/a.png' },
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
    expect(out.tools).toEqual([
      { name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('refuses a malformed cache_control with 400 naming the field', () => {
    const user = (cache_control: unknown) => ({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control }] }],
    });
    expect(refusal(user({ type: 'persistent' })).message).toBe(
      "messages[0].content[0].cache_control: must be {type: 'ephemeral'}",
    );
    expect(refusal(user({ type: 'ephemeral', ttl: '2d' })).message).toBe(
      "messages[0].content[0].cache_control.ttl: must be '5m' or '1h'",
    );
  });

  it('translates image parts: data: URIs to base64 sources, URLs to url sources', () => {
    const out = build({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
          ],
        },
      ],
    });
    expect((out.messages as { content: unknown[] }[])[0]!.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('translates tools, tool_choice, assistant tool calls and tool results (merged into one user turn)', () => {
    const out = build({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '21C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '25C' }] },
        { role: 'user', content: 'Thanks, which is warmer?' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    expect(out.tools).toEqual([
      {
        name: 'weather',
        description: 'Weather',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ]);
    expect(out.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(out.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: '21C' }] },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '25C' }] },
          { type: 'text', text: 'Thanks, which is warmer?' },
        ],
      },
    ]);
  });

  it('maps tool_choice forms', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const choice = (tool_choice: unknown) =>
      build({ messages: [{ role: 'user', content: 'x' }], tools, tool_choice }).tool_choice;
    expect(choice('auto')).toEqual({ type: 'auto' });
    expect(choice('none')).toEqual({ type: 'none' });
    expect(choice({ type: 'function', function: { name: 'f' } })).toEqual({ type: 'tool', name: 'f' });
    expect(choice(undefined)).toBeUndefined();
    expect(build({ messages: [{ role: 'user', content: 'x' }], tools }).tools).toEqual([
      { name: 'f', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  it('maps stop, temperature (capped at 1), top_p, the smaller max token limit, user, stream', () => {
    const out = build({
      messages: [{ role: 'user', content: 'x' }],
      stop: 'END',
      temperature: 1.7,
      top_p: 0.9,
      max_tokens: 300,
      max_completion_tokens: 200,
      user: 'u-42',
      stream: true,
      stream_options: { include_usage: true },
      frequency_penalty: 0.5,
      seed: 7,
      logprobs: true,
    });
    expect(out).toEqual({
      model: 'claude-sonnet-4-20250514',
      max_tokens: 200,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      stop_sequences: ['END'],
      temperature: 1,
      top_p: 0.9,
      metadata: { user_id: 'u-42' },
      stream: true,
    });
    expect(
      build({ messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b'], max_completion_tokens: 9 }),
    ).toMatchObject({
      stop_sequences: ['a', 'b'],
      max_tokens: 9,
    });
  });

  it('forwards sim only to simulator providers', () => {
    const body = { messages: [{ role: 'user', content: 'x' }], sim: { error_status: 529 } };
    expect(build(body).sim).toBeUndefined();
    expect(build(body, true).sim).toEqual({ error_status: 529 });
  });

  it('refuses what cannot be translated with 400 naming the field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ messages: [{ role: 'user', content: 'x' }], n: 2 }, 'n'],
      [
        { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
        'messages[0].content[0].type',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x' } }] }] },
        'messages[0].content[0].image_url.url',
      ],
      [{ messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
      [
        {
          messages: [
            {
              role: 'assistant',
              tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1]' } }],
            },
          ],
        },
        'messages[0].tool_calls[0].function.arguments',
      ],
      [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
      [{ messages: [{ role: 'system', content: 'only a system prompt' }] }, 'messages'],
      [{ messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }, 'max_tokens'],
      [
        {
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'function', function: { name: 'f' } }],
          tool_choice: 'sometimes',
        },
        'tool_choice',
      ],
    ];
    for (const [body, field] of cases) {
      const err = refusal(body);
      expect(err.status, err.message).toBe(400);
      expect(err.type).toBe('bad_request');
      expect(err.message.startsWith(`${field}: `), err.message).toBe(true);
      expect(err.metadata.param).toBe(field);
    }
  });
});

describe('messagesHeaders / messagesPath', () => {
  it('sends the key as x-api-key with anthropic-version, never as a bearer token', () => {
    const h = messagesHeaders('sk-ant-1');
    expect(h).toMatchObject({
      'x-api-key': 'sk-ant-1',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    });
    expect(h.authorization).toBeUndefined();
    expect(messagesHeaders(undefined)['x-api-key']).toBeUndefined();
  });

  it('appends /messages to the base path', () => {
    expect(messagesPath('https://api.anthropic.com/v1')).toBe('/v1/messages');
    expect(messagesPath('http://127.0.0.1:9/v1/')).toBe('/v1/messages');
  });
});
