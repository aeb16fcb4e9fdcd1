import type { EventsLogger } from '../logger';
import type { MessageSigner } from '../signature';
import type { UsageTopology } from '../topology';
import type { UsageEvent } from '../usage-event';
import type { PublisherMetric } from './telemetry';

export interface PublisherStats {
  /** Events held in memory: not yet confirmed by the broker (includes those sent, awaiting confirm). */
  buffered: number;
  /** Events the broker confirmed (persisted to the queue), since start. */
  published: number;
  /** Events discarded, since start: oldest dropped because the buffer was full, or published after close. */
  dropped: number;
  /** A confirm channel to the broker is open. */
  connected: boolean;
  /** The broker blocked the connection (memory or disk alarm): sent events wait for its unblock. */
  blocked: boolean;
  /** Confirmed but routed to no queue (someone deleted the queue or binding); logged as errors. */
  unroutable: number;
  /** Events on the disk spool (fsync'd), waiting for the broker. */
  spooled: number;
  /** Bytes of the disk spool. */
  spoolBytes: number;
}

export interface UsagePublisherOptions {
  /** AMQP_URL. */
  url: string;
  topology: UsageTopology;
  logger: EventsLogger;
  /**
   * Bound of the in-memory buffer. With a `spool`, events beyond it (and every event while the broker
   * is unreachable) go to disk; without one, the OLDEST unsent event is dropped when it is full.
   */
  maxBuffered?: number;
  /**
   * The durable disk spool: what the broker cannot take is fsync'd there and replayed, in order, when
   * it is back and by the next process started on the same directory. See `canAdmit()`.
   */
  spool?: { dir: string; maxBytes: number; instance?: string };
  /** Events sent and awaiting their confirm at any time (the confirm window). Default 10 000. */
  maxInFlight?: number;
  /**
   * Most events packed into one AMQP message (`usage.batch.v1`, NDJSON); 1 sends each event as its
   * own `usage.v1` message. Default 100. A message is also closed at `maxMessageBytes` (default 1 MiB).
   */
  eventsPerMessage?: number;
  maxMessageBytes?: number;
  /**
   * How long the first event waits for others before its message is sent, ms (0: only what the
   * current event-loop turn produced). A full message is sent at once. Default 5.
   */
  lingerMs?: number;
  /** Reconnect backoff (capped exponential with jitter). Default 100 ms doubling up to 10 s. */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Declare the topology on every (re)connect (idempotent). Default true. */
  declareTopology?: boolean;
  /** Shown in the RabbitMQ management UI. Default `tollgate-usage-publisher`. */
  connectionName?: string;
  /** AMQP `app_id` property of each message. Default `tollgate-proxy`. */
  appId?: string;
  onMetrics?: (metric: PublisherMetric, stats: PublisherStats) => void;
  /**
   * Signs every message (`signature.ts`): billing refuses unsigned usage messages. The sent-at time
   * signed is the oldest event's hand-over time (for a spooled event: its `finished_at`).
   */
  signer?: MessageSigner;
}

export interface CloseResult {
  /** Every buffered event was confirmed before the connection closed. */
  drained: boolean;
  /** Events still buffered (lost) when the drain timeout expired. */
  remaining: number;
}

export interface UsagePublisher {
  /** Queues the event for publishing; synchronous, never waits for the broker, never throws. */
  publish(event: UsageEvent): void;
  /**
   * Whether a new billable request may be served: its event could still be confirmed or spooled.
   * False only with a spool that cannot take more (disk full, size bound, write errors) while the
   * broker cannot take events either. Cheap (no I/O): callable on every request.
   */
  canAdmit(): boolean;
  stats(): PublisherStats;
  /** Resolves when every event buffered so far is confirmed (or `timeoutMs` passed: resolves false). */
  flush(timeoutMs?: number): Promise<boolean>;
  /** Flushes (waiting for confirms, reconnecting if needed) up to `drainTimeoutMs`, then closes. */
  close(options?: { drainTimeoutMs?: number }): Promise<CloseResult>;
}
