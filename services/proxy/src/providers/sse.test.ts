import { describe, expect, it } from 'vitest';
import { hasFinishReason, hasUsage, mayHaveError, rewriteChunk } from '../doors/chat/chunk';
import { SseReader } from './sse';

const enc = new TextEncoder();

describe('SseReader', () => {
  it('emits each event as soon as its blank line arrives, across arbitrary byte splits', () => {
    const text = 'data: {"a":1}\n\ndata: {"b":"é€😀"}\n\n: comment\n\ndata: [DONE]\n\n';
    const bytes = enc.encode(text);
    for (let split = 1; split < bytes.length; split++) {
      const r = new SseReader();
      const events = [...r.push(bytes.slice(0, split)), ...r.push(bytes.slice(split)), ...r.end()];
      expect(events.map((e) => e.data)).toEqual(['{"a":1}', '{"b":"é€😀"}', '[DONE]']);
    }
  });

  it('handles CRLF and lone CR line endings, event types and multi-line data', () => {
    const r = new SseReader();
    const events = [
      ...r.push(enc.encode('event: error\r\ndata: {"x":\r\ndata: 1}\r\n\r\n')),
      ...r.push(enc.encode('data:nospace\r\r')),
      ...r.end(),
    ];
    expect(events).toEqual([
      { type: 'error', data: '{"x":\n1}' },
      { type: '', data: 'nospace' },
    ]);
  });

  it('returns nothing until an event is complete, and flushes a trailing event at end', () => {
    const r = new SseReader();
    expect(r.push(enc.encode('data: {"partial"'))).toEqual([]);
    expect(r.push(enc.encode(':1}\n'))).toEqual([]);
    expect(r.end()).toEqual([{ type: '', data: '{"partial":1}' }]);
  });
});

describe('chunk rewriting', () => {
  const chunk =
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":"\\"id\\":\\"x\\" \\"usage\\":{"},"finish_reason":null}],"usage":null}';

  it('rewrites id and model without touching content', () => {
    const out = rewriteChunk(chunk, 'gen-1-abc', 'vendor/model');
    expect(out?.upstreamId).toBe('chatcmpl-1');
    const parsed = JSON.parse(out!.text);
    expect(parsed.id).toBe('gen-1-abc');
    expect(parsed.model).toBe('vendor/model');
    expect(parsed.choices).toEqual(JSON.parse(chunk).choices);
  });

  it('falls back to parsing for other layouts and leaves non-JSON alone', () => {
    const out = rewriteChunk('{ "object": "x", "id": "a\\"b", "model": "m" }', 'gen-1-x', 'v/m');
    expect(JSON.parse(out!.text)).toEqual({ object: 'x', id: 'gen-1-x', model: 'v/m' });
    expect(out?.upstreamId).toBe('a"b');
    expect(rewriteChunk('not json', 'gen', 'm')).toBeNull();
  });

  it('tells usage, error and finish chunks from content that merely mentions them', () => {
    expect(hasUsage(chunk)).toBe(false);
    expect(mayHaveError(chunk)).toBe(false);
    expect(hasFinishReason(chunk)).toBe(false);
    expect(hasUsage('{"id":"x","choices":[],"usage": {"prompt_tokens":1}}')).toBe(true);
    expect(mayHaveError('{"error":{"message":"boom"}}')).toBe(true);
    expect(hasFinishReason('{"choices":[{"finish_reason":"stop"}]}')).toBe(true);
  });
});
