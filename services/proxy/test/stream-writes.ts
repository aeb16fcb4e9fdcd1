import { ServerResponse } from 'node:http';
import net from 'node:net';
import { vi } from 'vitest';

/**
 * What the tests of a streamed answer's writes share (doors/chat/stream-head.e2e.test.ts,
 * doors/doors-stream-head.e2e.test.ts): the proxy's writes to its client sockets, strict de-chunking
 * and one raw HTTP/1.1 exchange.
 */

export interface RelayWrites {
  /** `res.write` calls. */
  res: number;
  /** Socket writes outside `res.write` / `res.end`: the relay's own (http/http-chunk.ts). */
  direct: number;
  /** Socket writes of any bytes made inside `res.end`. */
  inEnd: number;
  /** The first and the last direct write's bytes (latin1). */
  first: string;
  last: string;
}

/**
 * Counts the writes to the client sockets of the proxy listening on `port` (spies: undone by
 * `vi.restoreAllMocks()`).
 */
export function relayWrites(port: number): () => RelayWrites {
  const counts: RelayWrites = { res: 0, direct: 0, inEnd: 0, first: '', last: '' };
  let inEnd = 0;
  let inside = 0;
  for (const method of ['write', 'end'] as const) {
    const original = ServerResponse.prototype[method] as (...a: unknown[]) => unknown;
    vi.spyOn(ServerResponse.prototype, method).mockImplementation(function (
      this: ServerResponse,
      ...args: unknown[]
    ) {
      if (method === 'write' && this.socket?.localPort === port) counts.res++;
      inside++;
      if (method === 'end') inEnd++;
      try {
        return original.apply(this, args);
      } finally {
        inside--;
        if (method === 'end') inEnd--;
      }
    } as never);
  }
  const socketWrite = net.Socket.prototype.write as (...a: unknown[]) => boolean;
  vi.spyOn(net.Socket.prototype, 'write').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    if (this.localPort === port) {
      const data = args[0] as string | Buffer;
      if (inside === 0) {
        counts.direct++;
        counts.last = Buffer.from(data).toString('latin1');
        if (counts.direct === 1) counts.first = counts.last;
      } else if (inEnd > 0 && data.length > 0) counts.inEnd++;
    }
    return socketWrite.apply(this, args);
  } as never);
  return () => ({ ...counts });
}

/**
 * The body of a raw HTTP/1.1 answer with `transfer-encoding: chunked`, decoded strictly (every chunk's
 * size line, its exact bytes and CRLF, the terminating `0` chunk); throws on any framing error.
 */
export function dechunk(raw: Buffer): string {
  const headEnd = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, headEnd).toString('latin1');
  if (!/\r\ntransfer-encoding: chunked/i.test(head)) throw new Error(`not chunked: ${head}`);
  const parts: Buffer[] = [];
  let at = headEnd + 4;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol === -1) throw new Error('no chunk size line');
    const size = Number.parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isInteger(size)) throw new Error(`bad chunk size at ${at}`);
    const start = eol + 2;
    if (raw.subarray(start + size, start + size + 2).toString('latin1') !== '\r\n') {
      throw new Error(`chunk of ${size} bytes at ${start} not followed by CRLF`);
    }
    if (size === 0) {
      if (start + 2 !== raw.length) throw new Error('bytes after the last chunk');
      return Buffer.concat(parts).toString('utf8');
    }
    parts.push(raw.subarray(start, start + size));
    at = start + size + 2;
  }
}

export interface RawRead {
  /** ms since the request was written. */
  at: number;
  text: string;
  bytes: Buffer;
}

/** One request written as is on its own connection to `url`'s port; its reads until the server ends. */
export async function rawReads(url: string, request: string): Promise<RawRead[]> {
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.setNoDelay(true);
  const reads: RawRead[] = [];
  const started = performance.now();
  socket.write(request);
  socket.on('data', (b: Buffer) =>
    reads.push({ at: performance.now() - started, text: b.toString('utf8'), bytes: b }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('end', () => resolve());
    socket.once('error', reject);
  });
  return reads;
}
