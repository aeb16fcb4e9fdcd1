import type { Channel, ConsumeMessage } from 'amqplib';
import { backoffDelay, errorMessage, interruptibleSleep } from './backoff';
import { superviseAmqpConnection } from './connection';
import { DEAD_LETTER_REASON_HEADER } from './dead-letters';
import type { EventsLogger } from './logger';
import { declareUsageTopology, type UsageTopology } from './topology';
import { parseUsageEvent, type UsageEvent, usageMessageBodies } from './usage-event';

export interface UsageConsumerOptions {
  /** AMQP_URL. */
  url: string;
  topology: UsageTopology;
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

const NOTHING_REJECTED: ReadonlyMap<string, string> = new Map();

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
  /** Resolves once consuming (for readiness checks and tests); rejects after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  /** Stops consuming, waits for the batch in `handle`, handles what was already received, closes. */
  close(): Promise<void>;
}

interface Batch {
  events: UsageEvent[];
  /**
   * The delivery of each event, in order (same index). The events of one message (`usage.batch.v1`)
   * are contiguous and share it: it is acked once all of them are handled.
   */
  messages: ConsumeMessage[];
  /** The last delivery to ack (multiple); null when every message was dead-lettered at receipt. */
  last: ConsumeMessage | null;
  channel: Channel;
}

/** Batch messages dead-lettered at receipt (an invalid line) whose valid events are still handled. */
const settledAtReceipt = new WeakSet<ConsumeMessage>();

/**
 * Billing's usage-event consumer: manual acks, prefetch, validation with `parseUsageEvent`,
 * batches of up to `batchSize` events or `batchTimeoutMs`, up to `concurrency` batches in `handle`
 * at a time (default one), settled in delivery order.
 * Invalid messages are rejected without requeue (→ dead-letter queue) with an error log.
 * Delivery is at-least-once: a batch can come again (handler failure, lost connection), so
 * `handle` must be idempotent on the event id.
 */
