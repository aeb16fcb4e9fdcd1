/**
 * The bytes of one client write, gathered as pieces (ranges of the provider's reads, constants and
 * short strings such as the request id) and joined into one Buffer by one copy, so a relayed chunk
 * never becomes a JS string (issue 11: the V8 heap bytes per streamed request drive the GC tail).
 * Buffers of less than 4 KiB come from Node's shared pool (no allocation of their own).
 *
 * Filled and taken synchronously (`take` before anything awaits), so one instance serves every
 * stream of the process; `clear` drops what a failed fill left. Its arrays are kept across writes
 * (grown, never shrunk: emptying an array with `length = 0` frees its storage, reallocated by the
 * next pushes), their entries released when taken.
 */
/**
 * Pieces up to this many bytes are copied by a JS loop: `Buffer#copy` of a range makes a Uint8Array view
 * per call and `Buffer#write` is a native call, each costlier than the loop for the ranges and ids of
 * one chunk (issue 30: CPU per relayed chunk).
 */
import { sizeLineLength, writeSizeLine } from '../../http/http-chunk';

const SHORT = 256;

export class ByteOut {
  private readonly parts: Array<Buffer | string | null> = [];
  /**
   * [start, end) per Buffer part (start -1: the whole buffer); per string part its byte length and
   * 0 (UTF-8) or 1 (ASCII, written as latin1: no encoder).
   */
  private readonly bounds: number[] = [];
  private count = 0;
  private size = 0;

  get length(): number {
    return this.size;
  }

  private add(part: Buffer | string, a: number, b: number): void {
    const i = this.count++;
    if (i < this.parts.length) {
      this.parts[i] = part;
      this.bounds[2 * i] = a;
      this.bounds[2 * i + 1] = b;
    } else {
      this.parts.push(part);
      this.bounds.push(a, b);
    }
  }

  bytes(buf: Buffer, start = 0, end = buf.length): void {
    if (end <= start) return;
    this.add(buf, start, end);
    this.size += end - start;
  }

  /** A whole buffer (a constant: copied with TypedArray#set, the cheapest copy). */
  whole(buf: Buffer): void {
    if (buf.length === 0) return;
    this.add(buf, -1, buf.length);
    this.size += buf.length;
  }

  text(s: string): void {
    if (s.length === 0) return;
    const n = Buffer.byteLength(s, 'utf8');
    this.add(s, n, 0);
    this.size += n;
  }

  /** A string the caller knows is ASCII (one byte per character). */
  ascii(s: string): void {
    if (s.length === 0) return;
    this.add(s, s.length, 1);
    this.size += s.length;
  }

  /** The pieces as one Buffer (empty when there are none); the builder is empty again. */
  take(): Buffer {
    return this.into(Buffer.allocUnsafe(this.size), 0);
  }

  /**
   * The pieces as one HTTP/1.1 chunk (`<size in hex>\r\n<pieces>\r\n`, RFC 9112 §7.1) in one Buffer:
   * what `ServerResponse#write` sends for them on a chunked response, made with the same one copy (the
   * relay writes it to the client's socket itself: http-chunk.ts), after `head` (the response's head
   * when it has not left yet: http-chunk.ts `takeHead`; latin1, as node:http writes it). Not for an
   * empty builder.
   */
  takeChunk(head = ''): Buffer {
    const size = this.size;
    const h = head.length;
    const out = Buffer.allocUnsafe(h + sizeLineLength(size) + size + 2);
    if (h > 0) out.write(head, 0, 'latin1');
    this.into(out, writeSizeLine(out, h, size));
    out[out.length - 2] = 13;
    out[out.length - 1] = 10;
    return out;
  }

  private into(out: Buffer, from: number): Buffer {
    let at = from;
    const { parts, bounds } = this;
    for (let i = 0; i < this.count; i++) {
      const p = parts[i] as Buffer | string;
      const a = bounds[2 * i] as number;
      const b = bounds[2 * i + 1] as number;
      if (typeof p === 'string') {
        if (b === 1 && p.length <= SHORT) {
          for (let k = 0; k < p.length; k++) out[at + k] = p.charCodeAt(k);
          at += p.length;
        } else at += out.write(p, at, b === 1 ? 'latin1' : 'utf8');
      } else if (a === -1) {
        out.set(p, at);
        at += b;
      } else if (b - a <= SHORT) {
        for (let k = a; k < b; k++) out[at++] = p[k] as number;
      } else at += p.copy(out, at, a, b);
    }
    this.clear();
    return out;
  }

  /** Empties the builder (the pieces are released: nothing of a read is kept alive by it). */
  clear(): void {
    for (let i = 0; i < this.count; i++) this.parts[i] = null;
    this.count = 0;
    this.size = 0;
  }
}
