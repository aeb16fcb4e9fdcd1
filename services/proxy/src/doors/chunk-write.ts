import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { takeHead } from '../http/http-chunk';
import { ByteOut } from './chat/byte-out';

/** Filled and taken in one call (nothing awaits in between): one for every stream of the process. */
const framer = new ByteOut();

/**
 * Writes `first` and `then` — a door's events, or a native provider's bytes as they came — as one
 * HTTP/1.1 chunk to the client's socket of `res` (`socket`: http-chunk.ts `chunkSocket`, which the
 * caller checked), with the response's head in front when it has not left yet (`takeHead`): one
 * `socket.write`, as the chat relay writes its chunks, where `res.write` made a cork, three or four
 * socket writes and a next-tick `writev` (issue 30). Not for empty bytes. Returns what
 * `socket.write` returned (false: wait for its `drain`, pipeline/backpressure.ts).
 */
export function writeChunk(
  res: ServerResponse,
  socket: Socket,
  first: string,
  then: string | Buffer,
): boolean {
  framer.text(first);
  if (typeof then === 'string') framer.text(then);
  else framer.whole(then);
  return socket.write(framer.takeChunk(takeHead(res)));
}
