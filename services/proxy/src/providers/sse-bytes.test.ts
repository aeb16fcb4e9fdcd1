import { seededRandom } from '@tollgate/testkit';
import { describe, expect, it } from 'vitest';
import { SseBytes } from './sse';

const enc = (s: string) => Buffer.from(s, 'utf8');

/** Every event of `reads` through SseBytes, as {type, data} (data decoded for comparison). */
function viaBytes(reads: Buffer[]): Array<{ type: string; data: string }> {
  const r = new SseBytes();
  const events: Array<{ type: string; data: string }> = [];
  const sink = {
    event(type: string, buf: Buffer, start: number, end: number) {
      events.push({ type, data: buf.toString('utf8', start, end) });
    },
  };
  for (const b of reads) r.push(b, sink);
  r.end(sink);
  return events;
}

function viaStrings(reads: Buffer[]): Array<{ type: string; data: string }> {
  const r = new ReferenceReader();
  const events = reads.flatMap((b) => r.push(b));
  return [...events, ...r.end()];
}

interface SseEvent {
  type: string;
  data: string;
}

/**
 * The reference reader (the string one the proxy had before the byte reader): the grammar written
 * the plain way, on decoded text. The byte reader must agree with it on every input.
 */
class ReferenceReader {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private data: string | null = null;
  private type = '';

  /** Feeds raw bytes; returns the events completed by them (often exactly one). */
  push(bytes: Uint8Array): SseEvent[] {
    this.buffer += this.decoder.decode(bytes, { stream: true });
    return this.drain(false);
  }

  /** End of input: a last event without its blank line is dispatched (as browsers do not, but providers cut). */
  end(): SseEvent[] {
    this.buffer += this.decoder.decode();
    const events = this.drain(true);
    if (this.data !== null) {
      events.push({ type: this.type, data: this.data });
      this.data = null;
    }
    return events;
  }

  private drain(final: boolean): SseEvent[] {
    const events: SseEvent[] = [];
    const buf = this.buffer;
    let start = 0;
    for (;;) {
      const lf = buf.indexOf('\n', start);
      let cr = buf.indexOf('\r', start);
      if (cr !== -1 && lf !== -1 && cr > lf) cr = -1;
      let end: number;
      let next: number;
      if (cr !== -1) {
        // CR or CRLF; a CR at the very end of the buffer may be the first half of a CRLF.
        if (cr === buf.length - 1 && !final) break;
        end = cr;
        next = buf.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        if (final && start < buf.length) {
          this.line(buf.slice(start), events);
          start = buf.length;
        }
        break;
      }
      this.line(buf.slice(start, end), events);
      start = next;
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
    return events;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line.length === 0) {
      if (this.data !== null) events.push({ type: this.type, data: this.data });
      this.data = null;
      this.type = '';
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' comment */) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data = this.data === null ? value : `${this.data}\n${value}`;
    else if (field === 'event') this.type = value;
  }
}

describe('SseBytes (the one SSE reader, on bytes)', () => {
  it('emits each event as a range of the read, across every byte split', () => {
    const text = 'data: {"a":1}\n\ndata: {"b":"é€😀"}\n\n: comment\n\ndata: [DONE]\n\n';
    const bytes = enc(text);
    for (let split = 1; split < bytes.length; split++) {
      const events = viaBytes([bytes.subarray(0, split), bytes.subarray(split)]);
      expect(events.map((e) => e.data)).toEqual(['{"a":1}', '{"b":"é€😀"}', '[DONE]']);
    }
  });

  it('hands out single-line data without copying it (a view of the read)', () => {
    const read = enc('data: {"x":1}\n\n');
    const r = new SseBytes();
    const seen: Array<{ buf: Buffer; start: number; end: number }> = [];
    r.push(read, { event: (_t, buf, start, end) => seen.push({ buf, start, end }) });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.buf).toBe(read);
    expect(seen[0]?.buf.toString('utf8', seen[0].start, seen[0].end)).toBe('{"x":1}');
  });

  it('handles CRLF and lone CR line endings, event types, multi-line data and a last event without its blank line', () => {
    expect(
      viaBytes([
        enc('event: error\r\ndata: {"x":\r\ndata: 1}\r\n\r\n'),
        enc('data:nospace\r\r'),
        enc('data: tail'),
      ]),
    ).toEqual([
      { type: 'error', data: '{"x":\n1}' },
      { type: '', data: 'nospace' },
      { type: '', data: 'tail' },
    ]);
  });

  it('waits for the byte after a CR at the end of a read (it may be half a CRLF)', () => {
    expect(viaBytes([enc('data: a\r'), enc('\ndata: b\r\n\r\n')])).toEqual([{ type: '', data: 'a\nb' }]);
    expect(viaBytes([enc('data: a\r'), enc('\r')])).toEqual([{ type: '', data: 'a' }]);
  });

  it('skips a BOM at the start only, also when it is split', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const body = enc('data: x\n\n');
    expect(viaBytes([Buffer.concat([bom, body])])).toEqual([{ type: '', data: 'x' }]);
    expect(viaBytes([bom.subarray(0, 1), bom.subarray(1), body])).toEqual([{ type: '', data: 'x' }]);
    expect(viaBytes([body, Buffer.concat([enc('data: '), bom, enc('\n\n')])])).toEqual(
      viaStrings([body, Buffer.concat([enc('data: '), bom, enc('\n\n')])]),
    );
  });

  it('replaces bytes that are not UTF-8 as a decoder does, also with a character split across reads', () => {
    const bad = Buffer.concat([enc('data: a'), Buffer.from([0xff, 0xc3]), enc('b\n\n')]);
    expect(viaBytes([bad])).toEqual(viaStrings([bad]));
    const euro = enc('data: €\n\n'); // € is 3 bytes: split inside it
    expect(viaBytes([euro.subarray(0, 7), euro.subarray(7)])).toEqual([{ type: '', data: '€' }]);
  });

  it('ignores id, retry, unknown fields and comments; an event without data is not dispatched', () => {
    const text = 'id: 1\nretry: 10\nfoo: bar\n: hi\n\nevent: ping\n\ndata\n\ndata:\n\n';
    expect(viaBytes([enc(text)])).toEqual(viaStrings([enc(text)]));
  });

  it('gives the same events as the string reader for random streams split at random', () => {
    const pieces = [
      'data: {"id":"c","choices":[{"delta":{"content":"hé"}}]}',
      'data: [DONE]',
      'event: error',
      'data: {"error":{"message":"x"}}',
      ': keep-alive',
      'data:no-space',
      'data: 😀 ok',
      'id: 7',
      'data',
      '',
    ];
    const endings = ['\n', '\r\n', '\r'];
    for (let seed = 1; seed <= 300; seed++) {
      const rand = seededRandom(seed);
      let text = '';
      const lines = 1 + Math.floor(rand() * 30);
      for (let i = 0; i < lines; i++) {
        text += pieces[Math.floor(rand() * pieces.length)];
        text += endings[Math.floor(rand() * endings.length)];
      }
      const bytes = enc(text);
      const reads: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const n = 1 + Math.floor(rand() * 40);
        reads.push(bytes.subarray(at, at + n));
        at += n;
      }
      expect(viaBytes(reads), `seed ${seed}: ${JSON.stringify(text)}`).toEqual(viaStrings(reads));
    }
  });
});
