import { AppError } from '@tollgate/errors';
import { describe, expect, it } from 'vitest';
import { RAW_KEEP_CHARS } from '../chat/usage';
import { anthropicError, errorBody, errorEventOf } from './errors';
import { NativeStreamReader, nativeMessageTokens } from './native';
import { toAnthropicMessage } from './response';
import { MessagesEventWriter } from './stream';

/** SSE text → [event type, data] pairs. */
function events(text: string): [string, Record<string, unknown>][] {
  return text
    .split('\n\n')
    .filter((e) => e.length > 0)
    .map((e) => {
      const [ev, data] = e.split('\n') as [string, string];
      return [ev.slice('event: '.length), JSON.parse(data.slice('data: '.length))];
    });
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('toAnthropicMessage', () => {
  it('renders text, tool calls, stop reason and Anthropic usage', () => {
    const m = toAnthropicMessage(
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: 'Let me run it.',
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } },
                { id: 'call_2', type: 'function', function: { name: 'Bash', arguments: 'not json' } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      },
      {
        id: 'gen-1',
        model: 'openai/gpt-4o',
        tokens: { prompt: 100, completion: 20, cached: 30, cacheWrite: 10 },
      },
    );
    expect(m).toEqual({
      id: 'gen-1',
      type: 'message',
      role: 'assistant',
      model: 'openai/gpt-4o',
      content: [
        { type: 'text', text: 'Let me run it.', citations: null },
        { type: 'tool_use', id: 'call_1', name: 'Bash', input: { command: 'ls' } },
        { type: 'tool_use', id: 'call_2', name: 'Bash', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 60,
        cache_creation_input_tokens: 10,
        cache_read_input_tokens: 30,
        output_tokens: 20,
      },
    });
  });

  it.each([
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['content_filter', 'refusal'],
  ])('maps finish_reason %s to stop_reason %s', (finish, stop) => {
    const m = toAnthropicMessage(
      { choices: [{ message: { content: 'x' }, finish_reason: finish }] },
      { id: 'g', model: 'm', tokens: { prompt: 1, completion: 1 } },
    );
    expect(m.stop_reason).toBe(stop);
  });
});

describe('MessagesEventWriter', () => {
  it('renders text, thinking and a streamed tool call as Anthropic events, ending with usage', () => {
    const w = new MessagesEventWriter('gen-1', 'openai/gpt-4o');
    let out = w.start();
    out += w.chunk(chunk({ role: 'assistant', content: '' }));
    out += w.chunk(chunk({ reasoning: 'thinking…' }));
    out += w.chunk(chunk({ content: 'Hel' }));
    out += w.chunk(chunk({ content: 'lo' }));
    out += w.chunk(
      chunk({
        tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'Bash', arguments: '' } }],
      }),
    );
    out += w.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"command":' } }] }));
    out += w.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] }));
    out += w.chunk(chunk({}, 'tool_calls'));
    out += w.chunk({ id: 'c', choices: [], usage: { prompt_tokens: 9 } });
    out += w.finish({ prompt: 12, completion: 7, cached: 2 });
    const evs = events(out);
    expect(evs.map(([t]) => t)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(evs[0]?.[1]).toMatchObject({
      message: { id: 'gen-1', model: 'openai/gpt-4o', role: 'assistant', content: [] },
    });
    expect(evs[1]?.[1]).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    expect(evs[2]?.[1]).toMatchObject({ index: 0, delta: { type: 'thinking_delta', thinking: 'thinking…' } });
    expect(evs[5]?.[1]).toEqual({
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'text_delta', text: 'Hel' },
    });
    expect(evs[8]?.[1]).toEqual({
      type: 'content_block_start',
      index: 2,
      content_block: { type: 'tool_use', id: 'call_1', name: 'Bash', input: {} },
    });
    expect(evs[9]?.[1]).toEqual({
      type: 'content_block_delta',
      index: 2,
      delta: { type: 'input_json_delta', partial_json: '{"command":' },
    });
    expect(evs[12]?.[1]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: {
        input_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 2,
        output_tokens: 7,
      },
    });
  });

  it('gives each parallel tool call its own block', () => {
    const w = new MessagesEventWriter('g', 'm');
    let out = w.start();
    out += w.chunk(chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'A', arguments: '{}' } }] }));
    out += w.chunk(chunk({ tool_calls: [{ index: 1, id: 'b', function: { name: 'B', arguments: '{}' } }] }));
    out += w.finish({ prompt: 1, completion: 1 });
    const starts = events(out).filter(([t]) => t === 'content_block_start');
    expect(starts.map(([, d]) => d.index)).toEqual([0, 1]);
    expect(starts.map(([, d]) => (d.content_block as { name: string }).name)).toEqual(['A', 'B']);
  });

  it('ends an empty answer with end_turn and no blocks', () => {
    const w = new MessagesEventWriter('g', 'm');
    const evs = events(w.start() + w.chunk(chunk({}, 'stop')) + w.finish({ prompt: 3, completion: 0 }));
    expect(evs.map(([t]) => t)).toEqual(['message_start', 'message_delta', 'message_stop']);
    expect(evs[1]?.[1]).toMatchObject({ delta: { stop_reason: 'end_turn' } });
  });
});

