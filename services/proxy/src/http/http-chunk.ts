import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The `ServerResponse` fields (Node's own, not in its types) that tell whether its socket can be written to directly. */
interface OutgoingState {
  /** The head `writeHead` built (null: not yet). */
  _header: string | null;
  _headerSent: boolean;
  _trailer: string;
  chunkedEncoding: boolean;
  outputData: unknown[];
}

const HEX = Buffer.from('0123456789abcdef');

/** The length of an HTTP/1.1 chunk's size line for `size` bytes: its hex digits and CRLF (RFC 9112 §7.1). */
export function sizeLineLength(size: number): number {
  let digits = 1;
  while (size >= 16 ** digits) digits++;
  return digits + 2;
}

/** Writes the size line of a `size`-byte chunk into `out` at `at` (digit by digit, no string); returns where its data goes. */
export function writeSizeLine(out: Buffer, at: number, size: number): number {
  const end = at + sizeLineLength(size);
  for (let i = end - 3, n = size; i >= at; i--, n >>>= 4) out[i] = HEX[n & 15] as number;
  out[end - 2] = 13;
  out[end - 1] = 10;
  return end;
}
/** The zero-size chunk that ends a chunked body (no trailers), RFC 9112 §7.1. */
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');

/**
 * The client socket a streamed answer's next HTTP/1.1 chunk can be written to directly, or null when
 * it must go through `res.write`: the head is committed (`writeHead`), the answer is chunked (an
 * HTTP/1.1 client), the socket is this response's and writable, and nothing of the response waits in
 * front of it. Then one framed chunk (byte-out.ts `takeChunk`) is one `socket.write` — one `write`
 * system call instead of `res.write`'s four pieces, cork and next-tick `writev` (issue 30: the relay's
 * per-chunk cost in a burst of streams) — with `takeHead`'s text in front of it while the head has not
 * left (one write where `res.write` made a cork, five pieces and a next-tick `writev`). Every door's
 * stream writes this way: the chat relay (doors/chat/stream-relay.ts), the Messages and Responses
 * streams (doors/chunk-write.ts).
 */
export function chunkSocket(res: ServerResponse): Socket | null {
  const state = res as unknown as OutgoingState;
  const socket = res.socket as (Socket & { _httpMessage?: unknown }) | null;
  if (
    socket === null ||
    state._header === null ||
    !state.chunkedEncoding ||
    res.writableEnded ||
    socket._httpMessage !== res ||
    state.outputData.length !== 0 ||
    !socket.writable
  ) {
    return null;
  }
  return socket;
}

/**
 * The head of `res` if it has not left yet ('' once it has), which the caller writes in front of its
 * first chunk in the same socket write (`chunkSocket`): from here on `res` counts it as sent, as
 * `res.write` would have.
 */
export function takeHead(res: ServerResponse): string {
  const state = res as unknown as OutgoingState;
  if (state._headerSent || state._header === null) return '';
  state._headerSent = true;
  return state._header;
}

/**
 * Ends a chunked answer with `last`, its last bytes, in one write to the client's socket: the head if it
 * has not left yet, `last` as one HTTP/1.1 chunk and the zero-size chunk that ends the body. `res.end()`
 * then writes nothing (its chunked encoding is done): its `finish` follows these bytes and node:http
 * keeps the connection alive or closes it as it decided. Where `res.end(last)` made five socket writes
 * gathered into a `writev` (the size line, the bytes, two CRLFs, the terminator), this is one `write`
 * of one Buffer (issue 30: every stream of a burst ends). False, with nothing written, when the socket
 * cannot take it directly (`chunkSocket`) or the response has trailers: then `res.end(last)`.
 */
export function endChunked(res: ServerResponse, last: Buffer | string): boolean {
  const state = res as unknown as OutgoingState;
  const socket = chunkSocket(res);
  if (socket === null || state._trailer !== '') return false;
  const size = typeof last === 'string' ? Buffer.byteLength(last) : last.length;
  const head = takeHead(res);
  const out = Buffer.allocUnsafe(
    head.length + (size > 0 ? sizeLineLength(size) + size + 2 : 0) + LAST_CHUNK.length,
  );
  let at = head.length > 0 ? out.write(head, 0, 'latin1') : 0;
  if (size > 0) {
    at = writeSizeLine(out, at, size);
    at += typeof last === 'string' ? out.write(last, at, 'utf8') : last.copy(out, at);
    out[at++] = 13;
    out[at++] = 10;
  }
  out.set(LAST_CHUNK, at);
  state.chunkedEncoding = false;
  socket.write(out);
  res.end();
  return true;
}
