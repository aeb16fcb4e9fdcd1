import { Writable } from 'node:stream';
import type { ConfirmChannel } from 'amqplib';

// The publisher corks the broker socket while it sends (publisher.ts `pump`): amqplib's multiplexer
// writes each frame chunk of a message on its own, in an immediate it schedules from the next tick.

/** The broker connection's socket under an amqplib channel (null when not reachable). */
export function socketOf(ch: ConfirmChannel): Writable | null {
  const stream = (ch as unknown as { connection?: { stream?: unknown } }).connection?.stream;
  return stream instanceof Writable ? stream : null;
}

/** Uncorks in the next check phase: after the immediate amqplib's mux scheduled for the frames. */
export function uncorkSoon(socket: Writable): void {
  setImmediate(() => socket.uncork());
}
