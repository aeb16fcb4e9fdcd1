import { backoffDelay, interruptibleSleep } from '../backoff';
import type { EventsLogger } from '../logger';
import type { UsageEvent } from '../usage-event';
import type { FailureKind, HandleResult } from './options';

const NOTHING_REJECTED: ReadonlyMap<string, string> = new Map();

export interface RetryingHandlerOptions {
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler without refusals returns nothing
  handle: (batch: UsageEvent[]) => Promise<void | HandleResult>;
  classify: (err: unknown) => FailureKind;
  retry: { initialMs: number; maxMs: number };
  log: EventsLogger;
  counters: { failedBatches: number; transientRetries: number };
}

/**
 * Calls `handle` until it succeeds, fails permanently (`maxPermanent` permanent failures), or the
 * caller gives up during a backoff (its batch was abandoned). Transient failures are retried here,
 * in-process, with capped exponential backoff that grows per consecutive failure.
 */
export class RetryingHandler {
  private consecutiveFailures = 0;
  private readonly wakeSleeps = new Set<() => void>();
  private stopping = false;

  constructor(private readonly options: RetryingHandlerOptions) {}

  /**
   * The refused events (id → reason) when `handle` succeeded, false when it failed permanently, null
   * when `abandoned()` turned true after a backoff.
   */
  async attempt(
    events: UsageEvent[],
    maxPermanent: number,
    abandoned: () => boolean,
  ): Promise<ReadonlyMap<string, string> | false | null> {
    const { handle, classify, log, counters } = this.options;
    let permanent = 0;
    for (;;) {
      try {
        const result = await handle(events);
        this.consecutiveFailures = 0;
        return result?.rejected ?? NOTHING_REJECTED;
      } catch (err) {
        counters.failedBatches++;
        this.consecutiveFailures++;
        const kind = classify(err);
        if (kind === 'permanent') permanent++;
        const giveUp = kind === 'permanent' && permanent >= maxPermanent;
        const lagMs = Date.now() - (Date.parse(events[0]?.finished_at ?? '') || Date.now());
        log.error(
          { err, kind, events: events.length, attempt: this.consecutiveFailures, lagMs },
          giveUp
            ? 'usage events failed permanently'
            : `usage ${events.length > 1 ? 'batch' : 'event'} failed (${kind}); retrying in-process after a backoff`,
        );
        if (giveUp) return false;
        if (kind === 'transient') counters.transientRetries++;
        await this.backoff(this.consecutiveFailures);
        if (abandoned()) return null;
      }
    }
  }

  /** Cuts every backoff short and makes later ones return at once (closing). */
  stop(): void {
    this.stopping = true;
    for (const wake of this.wakeSleeps) wake();
  }

  private async backoff(attempt: number): Promise<void> {
    if (this.stopping) return;
    const sleep = interruptibleSleep(backoffDelay(attempt, this.options.retry));
    this.wakeSleeps.add(sleep.wake);
    await sleep.promise;
    this.wakeSleeps.delete(sleep.wake);
  }
}
