import type { EventEmitter } from 'node:events';
import { once } from 'node:events';
import type { Completion } from './completion';

/**
 * Waits for a stream's client to take the bytes it was written (its socket buffer was full). If it
 * takes nothing for `writeTimeoutMs`, `stalled` runs (the door cuts the client: the completion is
 * cancelled and drains). A client that goes away while its buffer is full ends the wait without an
 * error: the provider's answer is then drained (pipeline/drain.ts); an aborted completion throws.
 */
export async function waitForClient(
  /** What emits `drain`: the response, or its socket when the relay wrote to the socket itself. */
  res: EventEmitter,
  c: Completion,
  writeTimeoutMs: number,
  stalled: () => void,
): Promise<void> {
  const timer = setTimeout(stalled, writeTimeoutMs);
  try {
    await once(res, 'drain', { signal: c.waitSignal });
  } catch (err) {
    if (!c.cancelled || c.abort.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
  }
}
