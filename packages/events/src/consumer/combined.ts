import type { ConsumerStats, UsageConsumer } from './options';

/**
 * Several consumers (one per usage partition a billing worker takes) seen as one: counters summed,
 * the lag the largest, connected only when every one is, the backlog summed.
 */
export function combineConsumers(consumers: readonly UsageConsumer[]): UsageConsumer {
  return {
    stats(): ConsumerStats {
      const all = consumers.map((c) => c.stats());
      const sum = (read: (s: ConsumerStats) => number) => all.reduce((n, s) => n + read(s), 0);
      return {
        connected: all.length > 0 && all.every((s) => s.connected),
        handled: sum((s) => s.handled),
        deadLettered: sum((s) => s.deadLettered),
        failedBatches: sum((s) => s.failedBatches),
        transientRetries: sum((s) => s.transientRetries),
        lagMs: Math.max(0, ...all.map((s) => s.lagMs)),
      };
    },
    async backlog() {
      const all = await Promise.all(consumers.map((c) => c.backlog()));
      return all.every((n) => n === null) ? null : all.reduce<number>((n, b) => n + (b ?? 0), 0);
    },
    async ready(timeoutMs) {
      await Promise.all(consumers.map((c) => c.ready(timeoutMs)));
    },
    async close() {
      await Promise.all(consumers.map((c) => c.close()));
    },
  };
}