export function createUsageConsumer(options: UsageConsumerOptions): UsageConsumer {
  const { url, topology, logger, handle } = options;
  const prefetch = Math.max(1, options.prefetch);
  const batchSize = Math.max(1, Math.min(options.batchSize ?? 100, prefetch));
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const batchTimeoutMs = options.batchTimeoutMs ?? 50;
  const retry = {
    initialMs: options.retryBackoff?.initialDelayMs ?? 500,
    maxMs: options.retryBackoff?.maxDelayMs ?? 30_000,
  };
  const reconnect = {
    initialMs: options.reconnect?.initialDelayMs ?? 200,
    maxMs: options.reconnect?.maxDelayMs ?? 10_000,
  };
  const declare = options.declareTopology ?? true;
  const log = logger.child({ component: 'usage-consumer' });

  let channel: Channel | null = null;
  let consumerTag: string | null = null;
  let stopping = false;
  const wakeSleeps = new Set<() => void>();

  let collecting: Batch | null = null; // being filled
  let collectTimer: NodeJS.Timeout | null = null;
  const ready: Batch[] = []; // full or timed out, waiting for `handle`
  const inFlight = new Set<Promise<void>>(); // batches in `handle` (incl. retry backoff), ≤ concurrency
  let lastSettled: Promise<void> = Promise.resolve(); // settles when the latest started batch has
  let consecutiveFailures = 0;
  const oldestInFlight: number[] = []; // finished_at (ms) of the first event of each batch in `handle`
  const classify = options.classify ?? (() => 'permanent' as const);
  const permanentAttempts = Math.max(1, options.permanentAttempts ?? 3);

  const counters = { handled: 0, deadLettered: 0, failedBatches: 0, transientRetries: 0 };
  const readyWaiters = new Set<() => void>();

  const settle = (fn: () => void) => {
    try {
      fn();
    } catch {
      // The channel died: the broker requeues every unacked message by itself.
    }
  };

  const sealBatch = () => {
    if (collectTimer) clearTimeout(collectTimer);
    collectTimer = null;
    if (collecting) ready.push(collecting);
    collecting = null;
    drive();
  };

  function drive() {
    while (inFlight.size < concurrency) {
      const batch = ready.shift();
      if (!batch) return;
      const previous = lastSettled;
      const run: Promise<void> = runBatch(batch, previous).finally(() => {
        inFlight.delete(run);
        drive();
      });
      // The next batch settles after this one, even if this one threw (it never does).
      lastSettled = run.catch(() => {});
      inFlight.add(run);
    }
  }

  /** Resolves once no batch is in `handle`. */
  async function idle(): Promise<void> {
    while (inFlight.size > 0) await Promise.all(inFlight);
  }

  /** Sleeps the backoff of the `attempt`-th consecutive failure (cut short by close). */
  async function backoff(attempt: number): Promise<void> {
    if (stopping) return;
    const sleep = interruptibleSleep(backoffDelay(attempt, retry));
    wakeSleeps.add(sleep.wake);
    await sleep.promise;
    wakeSleeps.delete(sleep.wake);
  }

  /** The batch's channel is gone (or we are stopping): the broker redelivers what is unacked. */
  const abandoned = (batch: Batch) => batch.channel !== channel || stopping;

  /**
   * Runs `handle` on `events` until it succeeds (true), fails permanently (false), or the batch is
   * abandoned (null). Transient failures are retried here, in-process, with backoff.
   */
  async function attempt(
    batch: Batch,
    events: UsageEvent[],
    maxPermanent: number,
  ): Promise<ReadonlyMap<string, string> | false | null> {
    let permanent = 0;
    for (;;) {
      try {
        const result = await handle(events);
        consecutiveFailures = 0;
        return result?.rejected ?? NOTHING_REJECTED;
      } catch (err) {
        counters.failedBatches++;
        consecutiveFailures++;
        const kind = classify(err);
        if (kind === 'permanent') permanent++;
        const giveUp = kind === 'permanent' && permanent >= maxPermanent;
        const lagMs = Date.now() - (Date.parse(events[0]?.finished_at ?? '') || Date.now());
        log.error(
          { err, kind, events: events.length, attempt: consecutiveFailures, lagMs },
          giveUp
            ? 'usage events failed permanently'
            : `usage ${events.length > 1 ? 'batch' : 'event'} failed (${kind}); retrying in-process after a backoff`,
        );
        if (giveUp) return false;
        if (kind === 'transient') counters.transientRetries++;
        await backoff(consecutiveFailures);
        if (abandoned(batch)) return null;
      }
    }
  }

  /** Handles a batch, then settles it once `previous` (the batch started before it) has settled. */
  async function runBatch(batch: Batch, previous: Promise<void>): Promise<void> {
    if (batch.channel !== channel) return; // its channel died: the broker redelivers it
    // A publisher retry after a lost confirm can put the same event in twice: hand each id once.
    const seen = new Set<string>();
    const events = batch.events.filter((e) => {
      if (seen.has(e.id)) return false;
      seen.add(e.id);
      return true;
    });
    const oldest = Date.parse(events[0]?.finished_at ?? '') || Date.now();
    oldestInFlight.push(oldest);
    try {
      // A whole batch gets one permanent failure before it is split (its events may be fine alone).
      const ok = await attempt(batch, events, events.length > 1 ? 1 : permanentAttempts);
      // Settle in delivery order: the ack below acks every earlier delivery too ("multiple").
      await previous;
      if (ok === null) return;
      if (ok) {
        if (batch.channel !== channel) {
          log.warn(
            { events: events.length },
            'connection lost while handling a usage batch; it will be redelivered',
          );
          return;
        }
        if (ok.size > 0) {
          settleEach(batch, ok);
          return;
        }
        const last = batch.last;
        if (last !== null) settle(() => batch.channel.ack(last, true));
        counters.handled += events.length;
        return;
      }
      if (events.length === 1) {
        deadLetter(batch, batch.messages, events[0]!);
        return;
      }
      await oneByOne(batch);
    } finally {
      oldestInFlight.splice(oldestInFlight.indexOf(oldest), 1);
    }
  }

  /** A handled batch with refused events: each message acked, or dead-lettered with its reason. */
  function settleEach(batch: Batch, rejected: ReadonlyMap<string, string>): void {
    let reason: string | null = null; // of the current message
    for (let i = 0; i < batch.events.length; i++) {
      const event = batch.events[i]!;
      const msg = batch.messages[i]!;
      const refused = rejected.get(event.id);
      if (refused === undefined) counters.handled++;
      else reason ??= `event ${event.id}: ${refused}`;
      if (batch.messages[i + 1] === msg) continue;
      if (settledAtReceipt.has(msg)) reason = null;
      else if (reason === null) settle(() => batch.channel.ack(msg, false));
      else refuse(batch.channel, msg, reason);
      reason = null;
    }
  }

  /**
   * Dead-letters a message with the reason it can never be recorded: a copy goes to the dead-letter
   * exchange with `x-tollgate-reason` (a nack could carry no reason), then the delivery is acked.
   */
  function refuse(ch: Channel, msg: ConsumeMessage, reason: string): void {
    counters.deadLettered++;
    log.error(
      { reason, messageId: msg.properties.messageId, type: msg.properties.type, bytes: msg.content.length },
      `usage message refused, sent to the dead-letter queue ${topology.deadLetterQueue}: ${reason}`,
    );
    const p = msg.properties;
    settle(() => {
      ch.publish(topology.deadLetterExchange, '', msg.content, {
        persistent: true,
        contentType: p.contentType,
        type: p.type,
        messageId: p.messageId,
        timestamp: p.timestamp,
        appId: p.appId,
        headers: { ...(p.headers ?? {}), [DEAD_LETTER_REASON_HEADER]: reason },
      });
      ch.ack(msg, false);
    });
  }

  /**
   * After a permanent batch failure: each event alone, so one poison event never takes others. A
   * message is settled after its last event: acked when every one was handled, else dead-lettered
   * whole (its handled events are recorded already; billing dedupes them if it is replayed).
   */
  async function oneByOne(batch: Batch): Promise<void> {
    // event id -> handled (true), failed (false) or refused (its reason)
    const done = new Map<string, boolean | string>();
    let failed: UsageEvent | null = null; // of the current message
    let reason: string | null = null; // of the current message's first refused event
    for (let i = 0; i < batch.events.length; i++) {
      const event = batch.events[i]!;
      const msg = batch.messages[i]!;
      let ok = done.get(event.id);
      if (ok === undefined) {
        const r = await attempt(batch, [event], permanentAttempts);
        if (r === null) return; // the rest (still unacked) is redelivered
        ok = r === false ? false : (r.get(event.id) ?? true);
        done.set(event.id, ok);
        if (ok === true) counters.handled++;
      }
      if (batch.channel !== channel) return;
      if (ok === false) failed ??= event;
      else if (ok !== true) reason ??= `event ${event.id}: ${ok}`;
      if (batch.messages[i + 1] === msg) continue; // more events of this message follow
      if (settledAtReceipt.has(msg)) failed = null;
      else if (reason !== null) refuse(batch.channel, msg, reason);
      else if (failed === null) settle(() => batch.channel.ack(msg, false));
      else deadLetter(batch, [msg], failed);
      failed = null;
      reason = null;
    }
  }

  function deadLetter(batch: Batch, messages: ConsumeMessage[], event: UsageEvent): void {
    const unique = [...new Set(messages)].filter((m) => !settledAtReceipt.has(m));
    counters.deadLettered += unique.length;
    log.error(
      { eventId: event.id, accountId: event.account_id, keyId: event.key_id },
      `usage event failed on its own; sent to the dead-letter queue ${topology.deadLetterQueue}`,
    );
    for (const m of unique) settle(() => batch.channel.nack(m, false, false));
  }

  const onMessage = (ch: Channel, msg: ConsumeMessage | null) => {
    if (msg === null) {
      // The broker cancelled us (queue deleted?): start over.
      if (channel === ch) lost(new Error('consumer cancelled by the broker'));
      return;
    }
    if (channel !== ch) return;
    const valid: UsageEvent[] = [];
    let invalid: string | null = null;
    for (const body of usageMessageBodies(msg.content, msg.properties.type)) {
      const parsed = parseUsageEvent(body);
      if (parsed.ok) valid.push(parsed.event);
      else invalid ??= parsed.reason;
    }
    if (invalid === null && valid.length > 0 && options.verifyMessage) {
      const refused = options.verifyMessage(msg, valid);
      if (refused !== null) {
        refuse(ch, msg, refused);
        return;
      }
    }
    if (invalid !== null || valid.length === 0) {
      invalid ??= 'message holds no event';
      counters.deadLettered++;
      log.error(
        {
          reason: invalid,
          messageId: msg.properties.messageId,
          type: msg.properties.type,
          redelivered: msg.fields.redelivered,
          bytes: msg.content.length,
          validEvents: valid.length,
        },
        `invalid usage event sent to the dead-letter queue ${topology.deadLetterQueue}: ${invalid}`,
      );
      // Not "nack multiple": earlier valid deliveries still belong to a batch. A batch message goes
      // whole (the dead-letter replay splits it); its valid events are still recorded below, so
      // nothing billable waits for an operator (billing dedupes them should it be replayed).
      settle(() => ch.nack(msg, false, false));
      if (valid.length === 0) return;
      settledAtReceipt.add(msg);
    }
    if (!collecting) {
      collecting = { events: [], messages: [], last: null, channel: ch };
      collectTimer = setTimeout(sealBatch, batchTimeoutMs);
    }
    for (const event of valid) {
      collecting.events.push(event);
      collecting.messages.push(msg);
    }
    if (invalid === null) collecting.last = msg;
    if (collecting.events.length >= batchSize) sealBatch();
  };

  function dropUnhandled() {
    if (collectTimer) clearTimeout(collectTimer);
    collectTimer = null;
    collecting = null;
    ready.length = 0;
  }

  function lost(err: Error) {
    supervisor.reset(err);
  }

  const supervisor = superviseAmqpConnection<Channel>({
    url,
    logger: log,
    connectionName: options.connectionName ?? 'tollgate-usage-consumer',
    reconnect: { initialDelayMs: reconnect.initialMs, maxDelayMs: reconnect.maxMs },
    retryingNote: 'usage consumer retrying',
    // Batches still in `handle` from the previous connection finish first.
    beforeConnect: async () => {
      await idle();
    },
    async setup(conn) {
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      if (declare) await declareUsageTopology(ch, topology);
      await ch.prefetch(prefetch);
      ch.on('close', () => {
        if (channel === ch) lost(new Error('channel closed'));
      });
      // Deliveries can arrive before `consume` resolves: they must find their channel current.
      channel = ch;
      try {
        const reply = await ch.consume(topology.queue, (msg) => onMessage(ch, msg), { noAck: false });
        consumerTag = reply.consumerTag;
      } catch (err) {
        if (channel === ch) channel = null;
        throw err;
      }
      return ch;
    },
    onUp(_ch, { restored }) {
      if (restored) log.info('RabbitMQ connection restored; consuming usage events again');
      else log.info({ queue: topology.queue, prefetch, batchSize }, 'consuming usage events');
      for (const resolve of readyWaiters) resolve();
      readyWaiters.clear();
    },
    onDown(_ch, err) {
      channel = null;
      consumerTag = null;
      dropUnhandled(); // unacked: the broker redelivers them
      log.warn({ err: errorMessage(err) }, 'lost RabbitMQ; usage consumer reconnecting');
    },
  });

  return {
    stats: () => ({
      connected: consumerTag !== null,
      ...counters,
      lagMs: oldestInFlight.length === 0 ? 0 : Math.max(0, Date.now() - Math.min(...oldestInFlight)),
    }),

    ready(timeoutMs = 10_000) {
      if (consumerTag !== null) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          readyWaiters.delete(done);
          reject(new Error(`usage consumer not connected after ${timeoutMs} ms`));
        }, timeoutMs);
        readyWaiters.add(done);
      });
    },

    async close(): Promise<void> {
      stopping = true;
      for (const wake of wakeSleeps) wake();
      const ch = channel;
      const tag = consumerTag;
      consumerTag = null;
      if (ch && tag) await ch.cancel(tag).catch(() => {});
      // What was already received is handled too (no needless redelivery), then the batch in flight.
      if (collecting) sealBatch();
      while (inFlight.size > 0 || ready.length > 0) {
        drive();
        await idle();
      }
      channel = null;
      await ch?.close().catch(() => {});
      await supervisor.close();
    },
  };
}
