import amqp, { type ChannelModel } from 'amqplib';
import { backoffDelay, errorMessage, interruptibleSleep } from './backoff';
import type { EventsLogger } from './logger';

export interface AmqpSupervisorOptions<S> {
  /** AMQP_URL. */
  url: string;
  /** The owner's logger (already carrying its `component`). */
  logger: EventsLogger;
  /** Shown in the RabbitMQ management UI. */
  connectionName: string;
  /** Reconnect backoff (capped exponential with jitter). Default 100 ms doubling up to 10 s. */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Connection timeout of one attempt. Default 5 s. */
  connectTimeoutMs?: number;
  /**
   * Builds the owner's session on a fresh connection: channels, topology, consume… Throwing closes
   * the connection and counts as a failed attempt. Channel failures after this are reported with
   * `supervisor.reset(err)`.
   */
  setup(connection: ChannelModel): Promise<S>;
  /** The session is live. `restored`: a session was lost (or never up) before; `downMs`: for how long. */
  onUp(session: S, info: { restored: boolean; downMs: number }): void;
  /** The live session was lost (connection closed or `reset`); reconnecting follows. Not called by close(). */
  onDown(session: S, err: Error): void;
  /** Awaited before every connection attempt (e.g. a consumer finishes the batch in its handler). */
  beforeConnect?: () => Promise<void>;
  /** End of the first "unreachable" warning, e.g. `buffering usage events and retrying`. */
  retryingNote?: string;
}

export interface AmqpSupervisor<S> {
  /** The live session, or null while down. */
  readonly session: S | null;
  /** The broker blocked this connection (resource alarm: memory or disk); publishes wait meanwhile. */
  readonly blocked: boolean;
  /** The session failed (a channel closed, a nack…): drop the connection and reconnect. */
  reset(err: Error): void;
  /** Stops reconnecting and closes the connection (the owner closes its channels first if it cares). */
  close(): Promise<void>;
}

/**
 * One RabbitMQ connection, kept alive: connects (retrying with capped exponential backoff), lets the
 * owner build its channels on it, notices a closed or failed connection, tells the owner, and
 * reconnects. Tracks the broker's blocked/unblocked notifications. Used by the usage publisher and
 * the usage consumer, so both behave the same through broker restarts, partitions and alarms.
 */
export function superviseAmqpConnection<S>(options: AmqpSupervisorOptions<S>): AmqpSupervisor<S> {
  const log = options.logger;
  const backoff = {
    initialMs: options.reconnect?.initialDelayMs ?? 100,
    maxMs: options.reconnect?.maxDelayMs ?? 10_000,
  };
  let connection: ChannelModel | null = null;
  let session: S | null = null;
  let blocked = false;
  let stopped = false;
  let connecting = false;
  let everUp = false;
  let downSince = Date.now();
  let downLogged = false;
  let wake: (() => void) | null = null;

  function lost(err: Error) {
    const conn = connection;
    const s = session;
    connection = null;
    session = null;
    blocked = false;
    conn?.close().catch(() => {});
    if (stopped || s === null) return;
    downSince = Date.now();
    downLogged = true;
    options.onDown(s, err);
    void connectLoop();
  }

  async function open(): Promise<void> {
    const conn = await amqp.connect(options.url, {
      timeout: options.connectTimeoutMs ?? 5000,
      clientProperties: { connection_name: options.connectionName },
    });
    conn.on('error', () => {}); // the 'close' that follows carries the handling
    let s: S;
    try {
      s = await options.setup(conn);
    } catch (err) {
      await conn.close().catch(() => {});
      throw err;
    }
    if (stopped) {
      await conn.close().catch(() => {});
      return;
    }
    conn.on('close', (err?: Error) => {
      if (connection === conn) lost(err ?? new Error('connection closed'));
    });
    conn.on('blocked', (reason: string) => {
      if (connection !== conn) return;
      blocked = true;
      log.warn({ reason }, 'RabbitMQ blocked this connection (resource alarm); publishing waits');
    });
    conn.on('unblocked', () => {
      if (connection !== conn) return;
      blocked = false;
      log.info('RabbitMQ unblocked this connection');
    });
    connection = conn;
    session = s;
    const restored = downLogged || everUp;
    const downMs = Date.now() - downSince;
    downLogged = false;
    everUp = true;
    options.onUp(s, { restored, downMs });
  }

  async function connectLoop(): Promise<void> {
    if (connecting) return;
    connecting = true;
    try {
      if (options.beforeConnect) await options.beforeConnect();
      for (let attempt = 0; !stopped && session === null; attempt++) {
        if (attempt > 0) {
          const sleep = interruptibleSleep(backoffDelay(attempt, backoff));
          wake = sleep.wake;
          await sleep.promise;
          wake = null;
          if (stopped) break;
        }
        try {
          await open();
        } catch (err) {
          if (!downLogged) {
            log.warn(
              { err: errorMessage(err) },
              `RabbitMQ unreachable${everUp ? '' : ' at startup'}; ${options.retryingNote ?? 'retrying'}`,
            );
            downLogged = true;
          } else {
            log.debug({ err: errorMessage(err), attempt }, 'RabbitMQ reconnect attempt failed');
          }
        }
      }
    } finally {
      connecting = false;
    }
  }

  void connectLoop();

  return {
    get session() {
      return session;
    },
    get blocked() {
      return blocked;
    },
    reset(err: Error) {
      if (session !== null) lost(err);
    },
    async close() {
      stopped = true;
      wake?.();
      const conn = connection;
      connection = null;
      session = null;
      await conn?.close().catch(() => {});
    },
  };
}
