import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The `ServerResponse` fields (Node's own, not in its types) that tell whether its socket can be written to directly. */
interface OutgoingState {
  _headerSent: boolean;
  chunkedEncoding: boolean;
  outputData: unknown[];
}

/**
 * The client socket a streamed answer's next HTTP/1.1 chunk can be written to directly, or null when
 * it must go through `res.write`: the head is already out, the answer is chunked (an HTTP/1.1 client),
 * the socket is this response's and writable, and nothing of the response waits in front of it.
 * Then one framed chunk (byte-out.ts `takeChunk`) is one `socket.write` — one `write` system call
 * instead of `res.write`'s four pieces, cork and next-tick `writev` (issue 30: the relay's per-chunk
 * cost in a burst of streams). `res.end` later writes its last chunk and the terminator as usual.
 */
export function directSocket(res: ServerResponse): Socket | null {
  const state = res as unknown as OutgoingState;
  const socket = res.socket as (Socket & { _httpMessage?: unknown }) | null;
  if (
    socket === null ||
    !state._headerSent ||
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
