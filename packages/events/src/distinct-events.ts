/**
 * The one de-duplication of usage events by id (the events consumer hands a batch on with it, billing
 * records with it): a publisher retry after a lost confirm can put the same event in twice, so only
 * the first occurrence of each id is kept. Across batches (a redelivery) the consumer's owner decides
 * what is new (billing: the generation insert's `on conflict … do nothing`).
 *
 * `order`: `delivery` keeps the order given; `id` sorts by id in code-unit order (Postgres `C`
 * collation), the lock order of billing's batches — two batches written at once that share an id
 * wait on each other's index entries in the same order, never in a cycle.
 */
export function distinctEvents<E extends { readonly id: string }>(
  events: readonly E[],
  order: 'delivery' | 'id' = 'delivery',
): E[] {
  const seen = new Set<string>();
  const distinct = events.filter((e) => !seen.has(e.id) && seen.add(e.id));
  return order === 'id' ? distinct.sort((a, b) => compareIds(a.id, b.id)) : distinct;
}

/** Code-unit order (Postgres `C` collation of ids, never the locale's): the lock order of every batch. */
export const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
