import type { EventEmitter } from 'node:events';
import type { Completion } from './completion';

/**
 * Waits for a stream's client to take the bytes it was written (its socket buffer was full). If it
 * takes nothing for `writeTimeoutMs`, `stalled` runs (the door cuts the client: the completion is
 * cancelled and drains). A client that goes away while its buffer is full ends the wait without an
 * error: the provider's answer is then drained (pipeline/drain.ts); an aborted completion throws (an
 * `AbortError`). Only `drain` and the completion's signals end the wait: an `error` of the emitter (a
 * socket the relay writes to itself, http/http-chunk.ts) is the client going away, which its
 * completion learns from the socket's close.
 */
export function waitForClient(
  /** What emits `drain`: the response, or its socket when the relay wrote to the socket itself. */
  res: EventEmitter,
  c: Completion,
  writeTimeoutMs: number,
  stalled: () => void,
): Promise<void> {
  const signal = c.waitSignal;
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      res.off('drain', done);
      signal.removeEventListener('abort', aborted);
      if (!signal.aborted || (c.cancelled && !c.abort.aborted)) resolve();
      else
        reject(
          Object.assign(new Error('The operation was aborted'), { name: 'AbortError', cause: signal.reason }),
        );
    };
    const aborted = done;
    const timer = setTimeout(stalled, writeTimeoutMs);
    if (signal.aborted) {
      done();
      return;
    }
    res.on('drain', done);
    signal.addEventListener('abort', aborted, { once: true });
  });
}
