import type { Fifo } from '../fifo';
import { USAGE_BATCH_MESSAGE_TYPE, usageBatchBody } from '../usage-event';
import type { Entry } from './confirm-window';

/** AMQP `type` property of version-1 usage events (`usageEventSchemas.usage[1]`). */
export const USAGE_MESSAGE_TYPE = 'usage.v1';

export interface MessageLimits {
  /** Most events in one message. */
  eventsPerMessage: number;
  /** A message is closed before it would pass this many bytes (a lone event may be larger). */
  maxMessageBytes: number;
}

/** The next message's entries from `lane`, oldest first: within `limits` and at most `room` events. */
export function takeMessage(lane: Fifo<Entry>, limits: MessageLimits, room: number): Entry[] {
  const entries: Entry[] = [];
  let bytes = 0;
  while (entries.length < limits.eventsPerMessage && entries.length < room) {
    const next = lane.peek();
    if (!next) break;
    if (entries.length > 0 && bytes + next.body.length + 1 > limits.maxMessageBytes) break;
    lane.shift();
    entries.push(next);
    bytes += next.body.length + 1;
  }
  return entries;
}

export interface EncodedMessage {
  body: Buffer;
  /** `usage.v1` for one event, `usage.batch.v1` (NDJSON) for several. */
  type: string;
  contentType: string;
  /** The first event's id and AMQP timestamp. */
  messageId: string;
  timestamp: number;
  /** The oldest hand-over time of its events (ms): the sent-at time its signature carries. */
  sentAt: number;
}

/** One AMQP message from the entries `takeMessage` returned (a single event keeps the plain shape). */
export function encodeMessage(entries: readonly Entry[]): EncodedMessage {
  const first = entries[0] as Entry;
  const single = entries.length === 1;
  let sentAt = Number.POSITIVE_INFINITY;
  for (const e of entries) if (e.sentAt < sentAt) sentAt = e.sentAt;
  return {
    body: single ? first.body : usageBatchBody(entries.map((e) => e.body)),
    type: single ? USAGE_MESSAGE_TYPE : USAGE_BATCH_MESSAGE_TYPE,
    contentType: single ? 'application/json' : 'application/x-ndjson',
    messageId: first.id,
    timestamp: first.timestamp,
    sentAt,
  };
}

/**
 * When to send: at once (next turn) when a message's worth is waiting or lingering is off, else
 * `lingerMs` after the first waiting event, with whatever came meanwhile. `canSend` says whether a
 * channel can take messages now (connected, not waiting for the socket to drain).
 *
 * Or on the turn of the last event the linger would take (issue 30): when an event arrives so late in
 * the linger that the next one, as far apart as this one from the one before, would come after the
 * timer, what waits goes now — the process is awake for this event anyway, so the message leaves
 * without a wake-up of its own, carrying the events the timer would have sent (under a steady flow,
 * exactly those). Events are only ever sent earlier than the timer would, never later: an event
 * waits in memory at most `lingerMs`, as before.
 */
export class SendScheduler {
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  /** When the first waiting event arrived (the linger's start) and the last one (ms, monotonic). */
  private lingeringSince = 0;
  private lastEventAt = 0;

  constructor(
    private readonly lingerMs: number,
    private readonly eventsPerMessage: number,
    private readonly canSend: () => boolean,
    private readonly send: () => void,
  ) {}

  /** Sends on the next event-loop turn (if a channel can take it then). */
  soon(): void {
    if (this.scheduled || !this.canSend()) return;
    this.scheduled = true;
    setImmediate(this.run);
  }

  /**
   * Room came free in the confirm window (a confirm): what waits goes out on the next turn only if
   * nothing else will send it — events lingering for company keep their timer, so a confirm arriving
   * inside a linger does not cut it short (one message per confirm round trip instead of per window).
   */
  roomFreed(waiting: number): void {
    if (waiting === 0 || this.timer !== null) return;
    this.soon();
  }

  /** A new event is waiting, arrived at `now` (ms, performance.now()); `waiting` events are pending in all. */
  linger(waiting: number, now: number): void {
    const gap = now - this.lastEventAt;
    this.lastEventAt = now;
    if (this.lingerMs === 0 || waiting >= this.eventsPerMessage) {
      this.soon();
      return;
    }
    if (this.scheduled) return;
    if (this.timer === null) {
      this.lingeringSince = now;
      this.timer = setTimeout(this.onTimer, this.lingerMs);
    } else if (now - this.lingeringSince + gap >= this.lingerMs) this.soon();
  }

  private readonly run = () => {
    this.scheduled = false;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.send();
  };

  private readonly onTimer = () => {
    this.timer = null;
    this.soon();
  };
}
