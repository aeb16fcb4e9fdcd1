import { describe, expect, it } from 'vitest';
import { SseReader } from './sse';

const enc = new TextEncoder();

describe('SseReader (the one reader, as text events)', () => {
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
