import { LIMIT_RESETS } from '@tollgate/money';
import { z } from 'zod';

/** Pieces shared by the contracts of several services. */

/** A decimal USD string, e.g. "0", "12.5", "-3.0000000001". */
export const decimalString = z.string().regex(/^-?\d+(\.\d+)?$/, 'expected a decimal string');

export const uuid = (what: string) => z.string().uuid(`expected ${what} (uuid)`);

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
