import type { ConfirmChannel } from 'amqplib';
import { errorMessage } from './backoff';
import { type AmqpSupervisor, superviseAmqpConnection } from './connection';
import type { EventsLogger } from './logger';
import { usagePartition } from './partition';
import { openPublisherChannel } from './publisher/channel';
import { ConfirmWindow, type Entry } from './publisher/confirm-window';
import { socketOf, uncorkSoon } from './publisher/cork';
import { encodeMessage, type MessageLimits, SendScheduler, takeMessage } from './publisher/message-batcher';
import type { CloseResult, PublisherStats, UsagePublisher, UsagePublisherOptions } from './publisher/options';
import { SpoolReplayer } from './publisher/spool-replayer';
import { PublisherTelemetry } from './publisher/telemetry';
import { Spool } from './spool';
import type { UsageEvent } from './usage-event';

export { USAGE_MESSAGE_TYPE } from './publisher/message-batcher';
export type { CloseResult, PublisherStats, UsagePublisher, UsagePublisherOptions } from './publisher/options';
export type { PublisherMetric } from './publisher/telemetry';

/**
 * The proxy's usage-event publisher: an in-memory FIFO drained into a RabbitMQ confirm channel.
 * An event leaves the buffer only when the broker confirmed it; a nack or a lost connection puts
 * every unconfirmed event back at the front, in order, and they are sent again after reconnecting
 * (at-least-once: consumers dedupe on the event id).
 */
export function createUsagePublisher(options: UsagePublisherOptions): UsagePublisher {
  return new AmqpUsagePublisher(options);
}

/**
 * The wiring of the publisher's units: the confirm window (memory), the message batcher and its send
 * scheduler, the spool and its replayer, the telemetry, and the supervised connection.
 */
class AmqpUsagePublisher implements UsagePublisher {
  private readonly log: EventsLogger;
  private readonly maxBuffered: number;
  private readonly limits: MessageLimits;
  /** USAGE_PARTITIONS: an event goes to the queue of its account's partition. */
  private readonly partitions: number;
  private readonly window: ConfirmWindow;
  private readonly scheduler: SendScheduler;
  private readonly telemetry: PublisherTelemetry<PublisherStats>;
  private readonly spool: Spool | null;
  private readonly replayer: SpoolReplayer | null;
  private readonly supervisor: AmqpSupervisor<ConfirmChannel>;
  private readonly idleWaiters = new Set<() => void>();
  private channel: ConfirmChannel | null = null;
  private lostWhy: string | null = null;
  /** Bumped whenever the channel changes: confirms of an older channel are ignored. */
  private generation = 0;
  private waitingDrain = false;
  /** close() finished draining: no new events, no reconnects. */
  private stopped = false;

  constructor(private readonly options: UsagePublisherOptions) {
    this.log = options.logger.child({ component: 'usage-publisher' });
    this.maxBuffered = Math.max(1, options.maxBuffered ?? 100_000);
    const maxInFlight = Math.max(
      1,
      Math.min(options.maxInFlight ?? 10_000, Math.floor(this.maxBuffered / 2)),
    );
    this.limits = {
      eventsPerMessage: Math.max(1, options.eventsPerMessage ?? 100),
      maxMessageBytes: Math.max(1, options.maxMessageBytes ?? 1024 * 1024),
    };
    this.partitions = options.topology.partitions.length;
    this.window = new ConfirmWindow(maxInFlight, this.partitions);
    this.scheduler = new SendScheduler(
      Math.max(0, options.lingerMs ?? 5),
      this.limits.eventsPerMessage,
      () => this.channel !== null && !this.waitingDrain,
      () => this.pump(),
    );
    this.telemetry = new PublisherTelemetry(this.log, () => this.stats(), options.onMetrics);
    this.spool = options.spool ? new Spool({ ...options.spool, logger: this.log }) : null;
    this.replayer = this.spool
      ? new SpoolReplayer(this.spool, this.log, (parsed) => this.partitionOf(parsed?.account_id))
      : null;
    this.supervisor = this.supervise();
  }

  publish(event: UsageEvent): void {
    if (this.stopped) {
      this.countDropped(1, 'published after the publisher was closed');
      return;
    }
    let body: Buffer;
    try {
      body = Buffer.from(JSON.stringify(event));
    } catch (err) {
      this.log.error({ err, eventId: event?.id }, 'usage event is not serialisable; dropped');
      this.telemetry.dropped++;
      return;
    }
    const now = Date.now();
    const entry: Entry = {
      id: event.id,
      body,
      timestamp: Math.floor(now / 1000),
      sentAt: now,
      confirmed: false,
      dropped: false,
      partition: this.partitionOf(event.account_id),
    };
    const { window } = this;
    window.buffered++;
    if (this.spool && (this.channel === null || window.pending.length >= this.maxBuffered)) {
      this.toSpool([entry]);
      return;
    }
    if (!this.spool && window.buffered > this.maxBuffered && window.dropOldest())
      this.countDropped(1, 'buffer full, dropping the oldest (RabbitMQ unreachable or too slow)');
    window.pending.push(entry);
    this.scheduler.linger(window.pending.length, performance.now());
  }

