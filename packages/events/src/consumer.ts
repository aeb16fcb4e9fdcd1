import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { errorMessage } from './backoff';
import { type AmqpSupervisor, superviseAmqpConnection } from './connection';
import { type Batch, BatchAggregator } from './consumer/batch-aggregator';
import type { ConsumerStats, UsageConsumer, UsageConsumerOptions } from './consumer/options';
import { OrderedRunner } from './consumer/ordered-runner';
import { RetryingHandler } from './consumer/retrying-handler';
import { Settlement } from './consumer/settlement';
import { distinctEvents } from './distinct-events';
import type { EventsLogger } from './logger';
import { declareUsageTopology, usagePartitionOf } from './topology';
import { parseUsageEvent, type UsageEvent, usageMessageBodies } from './usage-event';

export { combineConsumers } from './consumer/combined';
export type {
  ConsumerStats,
  FailureKind,
  HandleResult,
  UsageConsumer,
  UsageConsumerOptions,
} from './consumer/options';

/**
 * Billing's usage-event consumer: manual acks, prefetch, validation with `parseUsageEvent`,
 * batches of up to `batchSize` events or `batchTimeoutMs`, up to `concurrency` batches in `handle`
 * at a time (default one), settled in delivery order.
 * Invalid messages are rejected without requeue (→ dead-letter queue) with an error log.
 * Delivery is at-least-once: a batch can come again (handler failure, lost connection), so
 * `handle` must be idempotent on the event id.
 */
export function createUsageConsumer(options: UsageConsumerOptions): UsageConsumer {
  return new AmqpUsageConsumer(options);
}

/** The events of a delivery that decode, and the first reason one did not (null: all did). */
function decodeDelivery(msg: ConsumeMessage): { valid: UsageEvent[]; invalid: string | null } {
  const valid: UsageEvent[] = [];
  let invalid: string | null = null;
  for (const body of usageMessageBodies(msg.content, msg.properties.type)) {
    const parsed = parseUsageEvent(body);
    if (parsed.ok) valid.push(parsed.event);
    else invalid ??= parsed.reason;
  }
  return { valid, invalid };
}

/**
 * The wiring of the consumer's units: decoding at receipt, the batch aggregator, the ordered runner
 * (concurrency, settle order), the retrying handler, the settlement, and the supervised connection.
 */
class AmqpUsageConsumer implements UsageConsumer {
  private readonly log: EventsLogger;
  private readonly prefetch: number;
  private readonly batchSize: number;
  /** The queue consumed (the partition's). */
  private readonly queue: string;
  private readonly permanentAttempts: number;
  private readonly counters = { handled: 0, deadLettered: 0, failedBatches: 0, transientRetries: 0 };
  private readonly aggregator: BatchAggregator;
  private readonly runner: OrderedRunner<Batch>;
  private readonly handler: RetryingHandler;
  private readonly settlement: Settlement;
  private readonly supervisor: AmqpSupervisor<Channel>;
  private readonly readyWaiters = new Set<() => void>();
  /** finished_at (ms) of the first event of each batch in `handle`. */
  private readonly oldestInFlight: number[] = [];
  private channel: Channel | null = null;
  private consumerTag: string | null = null;
  private stopping = false;

  constructor(private readonly options: UsageConsumerOptions) {
    this.log = options.logger.child({ component: 'usage-consumer' });
    this.prefetch = Math.max(1, options.prefetch);
    this.queue = usagePartitionOf(options.topology, options.partition ?? 0).queue;
    this.batchSize = Math.max(1, Math.min(options.batchSize ?? 100, this.prefetch));
    this.permanentAttempts = Math.max(1, options.permanentAttempts ?? 3);
    this.runner = new OrderedRunner(Math.max(1, options.concurrency ?? 1), (batch, previous) =>
      this.runBatch(batch, previous),
    );
    this.aggregator = new BatchAggregator(this.batchSize, options.batchTimeoutMs ?? 50, (batch) =>
      this.runner.enqueue(batch),
    );
    this.handler = new RetryingHandler({
      handle: options.handle,
      classify: options.classify ?? (() => 'permanent'),
      retry: {
        initialMs: options.retryBackoff?.initialDelayMs ?? 500,
        maxMs: options.retryBackoff?.maxDelayMs ?? 30_000,
      },
      log: this.log,
      counters: this.counters,
    });
    this.settlement = new Settlement({
      topology: options.topology,
      log: this.log,
      counters: this.counters,
      channel: () => this.channel,
      handler: this.handler,
      abandoned: (batch) => this.abandoned(batch),
      permanentAttempts: this.permanentAttempts,
    });
    this.supervisor = this.supervise();
  }

  stats(): ConsumerStats {
    const oldest = this.oldestInFlight;
    return {
      connected: this.consumerTag !== null,
      ...this.counters,
      lagMs: oldest.length === 0 ? 0 : Math.max(0, Date.now() - Math.min(...oldest)),
    };
  }

  async backlog(): Promise<number | null> {
    const ch = this.channel;
    if (!ch) return null;
    try {
      return (await ch.checkQueue(this.queue)).messageCount;
    } catch {
      return null; // the channel is closing: the supervisor reconnects
    }
  }

