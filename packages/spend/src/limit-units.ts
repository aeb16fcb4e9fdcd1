import { toUnits } from '@tollgate/money';

/** Distinct limits remembered before the cache starts over. */
const MAX_LIMITS = 10_000;

/**
 * A key's decimal USD limit in units, parsed once per distinct value (per-request work kept small on
 * the hot path). The cache is bounded: it starts over once it holds `MAX_LIMITS` values.
 */
export function limitUnitsParser(max = MAX_LIMITS): (limit: string) => bigint {
  const cache = new Map<string, bigint>();
  return (limit) => {
    let units = cache.get(limit);
    if (units === undefined) {
      units = toUnits(limit);
      if (cache.size >= max) cache.clear();
      cache.set(limit, units);
    }
    return units;
  };
}
