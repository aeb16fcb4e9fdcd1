import type { UsageEventV1 } from '@tollgate/events';

/**
 * The one place billing de-duplicates usage events by id within a batch (a publisher retry after a
 * lost confirm can put the same event in twice): the first occurrence of each id, in id order. Across
 * batches (a redelivery) the generation insert’s `on conflict (id, created_at) do nothing returning id` decides
 * what is new. Id order: two batches written at once (CONCURRENT_BATCHES) that share an id wait on
 * each other's index entries in the same order, never in a cycle.
 */
export function distinctEvents(batch: readonly UsageEventV1[]): UsageEventV1[] {
  const seen = new Set<string>();
  const events = batch.filter((e) => !seen.has(e.id) && seen.add(e.id));
  return events.sort((a, b) => compareIds(a.id, b.id));
}

/** Code-unit order (Postgres `C` collation of ids), the lock order of every batch. */
export const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
