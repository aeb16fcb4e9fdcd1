import type { LimitReset } from '@tollgate/money';

/** Default percentages of a limit that alert (issue 29). */
export const DEFAULT_THRESHOLDS: readonly number[] = [50, 80, 100];

/** Prefix of a low-credit threshold (`low_credit:<USD>`): one alert per amount per credit period. */
export const LOW_CREDIT = 'low_credit:';

/**
 * The percentages of `thresholds` that committed spend has reached: `spent × 100 ≥ pct × limit`, in
 * integer units (never a float), and only when this commit added to the spend (`delta > 0`): a
 * redelivered event adds nothing, so it decides nothing. Every reached percentage is returned, not
 * only those crossed by this commit: a threshold passed while no endpoint asked for it, or while the
 * limit was higher, is reported at the next commit; the outbox's unique constraint keeps each one to
 * a single alert per period.
 */
export function reachedThresholds(
  thresholds: Iterable<number>,
  figures: { spentUnits: bigint; deltaUnits: bigint; limitUnits: bigint },
): number[] {
  const { spentUnits, deltaUnits, limitUnits } = figures;
  if (deltaUnits <= 0n || limitUnits <= 0n) return [];
  const out: number[] = [];
  for (const pct of new Set(thresholds)) {
    if (spentUnits * 100n >= BigInt(pct) * limitUnits) out.push(pct);
  }
  return out.sort((a, b) => a - b);
}

/** Whether credits left (`credits − usage`) are below `lowUnits` after a commit that added spend. */
export function creditBelow(figures: {
  creditsUnits: bigint;
  usageUnits: bigint;
  deltaUnits: bigint;
  lowUnits: bigint;
}): boolean {
  if (figures.deltaUnits <= 0n) return false;
  return figures.creditsUnits - figures.usageUnits < figures.lowUnits;
}

/** The limit reset a spend period field belongs to (`d…` daily, `w…` weekly, `m…` monthly, `all`). */
export function resetOfPeriod(period: string): LimitReset | null | undefined {
  if (period === 'all') return null;
  switch (period[0]) {
    case 'd':
      return 'daily';
    case 'w':
      return 'weekly';
    case 'm':
      return 'monthly';
    default:
      return undefined;
  }
}

/** Percentage of `limit` that `spent` is, to two decimals, as a string (for the payload only). */
export function percentOf(spentUnits: bigint, limitUnits: bigint): string {
  if (limitUnits <= 0n) return '0';
  const hundredths = (spentUnits * 10_000n) / limitUnits;
  const whole = hundredths / 100n;
  const frac = (hundredths % 100n).toString().padStart(2, '0');
  return `${whole}.${frac}`;
}
