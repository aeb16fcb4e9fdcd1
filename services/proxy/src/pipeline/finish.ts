import type { FrontDoor } from '../doors/door';
import { endChunked } from '../http/http-chunk';
import type { ProxyResponse } from '../http/types';
import type { Admitted } from './admit';
import type { Completion } from './completion';
import type { Outcome } from './outcome';
import { writeSseHead } from './sse-head';

const JSON_HEAD = { 'content-type': 'application/json; charset=utf-8' };

/**
 * Stage 6, finish: the one place a completion ends, exactly once — the reservation settled and the
 * usage event published (Completion.finish: sent or spooled before the answer's last bytes), the
 * concurrency slot released, the completion no longer live. Its timings reach the metrics when the
 * response closes (metrics/responses.ts reads `res.locals.completion`).
 */
export function finish(admitted: Admitted, outcome: Outcome, live: Set<Completion> | undefined): void {
  live?.delete(admitted.completion);
  admitted.completion.finish(outcome);
  admitted.release();
}

/**
 * The end of the answer, written once the completion has ended (a process killed in between bills an
 * answer nobody saw rather than serving one nobody bills). Served: the JSON body, or the stream's last
 * bytes. Refused or failed: the error thrown to the error writer (the door's envelope), or, when a
 * stream's 200 was already committed (keep-alive comments during a slow start), the door's error
 * events. A cancelled client gets nothing.
 */
export function answer(door: FrontDoor, c: Completion, res: ProxyResponse, outcome: Outcome): void {
  if (outcome.kind === 'served') {
    if (outcome.lastBytes === null || res.writableEnded || res.destroyed) return;
    if (c.request.stream) {
      writeSseHead(res);
      // The last chunk and the body's terminator in one socket write (http/http-chunk.ts `endChunked`).
      if (!endChunked(res, outcome.lastBytes)) res.end(outcome.lastBytes);
      return;
    }
    // A known length instead of chunked framing: head and body leave in one socket write.
    res.setHeader('content-length', Buffer.byteLength(outcome.lastBytes));
    res.writeHead(200, JSON_HEAD);
    res.end(outcome.lastBytes);
    return;
  }
  if (outcome.kind === 'cancelled') return;
  if (!res.headersSent) throw outcome.error;
  if (res.writableEnded || res.destroyed) return;
  const events = door.streamError(outcome.error, c.provider.name);
  if (!endChunked(res, events)) res.end(events);
}
