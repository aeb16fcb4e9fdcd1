import type { ConsumeMessage } from 'amqplib';
import type { EventsLogger } from '../logger';
import type { UsageTopology } from '../topology';
import type { UsageEvent } from '../usage-event';

export interface UsageConsumerOptions {
  /** AMQP_URL. */
  url: string;
  topology: UsageTopology;
  /**
   * The usage partition consumed: the queue `topology.partitions[partition]`. Default 0 (with one
   * partition, the usage queue itself). Billing runs one consumer per partition it takes.
   */
  partition?: number;
  logger: EventsLogger;
  /** Unacknowledged messages the broker may push to this consumer; keep it ≥ 2 × batchSize. */
  prefetch: number;
  /**
   * Handles one batch (idempotent on event ids); the batch is acked only after this resolves. When it
   * throws, `classify` decides: a transient failure (a dependency is down) retries the same batch
   * in-process with backoff until it succeeds — never requeued, so it never counts towards the queue's
   * delivery limit and never reaches the dead-letter queue; a permanent one makes the consumer handle
   * the batch's events one by one, so only the events that fail on their own are dead-lettered.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler without refusals returns nothing
  handle: (batch: UsageEvent[]) => Promise<void | HandleResult>;
  /**
   * Checks a decoded message before its events are batched (billing: signature, recomputed cost, time
   * window): the reason it must never be recorded, or null. A refused message is dead-lettered at once
   * with its reason (header `x-tollgate-reason`), never retried. Synchronous and cheap: it runs on
   * every delivery.
   */
  verifyMessage?: (message: ConsumeMessage, events: readonly UsageEvent[]) => string | null;
  /** Default: every failure is permanent (the batch is split, failing events dead-lettered). */
  classify?: (err: unknown) => FailureKind;
  /** Attempts of a single event failing permanently before it is dead-lettered. Default 3. */
  permanentAttempts?: number;
  /**
   * Most events per batch. Default min(100, prefetch). The events of one message are never split
   * across batches, so a batch may hold up to one message's events more.
   */
  batchSize?: number;
  /**
   * Batches in `handle` at the same time (default 1). With 2, the next batch is written while the
   * previous one commits (the handler's work overlaps the database's). Batches are still settled
   * (acked, split or dead-lettered) strictly in delivery order: a batch waits for the one before
   * it, so a multiple-ack never covers a batch that is still being handled. `handle` must then be
   * safe to run concurrently (idempotent on event ids, consistent lock order).
   */
  concurrency?: number;
  /** Longest wait, from a batch's first event, before handling an incomplete batch. Default 50 ms. */
  batchTimeoutMs?: number;
  /** Wait before retrying a failed batch or event (grows per consecutive failure). 500 ms → 30 s. */
  retryBackoff?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Reconnect backoff after losing the broker. 200 ms → 10 s. */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Declare the topology on every (re)connect (idempotent). Default true. */
  declareTopology?: boolean;
  /** Shown in the RabbitMQ management UI. Default `tollgate-usage-consumer`. */
  connectionName?: string;
}

/**
 * What `handle` refused to record (event id → reason; the others were handled): each message holding
 * a refused event is dead-lettered whole with the reason (its recorded events are deduped should it
 * be replayed), the rest acked.
 */
export interface HandleResult {
  rejected: ReadonlyMap<string, string>;
}

/** How a `handle` failure is treated: retried until it succeeds, or isolated and dead-lettered. */
export type FailureKind = 'transient' | 'permanent';

export interface ConsumerStats {
  connected: boolean;
  /** Events acked after a successful `handle`. */
  handled: number;
  /** Messages rejected to the dead-letter queue (undecodable, invalid, or failing on their own). */
  deadLettered: number;
  /** `handle` calls that threw (each retried or split). */
  failedBatches: number;
  /** In-process retries after transient failures. */
  transientRetries: number;
  /** Age (ms) of the oldest event waiting in the batch being handled, by its `finished_at`; 0 when idle. */
  lagMs: number;
}

export interface UsageConsumer {
  stats(): ConsumerStats;
  /**
   * Messages ready in the consumed queue, not yet delivered to a consumer (the partition's backlog,
   * from the broker); null while disconnected.
   */
  backlog(): Promise<number | null>;
  /** Resolves once consuming (for readiness checks and tests); rejects after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  /** Stops consuming, waits for the batch in `handle`, handles what was already received, closes. */
  close(): Promise<void>;
}
