import type { Logger } from '@tollgate/logger';
import type { CommittedAccount, CommittedKey, SpendStore } from '@tollgate/spend';
import { createCommittedBacklog } from './committed-backlog';
import { classifyBillingFailure } from './failure';

/**
 * Most request ids kept waiting for Redis after their batches were committed and acked. Beyond, a
 * batch whose Redis update fails is not acked (the consumer retries it in-process until Redis is
 * back), so memory stays bounded however long Redis is away.
 */
const REDIS_BACKLOG_MAX = 200_000;

export interface SpendSync {
  /**
   * After a commit: raises the Redis counters to the committed totals (`applyCommitted`), trying
   * `attempts` times. Redis still away: kept in the backlog and retried every `retryMs` (resolves);
   * past the backlog's bound it throws, so the batch is not acked. Any other failure is logged:
   * Postgres holds the truth, never re-bill to fix Redis.
   */
  afterCommit(keys: CommittedKey[], accounts: CommittedAccount[]): Promise<void>;
  /** Request ids whose Redis update waits for Redis to come back. */
  backlog(): number;
  /** One more try of the backlog; then the retry timer stops. */
  close(): Promise<void>;
}

/**
 * Why a backlog: dropping the updates that could not reach Redis (as before) left Redis short of
 * Postgres after an outage: the pending costs (`p:`) of those requests stayed held for their 7-day
 * TTL on top of the raised counters (keys refused below their limit), and the counters stayed below
 * Postgres until the key's next commit. The batch itself is acked: Postgres has it, and billing keeps
 * committing while Redis is away (an admission after the outage rebuilds the hashes whose holds lapsed
 * from Postgres, so it must be up to date).
 */
export function createSpendSync(deps: {
  spend: Pick<SpendStore, 'applyCommitted'>;
  clock: () => Date;
  log: Logger;
  /** Attempts at the Redis update after commit before it is left to the backlog's retries (default 4). */
  attempts?: number;
  /** How often the updates waiting for Redis are tried again (default 500 ms). */
  retryMs?: number;
  /** Most request ids waiting for Redis (default REDIS_BACKLOG_MAX). */
  backlogMax?: number;
}): SpendSync {
  const attempts = deps.attempts ?? 4;
  const retryMs = deps.retryMs ?? 500;
  const backlogMax = deps.backlogMax ?? REDIS_BACKLOG_MAX;
  const { log } = deps;
  const backlog = createCommittedBacklog();
  let retryTimer: NodeJS.Timeout | null = null;
  let retrying: Promise<void> | null = null;
  const apply = (keys: CommittedKey[], accounts: CommittedAccount[]) =>
    deps.spend.applyCommitted(deps.clock().getTime(), keys, accounts);
  const counts = (keys: CommittedKey[], accounts: CommittedAccount[]) => ({
    keys: keys.length,
    accounts: accounts.length,
  });

  const retryBacklog = (): Promise<void> => {
    retrying ??= (async () => {
      const { keys, accounts } = backlog.take();
      if (keys.length + accounts.length === 0) return;
      try {
        await apply(keys, accounts);
        log.info(counts(keys, accounts), 'spend counters updated in Redis after it returned');
      } catch (err) {
        if (classifyBillingFailure(err) !== 'transient') {
          log.error({ err, ...counts(keys, accounts) }, 'spend counters not updated in Redis after commit');
          return;
        }
        backlog.add(keys, accounts); // still away: merged with what failed meanwhile
      }
    })().finally(() => {
      retrying = null;
      if (backlog.ids > 0 || !backlog.empty) scheduleRetry();
    });
    return retrying;
  };
  const scheduleRetry = () => {
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void retryBacklog();
    }, retryMs);
    retryTimer.unref();
  };

  return {
    backlog: () => backlog.ids,

    async afterCommit(keys, accounts) {
      for (let attempt = 1; ; attempt++) {
        try {
          await apply(keys, accounts);
          return;
        } catch (err) {
          if (attempt < attempts) {
            await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
            continue;
          }
          if (classifyBillingFailure(err) !== 'transient') {
            // Not an outage (e.g. a hash that is not a hash): trying again changes nothing.
            log.error({ err, ...counts(keys, accounts) }, 'spend counters not updated in Redis after commit');
            return;
          }
          // Redis is away. Bounded memory: past the cap the batch waits too (not acked; the consumer
          // retries it, which inserts nothing again and brings Redis up to date).
          let ids = 0;
          for (const o of [...keys, ...accounts]) ids += o.requestIds.length;
          if (backlog.ids + ids > backlogMax) throw err;
          log.warn(
            { err, ...counts(keys, accounts) },
            'Redis unreachable after commit: spend counter update kept and retried until it returns',
          );
          backlog.add(keys, accounts);
          scheduleRetry();
          return;
        }
      }
    },

    async close() {
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      await retrying;
      if (backlog.empty) return;
      const { keys, accounts } = backlog.take();
      try {
        await apply(keys, accounts);
      } catch (err) {
        log.error(
          { err, ...counts(keys, accounts) },
          'spend counters not updated in Redis after commit (stopping while Redis is away)',
        );
      }
    },
  };
}
