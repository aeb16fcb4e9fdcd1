import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { errorMessage } from './backoff';
import { type AmqpSupervisor, superviseAmqpConnection } from './connection';
import { Fifo } from './fifo';
import type { EventsLogger } from './logger';
import type { MessageSigner } from './signature';
import { Spool } from './spool';
import { declareUsageTopology, type UsageTopology } from './topology';
import { USAGE_BATCH_MESSAGE_TYPE, type UsageEvent, usageBatchBody } from './usage-event';

/** AMQP `type` property of version-1 usage events (`usageEventSchemas.usage[1]`). */
export const USAGE_MESSAGE_TYPE = 'usage.v1';

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

/** Change notifications for metrics (counters take the deltas, gauges read `stats`). */
export type PublisherMetric =
  | { type: 'published'; count: number }
  | { type: 'dropped'; count: number }
  | { type: 'connection'; connected: boolean };

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

interface Entry {
  id: string;
  body: Buffer;
  timestamp: number;
  /** When the event was handed to the publisher (ms); signed with its message. */
  sentAt: number;
  confirmed: boolean;
  dropped: boolean;
  /** Replayed from this spool segment (already on disk). */
  segment?: string;
}

const DROP_LOG_INTERVAL_MS = 10_000;

function oldestSentAt(entries: readonly Entry[]): number {
  let at = Number.POSITIVE_INFINITY;
  for (const e of entries) if (e.sentAt < at) at = e.sentAt;
  return at;
}

/**
 * The proxy's usage-event publisher: an in-memory FIFO drained into a RabbitMQ confirm channel.
 * An event leaves the buffer only when the broker confirmed it; a nack or a lost connection puts
 * every unconfirmed event back at the front, in order, and they are sent again after reconnecting
 * (at-least-once: consumers dedupe on the event id).
 */
