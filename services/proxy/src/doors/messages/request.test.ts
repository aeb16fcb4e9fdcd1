import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { nativeBody, parseMessagesRequest } from './request';

const REASONING = { reasoning: true };
const PLAIN = { reasoning: false };
const base = { model: 'anthropic/claude-sonnet-4.5', max_tokens: 1024 };

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError');
}

describe('parseMessagesRequest: server tools billed beyond tokens', () => {
  it.each([
    ['web_search_20250305', 'web_search'],
    ['code_execution_20250825', 'code_execution'],
  ])('refuses %s on every path (the catalog does not price it)', (type, name) => {
    for (const options of [REASONING, PLAIN]) {
      const err = errorOf(() =>
        parseMessagesRequest(
          { ...base, messages: [{ role: 'user', content: 'x' }], tools: [{ type, name }] },
          options,
        ),
      );
      expect(err.status).toBe(400);
      expect(err.metadata).toMatchObject({ field: 'tools.0.type' });
    }
  });
});

describe('parseMessagesRequest: shape checks (400 naming the field)', () => {
  it.each([
    [{ max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, 'model'],
    [{ model: 'm', messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    [{ model: 'm', max_tokens: 0, messages: [{ role: 'user', content: 'x' }] }, 'max_tokens'],
    [{ model: 'm', max_tokens: 5 }, 'messages'],
    [{ model: 'm', max_tokens: 5, messages: [] }, 'messages'],
    [{ model: 'm', max_tokens: 5, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role'],
    [{ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 5 }] }, 'messages.0.content'],
    [{ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream'],
    [
      { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], metadata: { user_id: 3 } },
      'metadata.user_id',
    ],
    [
      { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], thinking: { type: 'on' } },
      'thinking.type',
    ],
    [
      { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'x' } },
      'tool_choice.type',
    ],
  ])('refuses %j naming %s', (body, field) => {
    const e = errorOf(() => parseMessagesRequest(body, PLAIN));
    expect(e.status).toBe(400);
    expect(e.message.startsWith(`${field}:`)).toBe(true);
  });
});

describe('parseMessagesRequest: the canonical (OpenAI chat) request', () => {
  it('translates system blocks, system turns, text, images, documents and tool turns', () => {
    const r = parseMessagesRequest(
      {
        ...base,
        system: [
          { type: 'text', text: 'You are terse.' },
          { type: 'text', text: 'Be kind.', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look', cache_control: { type: 'ephemeral' } },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
              { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc text' } },
              {
                type: 'document',
                title: 'r.pdf',
                source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' },
              },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hmm', signature: 'sig' },
              { type: 'text', text: 'Running.' },
              { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
            ],
          },
          { role: 'system', content: 'A reminder.' },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: 'a\nb',
                cache_control: { type: 'ephemeral' },
              },
              { type: 'text', text: 'and now?' },
            ],
          },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'false' } }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_2',
                is_error: true,
                content: [{ type: 'text', text: 'exit 1' }],
              },
            ],
          },
        ],
      },
      PLAIN,
    );
    expect(r.untranslatable).toEqual([]);
    expect(r.chat.messages).toEqual([
      { role: 'system', content: 'You are terse.\n\nBe kind.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://x.test/a.png' } },
          { type: 'text', text: 'doc text' },
          { type: 'file', file: { filename: 'r.pdf', file_data: 'data:application/pdf;base64,JVBE' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Running.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'system', content: 'A reminder.' },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'a\nb' },
      { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_2', type: 'function', function: { name: 'Bash', arguments: '{"command":"false"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: exit 1' },
    ]);
    expect(r.chat.max_tokens).toBe(1024);
    expect(r.chat.stream).toBe(false);
  });

  it('translates tools, tool_choice, stop sequences, sampling and metadata.user_id', () => {
    const r = parseMessagesRequest(
      {
        ...base,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [
          {
            name: 'Bash',
            description: 'Run',
            input_schema: { type: 'object', properties: {} },
            cache_control: { type: 'ephemeral' },
          },
          { name: 'Later', input_schema: { type: 'object' }, defer_loading: true },
        ],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        stop_sequences: ['END'],
        temperature: 0.2,
        top_p: 0.9,
        metadata: { user_id: '{"session_id":"s1"}' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        service_tier: 'auto',
      },
      PLAIN,
    );
    expect(r.untranslatable).toEqual([]);
    expect(r.stream).toBe(true);
    expect(r.userId).toBe('{"session_id":"s1"}');
    expect(r.chat).toMatchObject({
      stream: true,
      tools: [
        {
          type: 'function',
          function: { name: 'Bash', description: 'Run', parameters: { type: 'object', properties: {} } },
        },
        { type: 'function', function: { name: 'Later', parameters: { type: 'object' } } },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      stop: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      user: '{"session_id":"s1"}',
    });
    expect(r.chat).not.toHaveProperty('context_management');
    expect(r.chat).not.toHaveProperty('service_tier');
    const named = parseMessagesRequest(
      {
        ...base,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ name: 'T', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'T' },
      },
      PLAIN,
    );
    expect(named.chat.tool_choice).toEqual({ type: 'function', function: { name: 'T' } });
  });

  it('maps thinking and output_config.effort to reasoning_effort for reasoning models only', () => {
    const msg = { messages: [{ role: 'user', content: 'x' }] };
    const enabled = (budget: number) =>
      parseMessagesRequest(
        { ...base, ...msg, thinking: { type: 'enabled', budget_tokens: budget } },
        REASONING,
      ).chat;
    expect(enabled(1024).reasoning_effort).toBe('low');
    expect(enabled(8000).reasoning_effort).toBe('medium');
    expect(enabled(31999).reasoning_effort).toBe('high');
    expect(enabled(1024).max_completion_tokens).toBe(1024);
    const adaptive = parseMessagesRequest(
      {
        ...base,
        ...msg,
        thinking: { type: 'adaptive', display: 'omitted' },
        output_config: { effort: 'xhigh' },
      },
      REASONING,
    );
    expect(adaptive.chat.reasoning_effort).toBe('high');
    expect(adaptive.untranslatable).toEqual([]);
    const plain = parseMessagesRequest(
      { ...base, ...msg, thinking: { type: 'adaptive' }, output_config: { effort: 'high' } },
      PLAIN,
    );
    expect(plain.chat).not.toHaveProperty('reasoning_effort');
    expect(plain.untranslatable).toEqual([]);
    const off = parseMessagesRequest(
      { ...base, ...msg, thinking: { type: 'disabled' }, output_config: { effort: 'low' } },
      REASONING,
    );
    expect(off.chat).not.toHaveProperty('reasoning_effort');
  });

  it('translates output_config.format json_schema to response_format', () => {
    const r = parseMessagesRequest(
      {
        ...base,
        messages: [{ role: 'user', content: 'x' }],
        output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
      },
      PLAIN,
    );
    expect(r.chat.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema: { type: 'object' }, strict: true },
    });
  });

  it('moves images of a tool result into a user message after the tool messages (tool messages carry text only)', () => {
    const r = parseMessagesRequest(
      {
        ...base,
        messages: [
          { role: 'user', content: 'look at it' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.png' } }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: [
                  { type: 'text', text: 'the image:' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } },
                ],
              },
              { type: 'text', text: 'what is it?' },
            ],
          },
        ],
      },
      PLAIN,
    );
    expect(r.untranslatable).toEqual([]);
    expect((r.chat.messages as unknown[]).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'toolu_1', content: 'the image:' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Attachments of the result of tool call toolu_1:' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
          { type: 'text', text: 'what is it?' },
        ],
      },
    ]);
  });

  it('lists what an OpenAI-format provider cannot be given, with the field path', () => {
    const r = parseMessagesRequest(
      {
        ...base,
        top_k: 5,
        mcp_servers: [{ type: 'url', url: 'https://m.test' }],
        tools: [
          { type: 'web_fetch_20250910', name: 'web_fetch' },
          { name: 'T', input_schema: { type: 'object' }, input_examples: [{}] },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'url', url: 'https://x.test/a.pdf' } },
              { type: 'search_result', source: 's', title: 't', content: [] },
              {
                type: 'tool_result',
                tool_use_id: 'x',
                content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }],
              },
            ],
          },
          {
            role: 'assistant',
            content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }],
          },
        ],
      },
      PLAIN,
    );
    expect(r.untranslatable.map((u) => u.field)).toEqual([
      'messages.0.content.0.source',
      'messages.0.content.1',
      'messages.0.content.2.content.0.source',
      'messages.1.content.0',
      'top_k',
      'mcp_servers',
      'tools.0.type',
      'tools.1.input_examples',
    ]);
  });
});

describe('nativeBody', () => {
  it('replaces only the model id, and keeps sim for simulator providers only', () => {
    const body = {
      model: 'anthropic/x',
      max_tokens: 5,
      messages: [],
      thinking: { type: 'adaptive' },
      sim: { ttft_ms: 1 },
    };
    expect(nativeBody(body, 'claude-x', true)).toEqual({ ...body, model: 'claude-x' });
    expect(nativeBody(body, 'claude-x', false)).not.toHaveProperty('sim');
    expect(body.model).toBe('anthropic/x');
  });
});
