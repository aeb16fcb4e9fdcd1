import { LIMIT_RESETS, MoneyError, toDecimal, toUnits } from '@tollgate/money';
import { z } from 'zod';
import { uuid } from './ids';

/** Pieces shared by the contracts of several services. */

/** A decimal USD string, e.g. "0", "12.5", "-3.0000000001". */
export const decimalString = z.string().regex(/^-?\d+(\.\d+)?$/, 'expected a decimal string');

/** A name people give (a key's, a team's): trimmed, 1 to 200 characters, no NUL. */
export const displayName = z
  .string({ error: 'expected a string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(200, { error: 'must be at most 200 characters' })
  .refine((s) => !s.includes('\u0000'), { error: 'must not contain NUL characters' });

/**
 * A USD amount as a JSON number (a key's or team's limit, a low-credit alert): finite, >= 0, at most
 * `max`, at most 10 decimal places; becomes a decimal string.
 */
export const usdAmountInput = (max: number) =>
  z
    .number({ error: 'expected a number (USD) or null' })
    .min(0, { error: 'must not be negative' })
    .max(max, { error: `must be at most ${max}` })
    .transform((n, ctx) => {
      try {
        return toDecimal(toUnits(n));
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          message: err instanceof MoneyError ? 'at most 10 decimal places' : 'invalid',
        });
        return z.NEVER;
      }
    });

/** A key's spend period (the one list: @tollgate/money, which computes the periods). */
export const limitReset = z.enum(LIMIT_RESETS);

/** `:accountId` of an internal account route. */
export const accountParams = z.object({ accountId: uuid('an account id') });

export const accountPath = (accountId: string) => `/internal/accounts/${encodeURIComponent(accountId)}`;

/**
 * A strict query schema's refusal of an unknown parameter, named like a field ("foo: unknown
 * parameter"): a query parameter can never smuggle something the route does not read.
 */
export const unknownParameter = {
  error: (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys' ? `${issue.keys?.[0] ?? ''}: unknown parameter` : undefined,
};

/**
 * `?a=1&b=2` of a query object's defined values (empty string when none); numbers and booleans are
 * stringified. Typed by the contract's `z.input` of its query schema at the call site.
 */
export function queryString(query: object = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}
