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