export function createUsagePublisher(options: UsagePublisherOptions): UsagePublisher {
  const { url, topology, logger } = options;
  const maxBuffered = Math.max(1, options.maxBuffered ?? 100_000);
  const maxInFlight = Math.max(1, Math.min(options.maxInFlight ?? 10_000, Math.floor(maxBuffered / 2)));
  const backoff = {
    initialMs: options.reconnect?.initialDelayMs ?? 100,
    maxMs: options.reconnect?.maxDelayMs ?? 10_000,
  };
  const eventsPerMessage = Math.max(1, options.eventsPerMessage ?? 100);
  const maxMessageBytes = Math.max(1, options.maxMessageBytes ?? 1024 * 1024);
  const lingerMs = Math.max(0, options.lingerMs ?? 5);
  const declare = options.declareTopology ?? true;
  const appId = options.appId ?? 'tollgate-proxy';
  const log = logger.child({ component: 'usage-publisher' });

  const spool = options.spool ? new Spool({ ...options.spool, logger: log }) : null;
  /** The spool segment being replayed: its events are in `pending`/`inflight` until all confirmed. */
  let replay: { file: string; events: number; outstanding: number } | null = null;
  let segments: string[] = spool ? spool.replayable() : []; // adopted from stopped processes at start
  const pending = new Fifo<Entry>(); // not sent on the current channel, oldest first
  const inflight = new Fifo<Entry>(); // sent on the current channel, in send order
  let inflightOpen = 0; // entries of `inflight` neither confirmed nor dropped
  let buffered = 0;
  let published = 0;
  let dropped = 0;
  let unroutable = 0;

  let channel: ConfirmChannel | null = null;
  let supervisor: AmqpSupervisor<ConfirmChannel> | null = null; // set once the functions below exist
  let lostWhy: string | null = null;
  let generation = 0;
  let waitingDrain = false;
  let pumpScheduled = false;
  let lingerTimer: NodeJS.Timeout | null = null;
  let stopped = false; // close() finished draining: no new events, no reconnects

  let pendingPublishedDelta = 0;
  let pendingDroppedDelta = 0;
  let metricsScheduled = false;
  let droppedSinceLog = 0;
  let lastDropLog = 0;
  const idleWaiters = new Set<() => void>();

  const stats = (): PublisherStats => ({
    buffered,
    published,
    dropped,
    connected: channel !== null,
    blocked: supervisor?.blocked ?? false,
    unroutable,
    spooled: spool?.events ?? 0,
    spoolBytes: spool?.bytes ?? 0,
  });

  const emit = (metric: PublisherMetric) => {
    if (!options.onMetrics) return;
    try {
      options.onMetrics(metric, stats());
    } catch (err) {
      log.error({ err }, 'usage publisher onMetrics callback threw');
    }
  };

  const flushMetrics = () => {
    metricsScheduled = false;
    if (pendingPublishedDelta > 0) {
      const count = pendingPublishedDelta;
      pendingPublishedDelta = 0;
      emit({ type: 'published', count });
    }
    if (pendingDroppedDelta > 0) {
      const count = pendingDroppedDelta;
      pendingDroppedDelta = 0;
      emit({ type: 'dropped', count });
    }
  };
  const scheduleMetrics = () => {
    if (metricsScheduled || !options.onMetrics) return;
    metricsScheduled = true;
    setImmediate(flushMetrics);
  };

  const notifyIdle = () => {
    if (buffered !== 0 || (spool?.events ?? 0) !== 0) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters.clear();
  };

  const recordDrop = (count: number, reason: string) => {
    dropped += count;
    pendingDroppedDelta += count;
    droppedSinceLog += count;
    scheduleMetrics();
    const now = Date.now();
    // One error line per 10 s at most: a broker outage at thousands of requests per second must not
    // turn into thousands of log lines per second.
    if (now - lastDropLog >= DROP_LOG_INTERVAL_MS) {
      log.error(
        { droppedEvents: droppedSinceLog, droppedTotal: dropped, buffered, maxBuffered },
        `usage events dropped: ${reason}`,
      );
      lastDropLog = now;
      droppedSinceLog = 0;
    }
  };

  const dropOldest = () => {
    let victim = pending.shift();
    if (!victim) {
      // Only when maxBuffered is tiny: the oldest is already on the wire; forget it.
      for (const entry of inflight.toArray()) {
        if (!entry.confirmed && !entry.dropped) {
          victim = entry;
          entry.dropped = true;
          inflightOpen--;
          break;
        }
      }
    }
    if (!victim) return;
    buffered--;
    recordDrop(1, 'buffer full, dropping the oldest (RabbitMQ unreachable or too slow)');
  };

  const schedulePump = () => {
    if (pumpScheduled || !channel || waitingDrain) return;
    pumpScheduled = true;
    setImmediate(pump);
  };
  /**
   * A new event: sent with the next pump when a message's worth is waiting (or lingering is off),
   * else after `lingerMs` from the first waiting event, with whatever came meanwhile.
   */
  const scheduleLinger = () => {
    if (lingerMs === 0 || pending.length >= eventsPerMessage) {
      schedulePump();
      return;
    }
    if (lingerTimer !== null || pumpScheduled) return;
    lingerTimer = setTimeout(onLinger, lingerMs);
  };
  function onLinger() {
    lingerTimer = null;
    schedulePump();
  }

  /** The broker's answer for one message: every entry it carried is confirmed (or all go back). */
  const onConfirm = (entries: readonly Entry[], gen: number, err: unknown) => {
    if (gen !== generation) return; // stale channel: the entries were requeued
    if (err) {
      channelLost(err instanceof Error ? err : new Error(String(err)), 'broker nacked a usage event');
      return;
    }
    for (const entry of entries) {
      if (entry.confirmed) continue;
      entry.confirmed = true;
      if (!entry.dropped) {
        inflightOpen--;
        buffered--;
        published++;
        pendingPublishedDelta++;
      }
      if (entry.segment && replay && entry.segment === replay.file && --replay.outstanding === 0) {
        spool?.removeFile(replay.file, replay.events);
        replay = null;
      }
    }
    scheduleMetrics();
    while (inflight.peek()?.confirmed) inflight.shift();
    schedulePump();
    maybeReplay();
    notifyIdle();
  };

  /** Moves memory entries to the disk spool (they stay counted in `buffered` until fsync'd). */
  const toSpool = (entries: Entry[]) => {
    if (!spool || entries.length === 0) return;
    spool.append(
      entries.map((e) => e.body),
      () => {
        buffered -= entries.length;
        notifyIdle();
      },
      () => {
        // The disk refused: keep them in memory (canAdmit() now stops new billable requests).
        for (const e of entries) pending.push(e);
        schedulePump();
      },
    );
  };

  /**
   * Replays the next spool segment once the broker is up and memory is empty: its events go through
   * the normal confirm path; the segment is deleted when the last one is confirmed.
   */
  function maybeReplay() {
    if (!spool || !channel || replay || pending.length > 0 || inflightOpen > 0) return;
    if (segments.length === 0) {
      if (spool.events === 0) return;
      segments = spool.replayable();
    }
    const file = segments.shift();
    if (!file) return;
    const bodies = spool.read(file);
    if (bodies.length === 0) {
      spool.removeFile(file, 0);
      maybeReplay();
      return;
    }
    replay = { file, events: bodies.length, outstanding: bodies.length };
    const timestamp = Math.floor(Date.now() / 1000);
    for (const body of bodies) {
      let id = '';
      let sentAt = Date.now();
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { id?: unknown; finished_at?: unknown };
        id = String(parsed.id ?? '');
        // Handed over when it finished: the signed time stays the event's own, however long it waited.
        const finished = typeof parsed.finished_at === 'string' ? Date.parse(parsed.finished_at) : Number.NaN;
        if (Number.isFinite(finished) && finished < sentAt) sentAt = finished;
      } catch {
        // a torn or foreign line: published as is, billing dead-letters what it cannot decode
      }
      pending.push({ id, body, timestamp, sentAt, confirmed: false, dropped: false, segment: file });
      buffered++;
    }
    log.info({ segment: file, events: bodies.length }, 'replaying spooled usage events');
    schedulePump();
  }

  /** The next message's entries, oldest first: up to `eventsPerMessage` and `maxMessageBytes`. */
  function nextMessage(): Entry[] {
    const entries: Entry[] = [];
    let bytes = 0;
    while (entries.length < eventsPerMessage && inflightOpen + entries.length < maxInFlight) {
      const next = pending.peek();
      if (!next) break;
      if (entries.length > 0 && bytes + next.body.length + 1 > maxMessageBytes) break;
      pending.shift();
      entries.push(next);
      bytes += next.body.length + 1;
    }
    return entries;
  }

  function pump() {
    pumpScheduled = false;
    if (lingerTimer !== null) {
      clearTimeout(lingerTimer);
      lingerTimer = null;
    }
    const ch = channel;
    if (!ch || waitingDrain) return;
    const gen = generation;
    while (pending.length > 0 && inflightOpen < maxInFlight) {
      const entries = nextMessage();
      const first = entries[0] as Entry;
      for (const entry of entries) inflight.push(entry);
      inflightOpen += entries.length;
      const single = entries.length === 1;
      const body = single ? first.body : usageBatchBody(entries.map((e) => e.body));
      let writable: boolean;
      try {
        writable = ch.publish(
          topology.exchange,
          topology.routingKey,
          body,
          {
            headers: options.signer?.headers(body, oldestSentAt(entries)),
            persistent: true,
            mandatory: true,
            contentType: single ? 'application/json' : 'application/x-ndjson',
            messageId: first.id,
            type: single ? USAGE_MESSAGE_TYPE : USAGE_BATCH_MESSAGE_TYPE,
            timestamp: first.timestamp,
            appId,
          },
          (err) => onConfirm(entries, gen, err),
        );
      } catch (err) {
        channelLost(err instanceof Error ? err : new Error(String(err)), 'publish failed');
        return;
      }
      if (!writable) {
        // The socket buffer is full: wait for the channel's 'drain' before writing more.
        waitingDrain = true;
        return;
      }
    }
  }

  /** The current channel failed (nack, publish error, channel closed): drop the connection, reconnect. */
  function channelLost(err: Error, why: string) {
    if (!channel) return;
    lostWhy = why;
    supervisor?.reset(err);
  }

  /** The connection is gone: requeue the unconfirmed (or spool them), wait for the supervisor. */
  function onDown(err: Error) {
    const why = lostWhy ?? 'connection closed';
    lostWhy = null;
    generation++;
    channel = null;
    if (stopped) return; // close() has dealt with the unconfirmed
    waitingDrain = false;
    const unconfirmed = inflight.toArray().filter((e) => !e.confirmed && !e.dropped);
    inflight.clear();
    inflightOpen = 0;
    pending.prepend(unconfirmed);
    if (spool) {
      // Unconfirmed events must not live only in memory while the broker is away: spool them. A
      // segment being replayed is still on disk; it is replayed again from the start later.
      const all = pending.toArray();
      pending.clear();
      const replayed = all.filter((e) => e.segment);
      buffered -= replayed.length;
      if (replay) segments.unshift(replay.file);
      replay = null;
      toSpool(all.filter((e) => !e.segment));
    }
    log.warn(
      { err: errorMessage(err), buffered },
      `RabbitMQ connection lost (${why}); buffering usage events until it is back`,
    );
    emit({ type: 'connection', connected: false });
  }

  /**
   * The whole topology when the broker user may declare it (development, tests); else only the usage
   * exchange: the proxy's own user (docs/operations.md "Security") may write to that exchange and
   * nothing else, and billing (or the provisioning) declares its queues and their binding.
   */
  async function declareAllowed(conn: ChannelModel): Promise<void> {
    const probe = await conn.createChannel();
    probe.on('error', () => {});
    try {
      await declareUsageTopology(probe, topology);
      await probe.close().catch(() => {});
    } catch (err) {
      if (!/ACCESS_REFUSED/.test(errorMessage(err))) throw err;
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      await ch.assertExchange(topology.exchange, 'topic', { durable: true });
      await ch.close().catch(() => {});
      log.info(
        { exchange: topology.exchange },
        'broker user may declare the usage exchange only; declared it',
      );
    }
  }

  async function setupChannel(conn: ChannelModel): Promise<ConfirmChannel> {
    if (declare) await declareAllowed(conn);
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => {});
    ch.on('close', () => {
      if (channel === ch) channelLost(new Error('channel closed'), 'channel closed');
    });
    ch.on('drain', () => {
      if (channel !== ch) return;
      waitingDrain = false;
      schedulePump();
    });
    ch.on('return', (msg: { properties: { messageId?: unknown } }) => {
      unroutable++;
      log.error(
        { messageId: msg.properties.messageId, exchange: topology.exchange, routingKey: topology.routingKey },
        'usage event was routed to no queue (queue or binding missing); it is lost',
      );
    });
    return ch;
  }

  function onUp(ch: ConfirmChannel, { restored, downMs }: { restored: boolean; downMs: number }) {
    channel = ch;
    generation++;
    waitingDrain = false;
    if (restored) {
      log.info(
        { buffered, downMs },
        `RabbitMQ connection restored; sending ${buffered} buffered usage events`,
      );
    } else {
      log.info({ buffered }, 'connected to RabbitMQ');
    }
    emit({ type: 'connection', connected: true });
    schedulePump();
    maybeReplay();
  }

  const idle = () => buffered === 0 && (spool?.events ?? 0) === 0;
  const flush = (timeoutMs = 30_000): Promise<boolean> => {
    if (idle()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        idleWaiters.delete(done);
        resolve(idle());
      }, timeoutMs);
      idleWaiters.add(done);
    });
  };

  supervisor = superviseAmqpConnection<ConfirmChannel>({
    url,
    logger: log,
    connectionName: options.connectionName ?? 'tollgate-usage-publisher',
    reconnect: { initialDelayMs: backoff.initialMs, maxDelayMs: backoff.maxMs },
    retryingNote: 'buffering usage events and retrying',
    setup: setupChannel,
    onUp,
    onDown: (_ch, err) => onDown(err),
  });

  return {
    publish(event: UsageEvent): void {
      if (stopped) {
        recordDrop(1, 'published after the publisher was closed');
        return;
      }
      let body: Buffer;
      try {
        body = Buffer.from(JSON.stringify(event));
      } catch (err) {
        log.error({ err, eventId: event?.id }, 'usage event is not serialisable; dropped');
        dropped++;
        return;
      }
      const entry: Entry = {
        id: event.id,
        body,
        timestamp: Math.floor(Date.now() / 1000),
        sentAt: Date.now(),
        confirmed: false,
        dropped: false,
      };
      buffered++;
      if (spool && (channel === null || pending.length >= maxBuffered)) {
        toSpool([entry]);
        return;
      }
      if (!spool && buffered > maxBuffered) dropOldest();
      pending.push(entry);
      scheduleLinger();
    },

    canAdmit(): boolean {
      if (!spool || spool.healthy()) return true;
      return channel !== null && pending.length < maxBuffered;
    },

    stats,
    flush,

    async close({ drainTimeoutMs = 10_000 } = {}): Promise<CloseResult> {
      const drained = await flush(drainTimeoutMs);
      stopped = true;
      if (!drained && spool) {
        // What the broker did not confirm in time goes to disk for the next start to replay.
        const unconfirmed = [
          ...inflight.toArray().filter((e) => !e.confirmed && !e.dropped && !e.segment),
          ...pending.toArray().filter((e) => !e.segment),
        ];
        inflight.clear();
        pending.clear();
        toSpool(unconfirmed);
        spool.close();
        buffered = 0;
        log.warn(
          { spooled: unconfirmed.length, spoolDir: options.spool?.dir },
          'usage publisher closed before RabbitMQ confirmed every event; the rest is on the disk spool',
        );
      }
      spool?.close();
      const remaining = buffered;
      if (!drained && remaining > 0) {
        log.error(
          { remaining, drainTimeoutMs },
          `usage publisher closed with ${remaining} unconfirmed usage events (RabbitMQ unreachable); they are lost`,
        );
      }
      const ch = channel;
      channel = null;
      generation++;
      await ch?.close().catch(() => {});
      await supervisor?.close();
      flushMetrics();
      return { drained, remaining };
    },
  };
}
