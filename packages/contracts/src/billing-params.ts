import { z } from 'zod';

/** Query parameters shared by billing's contracts (not part of the package's surface). */

/** Page size of a list: 1..max, default `fallback` (a query string value). */
export const limitParam = (fallback: number, max: number) =>
  z.coerce
    .number({ error: 'expected an integer' })
    .int('expected an integer')
    .min(1, 'must be at least 1')
    .max(max, `must be at most ${max}`)
    .default(fallback);

/** An ISO 8601 date-time with offset, as a Date. */
export const isoDate = (field: string) =>
  z
    .string({ error: 'is required (ISO 8601 date-time)' })
    .datetime({ offset: true, error: `expected an ISO 8601 date-time for ${field}` })
    .transform((s) => new Date(s));

const DAY_MS = 86_400_000;
/** Most a range query may span by bucket size (hourly: 31 days; daily and total: ~3 years). */
export const MAX_SPAN_MS = { hour: 31 * DAY_MS, day: 1100 * DAY_MS, total: 1100 * DAY_MS } as const;

/**
 * The check of a `from`/`to` range query (in its `superRefine`): `to` after `from`, spanning at most
 * `maxMs`, else an issue on `to` (`tooLong` says why).
 */
export function checkRange(
  q: { from: unknown; to: unknown },
  ctx: { addIssue(issue: { code: 'custom'; path: string[]; message: string }): void },
  maxMs: number,
  tooLong: string,
): void {
  // zod runs this even when a field failed: only compare real dates.
  if (!(q.from instanceof Date) || !(q.to instanceof Date)) return;
  if (q.to.getTime() <= q.from.getTime())
    ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
  else if (q.to.getTime() - q.from.getTime() > maxMs)
    ctx.addIssue({ code: 'custom', path: ['to'], message: tooLong });
}
