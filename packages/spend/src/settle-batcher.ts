import type { SettleArgs, SpendStore } from './store-types';

/** Settles sent at once without waiting for the linger (one settle script call covers them). */
const SETTLE_BATCH = 128;

export interface SettleBatcher {
  /** Resolves once the settle reached Redis with its batch; rejects when its hash is not a hash or Redis failed. */
  settle(args: SettleArgs): Promise<void>;
  /** Sends the settles still waiting (shutdown, before Redis is closed). */
  flush(): Promise<void>;
  /**
   * Sends the settles waiting, if any, now: called by an admission just before its own script call,
   * so they leave in the admission's socket write (a client that batches a turn's commands: the
   * proxy's `batchWrites`, or ioredis auto-pipelining) and their replies come
   * back in its read — no timer, write or wake-up of their own (never rejects).
   */
  ride(): void;
}

/**
 * Settles wait up to `lingerMs` (or until `batch` of them wait) and go to Redis in one script call
 * (`SpendStore.settleMany`): off the request path, one call instead of one per request. `lingerMs` 0 =
 * the settles of one event-loop turn. Should the process die before a batch is sent, its holds lapse
 * with their leases like any other of a crashed process (the guard stops renewing a lease when settle
 * is called): the cost is only that a finished request's worst case stays held for the linger.
 * An admission sends the waiting settles with its own call (`ride`), ahead of it: under a steady
 * stream of requests the linger never fires and settles cost no write or wake-up of their own.
 */
export function createSettleBatcher(options: {
  store: Pick<SpendStore, 'settleMany'>;
  lingerMs: number;
  batch?: number;
}): SettleBatcher {
  const batchSize = options.batch ?? SETTLE_BATCH;
  interface Waiting {
    args: SettleArgs;
    resolve: () => void;
    reject: (err: unknown) => void;
  }
  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | NodeJS.Immediate | null = null;

  const send = (): Promise<void> => {
    if (timer) {
      if (options.lingerMs > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
    }
    timer = null;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return Promise.resolve();
    return options.store.settleMany(batch.map((w) => w.args)).then(
      (failed) => {
        for (const w of batch) {
          if (failed.has(w.args.requestId))
            w.reject(new Error(`spend hash of ${w.args.requestId} is not a hash`));
          else w.resolve();
        }
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  };

  return {
    settle(args) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ args, resolve, reject });
        if (waiting.length >= batchSize) void send();
        else if (!timer) {
          timer =
            options.lingerMs > 0
              ? setTimeout(() => void send(), options.lingerMs)
              : setImmediate(() => void send());
        }
      });
    },
    flush: send,
    ride() {
      if (waiting.length > 0) void send();
    },
  };
}