  canAdmit(): boolean {
    if (!this.spool || this.spool.healthy()) return true;
    return this.channel !== null && this.window.pending.length < this.maxBuffered;
  }

  stats(): PublisherStats {
    return {
      buffered: this.window.buffered,
      published: this.telemetry.published,
      dropped: this.telemetry.dropped,
      connected: this.channel !== null,
      blocked: this.supervisor?.blocked ?? false,
      unroutable: this.telemetry.unroutable,
      spooled: this.spool?.events ?? 0,
      spoolBytes: this.spool?.bytes ?? 0,
    };
  }

  flush(timeoutMs = 30_000): Promise<boolean> {
    if (this.idle()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idleWaiters.delete(done);
        resolve(this.idle());
      }, timeoutMs);
      this.idleWaiters.add(done);
    });
  }

  async close({ drainTimeoutMs = 10_000 } = {}): Promise<CloseResult> {
    const drained = await this.flush(drainTimeoutMs);
    this.stopped = true;
    const { spool, window } = this;
    if (!drained && spool) {
      // What the broker did not confirm in time goes to disk for the next start to replay.
      const unconfirmed = [...window.unconfirmed(), ...window.pending.toArray()].filter((e) => !e.segment);
      window.clear();
      this.toSpool(unconfirmed);
      spool.close();
      window.buffered = 0;
      this.log.warn(
        { spooled: unconfirmed.length, spoolDir: this.options.spool?.dir },
        'usage publisher closed before RabbitMQ confirmed every event; the rest is on the disk spool',
      );
    }
    spool?.close();
    const remaining = window.buffered;
    if (!drained && remaining > 0) {
      this.log.error(
        { remaining, drainTimeoutMs },
        `usage publisher closed with ${remaining} unconfirmed usage events (RabbitMQ unreachable); they are lost`,
      );
    }
    const ch = this.channel;
    this.channel = null;
    this.generation++;
    await ch?.close().catch(() => {});
    await this.supervisor.close();
    this.telemetry.flush();
    return { drained, remaining };
  }

  private partitionOf(accountId: unknown): number {
    return typeof accountId === 'string' ? usagePartition(accountId, this.partitions) : 0;
  }

  private idle(): boolean {
    return this.window.buffered === 0 && (this.spool?.events ?? 0) === 0;
  }

  private notifyIdle(): void {
    if (!this.idle()) return;
    for (const resolve of this.idleWaiters) resolve();
    this.idleWaiters.clear();
  }

  private countDropped(count: number, reason: string): void {
    this.telemetry.countDropped(count, reason, {
      buffered: this.window.buffered,
      maxBuffered: this.maxBuffered,
    });
  }

  /** Sends messages while events are pending and the confirm window has room. */
  private pump(): void {
    const ch = this.channel;
    if (!ch || this.waitingDrain || this.window.pending.length === 0) return;
    // One socket write for what this pump sends: amqplib's mux writes each frame chunk of a message
    // on its own (a message of 2 KB or more is two: method + header, then the body) in an immediate
    // it schedules from the next tick; the socket stays corked until the immediate after that one.
    const socket = socketOf(ch);
    socket?.cork();
    try {
      this.send(ch);
    } finally {
      if (socket) process.nextTick(uncorkSoon, socket);
    }
  }

  private send(ch: ConfirmChannel): void {
    const { window, options } = this;
    const gen = this.generation;
    while (window.pending.length > 0 && window.room() > 0) {
      const lane = window.pending.nextLane();
      if (!lane) return;
      const entries = takeMessage(lane, this.limits, window.room());
      window.pending.taken(entries.length);
      window.sent(entries);
      const message = encodeMessage(entries);
      let writable: boolean;
      try {
        writable = ch.publish(
          options.topology.exchange,
          (options.topology.partitions[(entries[0] as Entry).partition] ?? options.topology).routingKey,
          message.body,
          {
            headers: options.signer?.headers(message.body, message.sentAt),
            persistent: true,
            mandatory: true,
            contentType: message.contentType,
            messageId: message.messageId,
            type: message.type,
            timestamp: message.timestamp,
            appId: options.appId ?? 'tollgate-proxy',
          },
          (err) => this.onConfirm(entries, gen, err),
        );
      } catch (err) {
        this.channelLost(err instanceof Error ? err : new Error(String(err)), 'publish failed');
        return;
      }
      if (!writable) {
        // The socket buffer is full: wait for the channel's 'drain' before writing more.
        this.waitingDrain = true;
        return;
      }
    }
  }

  /** The broker's answer for one message: every entry it carried is confirmed (or all go back). */
  private onConfirm(entries: readonly Entry[], gen: number, err: unknown): void {
    if (gen !== this.generation) return; // stale channel: the entries were requeued
    if (err) {
      this.channelLost(err instanceof Error ? err : new Error(String(err)), 'broker nacked a usage event');
      return;
    }
    const published = this.window.confirm(entries, (entry) => this.replayer?.confirmed(entry));
    this.telemetry.countPublished(published);
    this.scheduler.roomFreed(this.window.pending.length);
    this.maybeReplay();
    this.notifyIdle();
  }

  /** Moves memory entries to the disk spool (they stay counted in `buffered` until fsync'd). */
  private toSpool(entries: Entry[]): void {
    if (!this.spool || entries.length === 0) return;
    this.spool.append(
      entries.map((e) => e.body),
      () => {
        this.window.buffered -= entries.length;
        this.notifyIdle();
      },
      () => {
        // The disk refused: keep them in memory (canAdmit() now stops new billable requests).
        for (const e of entries) this.window.pending.push(e);
        this.scheduler.soon();
      },
    );
  }

  /** The next spool segment goes out once the broker is up and memory is empty. */
  private maybeReplay(): void {
    const { replayer, window } = this;
    if (!replayer || !this.channel || replayer.active || window.pending.length > 0 || window.open > 0) return;
    const entries = replayer.next();
    if (!entries) return;
    for (const entry of entries) window.pending.push(entry);
    window.buffered += entries.length;
    this.scheduler.soon();
  }

  /** The current channel failed (nack, publish error, channel closed): drop the connection, reconnect. */
  private channelLost(err: Error, why: string): void {
    if (!this.channel) return;
    this.lostWhy = why;
    this.supervisor.reset(err);
  }

  /** The connection is gone: requeue the unconfirmed (or spool them), wait for the supervisor. */
  private onDown(err: Error): void {
    const why = this.lostWhy ?? 'connection closed';
    this.lostWhy = null;
    this.generation++;
    this.channel = null;
    if (this.stopped) return; // close() has dealt with the unconfirmed
    this.waitingDrain = false;
    const { window } = this;
    window.requeueUnconfirmed();
    if (this.spool) {
      // Unconfirmed events must not live only in memory while the broker is away: spool them. A
      // segment being replayed is still on disk; it is replayed again from the start later.
      const all = window.pending.toArray();
      window.pending.clear();
      window.buffered -= all.filter((e) => e.segment).length;
      this.replayer?.rewind();
      this.toSpool(all.filter((e) => !e.segment));
    }
    this.log.warn(
      { err: errorMessage(err), buffered: window.buffered },
      `RabbitMQ connection lost (${why}); buffering usage events until it is back`,
    );
    this.telemetry.emit({ type: 'connection', connected: false });
  }

  private onUp(ch: ConfirmChannel, restored: boolean, downMs: number): void {
    this.channel = ch;
    this.generation++;
    this.waitingDrain = false;
    const buffered = this.window.buffered;
    if (restored)
      this.log.info(
        { buffered, downMs },
        `RabbitMQ connection restored; sending ${buffered} buffered usage events`,
      );
    else this.log.info({ buffered }, 'connected to RabbitMQ');
    this.telemetry.emit({ type: 'connection', connected: true });
    this.scheduler.soon();
    this.maybeReplay();
  }

  private supervise(): AmqpSupervisor<ConfirmChannel> {
    const { options, log } = this;
    const topology = options.topology;
    return superviseAmqpConnection<ConfirmChannel>({
      url: options.url,
      logger: log,
      connectionName: options.connectionName ?? 'tollgate-usage-publisher',
      reconnect: {
        initialDelayMs: options.reconnect?.initialDelayMs ?? 100,
        maxDelayMs: options.reconnect?.maxDelayMs ?? 10_000,
      },
      retryingNote: 'buffering usage events and retrying',
      setup: (conn) =>
        openPublisherChannel(conn, {
          topology,
          declare: options.declareTopology ?? true,
          log,
          hooks: {
            onClose: (ch) => {
              if (this.channel === ch) this.channelLost(new Error('channel closed'), 'channel closed');
            },
            onDrain: (ch) => {
              if (this.channel !== ch) return;
              this.waitingDrain = false;
              this.scheduler.soon();
            },
            onReturn: (messageId) => {
              this.telemetry.unroutable++;
              log.error(
                { messageId, exchange: topology.exchange, routingKey: topology.routingKey },
                'usage event was routed to no queue (queue or binding missing); it is lost',
              );
            },
          },
        }),
      onUp: (ch, { restored, downMs }) => this.onUp(ch, restored, downMs),
      onDown: (_ch, err) => this.onDown(err),
    });
  }
}