describe('anthropicError', () => {
  it.each([
    [new AppError('bad_request', 'x'), 400, 'invalid_request_error'],
    [new AppError('unauthorized', 'x'), 401, 'authentication_error'],
    [new AppError('payment_required', 'x'), 402, 'billing_error'],
    [new AppError('key_limit_exceeded', 'x'), 402, 'billing_error'],
    [new AppError('forbidden', 'x'), 403, 'permission_error'],
    [new AppError('not_found', 'x'), 404, 'not_found_error'],
    [new AppError('payload_too_large', 'x'), 413, 'request_too_large'],
    [new AppError('rate_limited', 'x'), 429, 'rate_limit_error'],
    [new AppError('internal', 'x'), 500, 'api_error'],
    [new AppError('provider_error', 'x'), 502, 'api_error'],
    [new AppError('provider_error', 'x', {}, 529), 529, 'overloaded_error'],
    [new AppError('provider_error', 'x', {}, 400), 400, 'invalid_request_error'],
    [new AppError('service_unavailable', 'x'), 529, 'overloaded_error'],
    [new AppError('timeout', 'x'), 504, 'timeout_error'],
  ])('%s → %i %s', (err, status, type) => {
    expect(anthropicError(err)).toEqual({ status, type, message: 'x' });
  });

  it('never shows an unexpected error’s text', () => {
    expect(anthropicError(new Error('secret'))).toEqual({
      status: 500,
      type: 'api_error',
      message: 'Internal server error',
    });
  });

  it('writes the body and the stream event in Anthropic’s shape', () => {
    const e = anthropicError(new AppError('rate_limited', 'slow down'));
    expect(errorBody(e, 'gen-1')).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
      request_id: 'gen-1',
    });
    expect(errorEventOf(e)).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n',
    );
  });
});

describe('native usage', () => {
  it('reads a Message’s usage with cache reads and both cache-write durations', () => {
    expect(
      nativeMessageTokens({
        usage: {
          input_tokens: 10,
          cache_read_input_tokens: 100,
          cache_creation_input_tokens: 50,
          cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 },
          output_tokens: 7,
        },
      }),
    ).toEqual({ prompt: 160, completion: 7, cached: 100, cacheWrite: 50, cacheWrite1h: 30, reasoning: 0 });
    expect(nativeMessageTokens({ content: [] })).toBeNull();
  });

  it('reads a stream’s usage from message_start and message_delta, across split reads', () => {
    const r = new NativeStreamReader();
    const text =
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n' +
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n' +
      'event: message_stop\ndata: {"type":"message_stop"}\n\n';
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 17) r.push(bytes.subarray(i, i + 17));
    r.end();
    expect(r.tokens()).toEqual({
      prompt: 8,
      completion: 9,
      cached: 3,
      cacheWrite: 0,
      cacheWrite1h: 0,
      reasoning: 0,
    });
    expect(r.done).toBe(true);
    expect(r.stopReason).toBe('end_turn');
    expect(r.text).toBe('Hi');
  });

  it('keeps the text of many deltas in order and bounded (read only when asked for)', () => {
    const r = new NativeStreamReader(1000);
    let sent = '';
    let sse = '';
    for (let i = 0; sent.length < 3 * RAW_KEEP_CHARS; i++) {
      const piece = `word${i} `;
      sent += piece;
      sse += `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } })}\n\n`;
      if (i === 5) sse += 'event: ping\ndata: {"type": "ping"}\n\n';
    }
    r.push(Buffer.from(sse));
    r.end();
    expect(r.text).toBe(sent.slice(0, 1000));
    expect(r.extraChars).toBe(sent.length - 1000);
  });

  it('notes an error event and no end', () => {
    const r = new NativeStreamReader();
    r.push(
      Buffer.from(
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"busy"}}\n\n',
      ),
    );
    expect(r.error).toEqual({ type: 'overloaded_error', message: 'busy' });
    expect(r.done).toBe(false);
    expect(r.tokens()).toBeNull();
  });
});
