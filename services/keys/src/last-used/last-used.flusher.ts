import type { Logger } from '@tollgate/logger';
import type { KeysDb } from '../database';
import { touchLastUsed } from '../keys/keys.repository';
import type { LastUsedStore } from './last-used.store';

export interface LastUsedFlusher {
  /** Moves every pending value to Postgres now; returns how many keys were written. */
  flush(): Promise<number>;
  /** Stops the timer and runs a last flush. */
  stop(): Promise<void>;
}

/**
 * Every `intervalMs`: take the Redis hash atomically, write `last_used_at = greatest(existing, value)`
 * in one batched UPDATE. On a database failure the values go back to Redis (newest wins).
 * No Postgres write per request.
 */
export function startLastUsedFlusher(deps: {
  db: KeysDb;
  store: LastUsedStore;
  intervalMs: number;
  logger: Logger;
}): LastUsedFlusher {
  const { db, store, logger } = deps;
  let running: Promise<number> | null = null;

  const flushOnce = async (): Promise<number> => {
    const entries = await store.take();
    if (entries.length === 0) return 0;
    try {
      return await touchLastUsed(db, entries);
    } catch (err) {
      await store.restore(entries).catch((e: unknown) => {
        logger.error(
          { err: e, count: entries.length },
          'could not restore last_used values after a failed flush',
        );
      });
      throw err;
    }
  };

  // Never two flushes at once: a caller joins the one in flight, then runs its own.
  const flush = async (): Promise<number> => {
    while (running !== null) await running.catch(() => 0);
    running = flushOnce();
    try {
      return await running;
    } finally {
      running = null;
    }
  };

  const timer = setInterval(() => {
    flush().catch((err: unknown) => logger.warn({ err }, 'last_used_at flush failed; will retry'));
  }, deps.intervalMs);
  timer.unref();

  return {
    flush,
    async stop() {
      clearInterval(timer);
      await flush().catch((err: unknown) => logger.warn({ err }, 'final last_used_at flush failed'));
    },
  };
}
