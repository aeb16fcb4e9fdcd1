/**
 * A tight SSE reader for provider streams.
 *
 * Why hand-written rather than eventsource-parser: the proxy must forward each event the moment its
 * terminating blank line arrives and only needs the `data` (and `event`) fields. eventsource-parser
 * would be equally correct but calls back per event with a fresh object and splits the buffer with
 * per-character scanning; this reader does two indexOf calls per line on the decoded text and hands the
 * caller plain strings, which is all the id rewrite needs. It implements the parts of the WHATWG
 * event-stream grammar providers use: LF, CRLF and lone-CR line endings, `data` lines joined with LF,
 * one optional space after the colon, comments (`:`) ignored, `id`/`retry` ignored.
 */
export interface SseEvent {
  /** The `event:` field, or '' for the default `message`. */
  type: string;
  data: string;
}

export class SseReader {
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
