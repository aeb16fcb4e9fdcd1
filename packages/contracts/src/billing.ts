import { z } from 'zod';

/**
 * Billing's internal API and the caller routes the proxy relays. Billing's routes parse requests and
 * build answers with these schemas; callers (keys, the proxy's spend guard, the CLI) parse the answers.
 */

/** A decimal USD string, e.g. "0", "12.5", "-3.0000000001". */
export const decimalString = z.string().regex(/^-?\d+(\.\d+)?$/, 'expected a decimal string');
const uuid = (what: string) => z.string().uuid(`expected ${what} (uuid)`);
const limitReset = z.enum(['daily', 'weekly', 'monthly']);

/** Spend figures of one key, decimal USD strings. `usage` = spend in the key's current limit period. */
export const keyUsageSchema = z.object({
  usage: decimalString,
  usage_daily: decimalString,
  usage_weekly: decimalString,
  usage_monthly: decimalString,
});
export type KeyUsage = z.output<typeof keyUsageSchema>;

/** `POST /internal/usage/keys` (caller: keys): usage figures for key objects. */
export const keysUsage = {
  method: 'POST',
  path: '/internal/usage/keys',
  request: z.object({
    keys: z
      .array(z.object({ id: uuid('a key id'), limit_reset: limitReset.nullable().optional() }))
      .max(1000, 'at most 1000 keys per call'),
  }),
  /** One entry per requested id. */
  response: z.object({ data: z.record(z.string(), keyUsageSchema) }),
} as const;
export type KeysUsageRequest = z.input<typeof keysUsage.request>;

/** `POST /internal/spend/rebuild` (caller: proxy spend guard): load a missing Redis counter from Postgres. */
export const spendRebuild = {
  method: 'POST',
  path: '/internal/spend/rebuild',
  request: z.object({
    account_id: uuid('an account id'),
    key_id: uuid('a key id').nullable().optional(),
    /** The guard's clock: which periods are current. Defaults to billing's clock. */
    at: z.string().datetime().optional(),
  }),
  response: z.object({ data: z.object({ rebuilt: z.literal(true) }) }),
} as const;
export type SpendRebuildRequest = z.input<typeof spendRebuild.request>;

export const accountParams = z.object({ accountId: uuid('an account id') });

/** `POST /internal/accounts/:accountId/credits` (caller: CLI): grant (or correct) credits. */
export const grantCredits = {
  method: 'POST',
  path: (accountId: string) => `/internal/accounts/${encodeURIComponent(accountId)}/credits`,
  request: z.object({
    amount: z.union([z.string(), z.number()], { error: 'expected a decimal USD amount' }),
    note: z.string().max(500).nullable().optional(),
  }),
  response: z.object({ data: z.object({ account_id: z.string(), total_credits: decimalString }) }),
} as const;
export type GrantCreditsRequest = z.input<typeof grantCredits.request>;

/** `PUT /internal/accounts/:accountId/postpaid` (caller: CLI). */
export const setPostpaid = {
  method: 'PUT',
  path: (accountId: string) => `/internal/accounts/${encodeURIComponent(accountId)}/postpaid`,
  request: z.object({ postpaid: z.boolean({ error: 'expected a boolean' }) }),
  response: z.object({ data: z.object({ account_id: z.string(), postpaid: z.boolean() }) }),
} as const;
export type SetPostpaidRequest = z.input<typeof setPostpaid.request>;
