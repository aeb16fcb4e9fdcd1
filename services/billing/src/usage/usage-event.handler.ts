import type {
  HandleResult,
  RefusalEventV1,
  UsageEvent,
  UsageEventOf,
  UsageEventSchemas,
} from '@tollgate/events';
import type { Logger } from '@tollgate/logger';
import type { UsageRecorder } from './usage.recorder';

/** One typed handler per entry of the usage-event catalog (type → version → handler of a batch). */
type UsageEventHandlers = {
  [T in keyof UsageEventSchemas]: {
    [V in keyof UsageEventSchemas[T]]: (events: UsageEventOf<T, V>[]) => Promise<HandleResult>;
  };
};

/**
 * Billing's handler of a batch of decoded usage-catalog events: groups them by type and version
 * (in the order of their first appearance) and hands each group to its typed handler. A handler
 * throws on failure; the consumer classifies it (`classifyBillingFailure`) and retries or dead-letters.
 */
export function createUsageEventHandler(deps: {
  recorder: UsageRecorder;
  logger: Logger;
  /** Called with each batch after its commit (billing lag metrics). */
  onCommitted?: (events: readonly UsageEvent[]) => void;
  /**
   * Events not to record and why (billing's `key` check: the key is not the account's); the consumer
   * dead-letters them with the reason. Throws when it cannot tell (keys service away: transient).
   */
  refuse?: (events: readonly UsageEvent[]) => Promise<ReadonlyMap<string, string>>;
  /** Records refusal events exactly once (refusals/refusals.repository.ts); returns how many were new. */
  recordRefusals: (events: RefusalEventV1[]) => Promise<number>;
}) {
  const nothing: ReadonlyMap<string, string> = new Map();
  const handlers: UsageEventHandlers = {
    usage: {
      /** Version 1: generation records and spend, exactly once (see `createUsageRecorder`). */
      1: async (batch) => {
        const rejected = (await deps.refuse?.(batch)) ?? nothing;
        const events = rejected.size === 0 ? batch : batch.filter((e) => !rejected.has(e.id));
        if (events.length === 0) return { rejected };
        const r = await deps.recorder.record(events);
        if (r.duplicates > 0)
          deps.logger.info(r, 'usage batch contained already recorded events (redelivery)');
        deps.onCommitted?.(events);
        return { rejected };
      },
    },
    refusal: {
      /** Version 1: a refused request of a known key (no cost): the roll-ups and the last refusals. */
      1: async (batch) => {
        const rejected = (await deps.refuse?.(batch)) ?? nothing;
        const events = rejected.size === 0 ? batch : batch.filter((e) => !rejected.has(e.id));
        if (events.length > 0) await deps.recordRefusals(events);
        return { rejected };
      },
    },
  };

  return async function handle(batch: UsageEvent[]): Promise<HandleResult> {
    const rejected = new Map<string, string>();
    const groups = new Map<string, UsageEvent[]>();
    for (const e of batch) {
      const k = `${e.type}\u0000${e.version}`;
      const group = groups.get(k);
      if (group) group.push(e);
      else groups.set(k, [e]);
    }
    for (const events of groups.values()) {
      const { type, version } = events[0] as UsageEvent;
      const byVersion = handlers[type] as Record<
        number,
        ((events: UsageEvent[]) => Promise<HandleResult>) | undefined
      >;
      const run = byVersion?.[version];
      // The consumer decodes only catalog entries, and the catalog and this table have the same keys.
      if (!run) throw new Error(`no handler for usage event ${type} v${version}`);
      for (const [id, reason] of (await run(events)).rejected) rejected.set(id, reason);
    }
    return { rejected };
  };
}
