import { isUtf8 } from 'node:buffer';

/**
 * The proxy's one SSE reader, on the provider's bytes (issue 11: allocation per streamed request): the
 * doors' stream relays read it directly, the wire formats' bridges through `SseReader` (below).
 * It decodes nothing: each complete event is handed to the caller as a byte range of the read it came
 * in (`event(type, buf, start, end)`, synchronously; the range is valid until the call returns), so a
 * content chunk can be rewritten and forwarded from the provider's bytes without becoming a string.
 *
 * The grammar (the WHATWG event-stream parts providers use; sse-bytes.test.ts checks it against a
 * reference reader on decoded text): LF, CRLF and lone-CR line endings (a CR at the end of a read waits for the next one: it may
 * be half a CRLF), `data` lines joined with LF, one optional space after the colon, comments (`:`)
 * ignored, `id`/`retry` and unknown fields ignored, a UTF-8 BOM at the start skipped, and at the end
 * of input a last event without its blank line dispatched. Bytes that are not UTF-8 reach the caller
 * as a TextDecoder gives them: decoded with U+FFFD replacement (then re-encoded).
 *
 * An event split across reads is carried over from its first byte (a view of the earlier read,
 * joined to the next one: one copy, only for the events that straddle reads); lines already read
 * are not read again.
 */
export interface SseEventSink {
  /** One complete event; its data is the bytes [start, end) of buf. `type`: '' for `message`. */
  event(type: string, buf: Buffer, start: number, end: number): void;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

export class SseBytes {
  /** The incomplete event's bytes (from its first byte), carried to the next read. */
  private pending: Buffer | null = null;
  /** Where reading resumes in the carried bytes (the start of the incomplete line). */
  private resumeAt = 0;
  /** The incomplete event's data lines, offsets from its first byte: [start, end) of the first. */
  private dataStart = -1;
  private dataEnd = -1;
  /** Further data lines (start, end pairs): joined with LF when the event ends. */
  private moreData: number[] | null = null;
  private type = '';
  private started = false;
  /** The current read is all UTF-8 (checked once per read; each event only when it is not). */
  private readUtf8 = true;

  /** Feeds one read; completed events go to `sink` before it returns. */
  push(bytes: Buffer, sink: SseEventSink): void {
    this.read(bytes, sink, false);
  }

  /** End of input: a last event without its blank line is dispatched. */
  end(sink: SseEventSink): void {
    this.read(null, sink, true);
    if (this.dataStart !== -1 && this.pending !== null) this.dispatch(this.pending, 0, sink);
    this.pending = null;
    this.reset();
  }

  private reset(): void {
    this.dataStart = -1;
    this.dataEnd = -1;
    this.moreData = null;
    this.type = '';
  }