  ready(timeoutMs = 10_000): Promise<void> {
    if (this.consumerTag !== null) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.readyWaiters.delete(done);
        reject(new Error(`usage consumer not connected after ${timeoutMs} ms`));
      }, timeoutMs);
      this.readyWaiters.add(done);
    });
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.handler.stop();
    const ch = this.channel;
    const tag = this.consumerTag;
    this.consumerTag = null;
    if (ch && tag) await ch.cancel(tag).catch(() => {});
    // What was already received is handled too (no needless redelivery), then the batch in flight.
    this.aggregator.seal();
    await this.runner.drain();
    this.channel = null;
    await ch?.close().catch(() => {});
    await this.supervisor.close();
  }

  /** The batch's channel is gone (or we are stopping): the broker redelivers what is unacked. */
  private abandoned(batch: Batch): boolean {
    return batch.channel !== this.channel || this.stopping;
  }

  /** Handles a batch, then settles it once `previous` (the batch started before it) has settled. */
  private async runBatch(batch: Batch, previous: Promise<void>): Promise<void> {
    if (batch.channel !== this.channel) return; // its channel died: the broker redelivers it
    // A publisher retry after a lost confirm can put the same event in twice: hand each id once.
    const events = distinctEvents(batch.events);
    const oldest = Date.parse(events[0]?.finished_at ?? '') || Date.now();
    this.oldestInFlight.push(oldest);
    try {
      // A whole batch gets one permanent failure before it is split (its events may be fine alone).
      const maxPermanent = events.length > 1 ? 1 : this.permanentAttempts;
      const ok = await this.handler.attempt(events, maxPermanent, () => this.abandoned(batch));
      // Settle in delivery order: the ack below acks every earlier delivery too ("multiple").
      await previous;
      if (ok === null) return;
      if (ok === false) {
        if (events.length === 1) this.settlement.deadLetter(batch, batch.messages, events[0] as UsageEvent);
        else await this.settlement.oneByOne(batch);
        return;
      }
      if (batch.channel !== this.channel) {
        this.log.warn(
          { events: events.length },
          'connection lost while handling a usage batch; it will be redelivered',
        );
        return;
      }
      if (ok.size > 0) this.settlement.settleEach(batch, ok);
      else this.settlement.ackAll(batch, events.length);
    } finally {
      this.oldestInFlight.splice(this.oldestInFlight.indexOf(oldest), 1);
    }
  }

  private onMessage(ch: Channel, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // The broker cancelled us (queue deleted?): start over.
      if (this.channel === ch) this.supervisor.reset(new Error('consumer cancelled by the broker'));
      return;
    }
    if (this.channel !== ch) return;
    const { valid, invalid } = decodeDelivery(msg);
    if (invalid === null && valid.length > 0 && this.options.verifyMessage) {
      const refused = this.options.verifyMessage(msg, valid);
      if (refused !== null) {
        this.settlement.refuse(ch, msg, refused);
        return;
      }
    }
    if (invalid !== null || valid.length === 0) {
      // Its valid events are still recorded below, so nothing billable waits for an operator
      // (billing dedupes them should the message be replayed).
      this.settlement.invalid(ch, msg, invalid ?? 'message holds no event', valid.length);
      if (valid.length === 0) return;
    }
    this.aggregator.add(ch, msg, valid, invalid === null);
  }

  private async setup(conn: ChannelModel): Promise<Channel> {
    const { topology } = this.options;
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    if (this.options.declareTopology ?? true) await declareUsageTopology(ch, topology);
    await ch.prefetch(this.prefetch);
    ch.on('close', () => {
      if (this.channel === ch) this.supervisor.reset(new Error('channel closed'));
    });
    // Deliveries can arrive before `consume` resolves: they must find their channel current.
    this.channel = ch;
    try {
      const reply = await ch.consume(this.queue, (msg) => this.onMessage(ch, msg), { noAck: false });
      this.consumerTag = reply.consumerTag;
    } catch (err) {
      if (this.channel === ch) this.channel = null;
      throw err;
    }
    return ch;
  }

  private supervise(): AmqpSupervisor<Channel> {
    const { options, log } = this;
    return superviseAmqpConnection<Channel>({
      url: options.url,
      logger: log,
      connectionName: options.connectionName ?? 'tollgate-usage-consumer',
      reconnect: {
        initialDelayMs: options.reconnect?.initialDelayMs ?? 200,
        maxDelayMs: options.reconnect?.maxDelayMs ?? 10_000,
      },
      retryingNote: 'usage consumer retrying',
      // Batches still in `handle` from the previous connection finish first.
      beforeConnect: () => this.runner.idle(),
      setup: (conn) => this.setup(conn),
      onUp: (_ch, { restored }) => {
        if (restored) log.info('RabbitMQ connection restored; consuming usage events again');
        else
          log.info(
            { queue: this.queue, prefetch: this.prefetch, batchSize: this.batchSize },
            'consuming usage events',
          );
        for (const resolve of this.readyWaiters) resolve();
        this.readyWaiters.clear();
      },
      onDown: (_ch, err) => {
        this.channel = null;
        this.consumerTag = null;
        // Unacked: the broker redelivers them.
        this.aggregator.drop();
        this.runner.clearQueued();
        log.warn({ err: errorMessage(err) }, 'lost RabbitMQ; usage consumer reconnecting');
      },
    });
  }
}