  private read(bytes: Buffer | null, sink: SseEventSink, final: boolean): void {
    let buf: Buffer;
    let pos: number;
    if (this.pending === null) {
      if (bytes === null) return;
      buf = bytes;
      pos = 0;
    } else {
      buf = bytes === null ? this.pending : Buffer.concat([this.pending, bytes]);
      pos = this.resumeAt;
    }
    if (!this.started) {
      // A BOM (EF BB BF) is skipped, as TextDecoder does; wait for 3 bytes to tell.
      if (buf.length < 3 && !final) {
        this.pending = buf;
        this.resumeAt = 0;
        return;
      }
      this.started = true;
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) {
        buf = buf.subarray(3);
      }
    }
    const len = buf.length;
    this.readUtf8 = isUtf8(buf);
    /** First byte of the incomplete event (offsets of dataStart/dataEnd/moreData are from it). */
    let eventStart = 0;
    // Where the next CR is (searched once per read, not once per line: most streams have none).
    let cr = buf.indexOf(CR, pos);
    for (;;) {
      const lf = buf.indexOf(LF, pos);
      if (cr !== -1 && cr < pos) cr = buf.indexOf(CR, pos);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // CR or CRLF; a CR at the very end of the read may be the first half of a CRLF.
        if (cr === len - 1 && !final) break;
        end = cr;
        next = buf[cr + 1] === LF ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        if (final && pos < len) {
          this.line(buf, eventStart, pos, len);
          pos = len;
        }
        break;
      }
      if (end === pos) {
        // Blank line: the event is complete.
        if (this.dataStart !== -1) this.dispatch(buf, eventStart, sink);
        this.reset();
        eventStart = next;
      } else this.line(buf, eventStart, pos, end);
      pos = next;
    }
    if (eventStart >= len) {
      this.pending = null;
      this.resumeAt = 0;
    } else {
      // Carry the incomplete event (a view: the next read joins it, one copy).
      this.pending = eventStart === 0 ? buf : buf.subarray(eventStart);
      this.resumeAt = pos - eventStart;
    }
  }

  /** One non-empty line [s, e) of the event that starts at `base`. */
  private line(buf: Buffer, base: number, s: number, e: number): void {
    if (buf[s] === COLON) return; // comment
    let colon = buf.indexOf(COLON, s);
    if (colon >= e) colon = -1;
    const fieldEnd = colon === -1 ? e : colon;
    let v = colon === -1 ? e : colon + 1;
    if (v < e && buf[v] === SPACE) v++;
    const n = fieldEnd - s;
    if (n === 4 && buf[s] === 0x64 && buf[s + 1] === 0x61 && buf[s + 2] === 0x74 && buf[s + 3] === 0x61) {
      // data
      if (this.dataStart === -1) {
        this.dataStart = v - base;
        this.dataEnd = e - base;
      } else {
        this.moreData ??= [];
        this.moreData.push(v - base, e - base);
      }
    } else if (n === 5 && EVENT_FIELD.compare(buf, s, fieldEnd) === 0) {
      this.type = buf.toString('utf8', v, e);
    }
  }

  private dispatch(buf: Buffer, base: number, sink: SseEventSink): void {
    let data = buf;
    let start = base + this.dataStart;
    let end = base + this.dataEnd;
    const more = this.moreData;
    if (more !== null) {
      // Multi-line data: the lines joined with LF (rare; providers send one line per event).
      const parts: Buffer[] = [buf.subarray(start, end)];
      for (let i = 0; i < more.length; i += 2) {
        parts.push(NEWLINE, buf.subarray(base + (more[i] as number), base + (more[i + 1] as number)));
      }
      data = Buffer.concat(parts);
      start = 0;
      end = data.length;
    }
    // A read that is not all UTF-8 may only end with half a character (of an event carried over).
    if (!this.readUtf8 && !isUtf8(data.subarray(start, end))) {
      // Not UTF-8: what a decoder would have made of it (U+FFFD for each bad sequence).
      data = Buffer.from(data.toString('utf8', start, end));
      start = 0;
      end = data.length;
    }
    sink.event(this.type, data, start, end);
  }
}

const NEWLINE = Buffer.from('\n');
const EVENT_FIELD = Buffer.from('event');

/** One event as text: `type` is the `event:` field, or '' for the default `message`. */
export interface SseEvent {
  type: string;
  data: string;
}

/**
 * The events of the one reader as text, for translators that parse each event anyway (the wire
 * formats' stream bridges, providers/<format>/): push bytes, get the events they complete.
 */
export class SseReader implements SseEventSink {
  private readonly bytes = new SseBytes();
  private events: SseEvent[] = [];

  /** Feeds raw bytes; returns the events completed by them (often exactly one). */
  push(bytes: Uint8Array): SseEvent[] {
    this.bytes.push(
      Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      this,
    );
    return this.take();
  }

  /** End of input: a last event without its blank line is dispatched (as browsers do not, but providers cut). */
  end(): SseEvent[] {
    this.bytes.end(this);
    return this.take();
  }

  /** SseEventSink: called by the byte reader while `push`/`end` run. */
  event(type: string, buf: Buffer, start: number, end: number): void {
    this.events.push({ type, data: buf.toString('utf8', start, end) });
  }

  private take(): SseEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }
}
