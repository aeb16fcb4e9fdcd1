import { z } from 'zod';
import { limitParam } from './billing-params';
import { accountPath, decimalString, limitReset, unknownParameter } from './common';
import { uuid } from './ids';

/**
 * Billing's internal API and the caller routes the proxy relays. Billing's routes parse requests and
 * build answers with these schemas; callers (keys, the proxy's spend guard, the CLI) parse the answers.
 */

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

/**
 * `POST /internal/usage/teams` (caller: dashboard): the committed spend of teams (issue 29), from
 * `billing.team_spend` (what the team's limit is decided on); `usage` in the team's limit period.
 */
export const teamsUsage = {
  method: 'POST',
  path: '/internal/usage/teams',
  request: z.object({
    teams: z
      .array(z.object({ id: uuid('a team id'), limit_reset: limitReset.nullable().optional() }))
      .max(1000, 'at most 1000 teams per call'),
  }),
  /** One entry per requested id. */
  response: z.object({ data: z.record(z.string(), keyUsageSchema) }),
} as const;

/** `POST /internal/spend/rebuild` (caller: proxy spend guard): load a missing Redis counter from Postgres. */
export const spendRebuild = {
  method: 'POST',
  path: '/internal/spend/rebuild',
  request: z.object({
    account_id: uuid('an account id'),
    key_id: uuid('a key id').nullable().optional(),
    /** The key's team whose hash is missing or unbuilt (issue 29); its account is `account_id`. */
    team_id: uuid('a team id').nullable().optional(),
    /** The guard's clock: which periods are current. Defaults to billing's clock. */
    at: z.string().datetime().optional(),
  }),
  response: z.object({ data: z.object({ rebuilt: z.literal(true) }) }),
} as const;
export type SpendRebuildRequest = z.input<typeof spendRebuild.request>;

/** `POST /internal/accounts/:accountId/credits` (caller: CLI): grant (or correct) credits. */
export const grantCredits = {
  method: 'POST',
  path: (accountId: string) => `${accountPath(accountId)}/credits`,
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
  path: (accountId: string) => `${accountPath(accountId)}/postpaid`,
  request: z.object({ postpaid: z.boolean({ error: 'expected a boolean' }) }),
  response: z.object({ data: z.object({ account_id: z.string(), postpaid: z.boolean() }) }),
} as const;
export type SetPostpaidRequest = z.input<typeof setPostpaid.request>;

// ---------------------------------------------------------------------------------------------------
// The usage dead-letter queue (caller: the admin CLI, `tollgate dlq show|replay`).

/** `GET /internal/dlq`: what is in the dead-letter queue and why (messages stay there). */
export const showDeadLetters = {
  method: 'GET',
  path: (limit?: number) => `/internal/dlq${limit === undefined ? '' : `?limit=${limit}`}`,
  query: z.strictObject({ limit: limitParam(20, 1000) }, unknownParameter),
  response: z.object({
    data: z.object({
      count: z.number().int(),
      messages: z.array(
        z.object({
          id: z.string().nullable(),
          reason: z.string(),
          death: z.string().nullable(),
          account_id: z.string().nullable(),
          key_id: z.string().nullable(),
          cost: z.string().nullable(),
          finished_at: z.string().nullable(),
          bytes: z.number().int(),
        }),
      ),
    }),
  }),
} as const;

/** `POST /internal/dlq/replay`: valid events back to billing (exactly once: billing records an id once). */
export const replayDeadLetters = {
  method: 'POST',
  path: '/internal/dlq/replay',
  request: z.strictObject({ limit: z.number().int().min(1).max(100_000).default(1000) }),
  response: z.object({
    data: z.object({ replayed: z.number().int(), invalid: z.number().int(), remaining: z.number().int() }),
  }),
} as const;
export type ReplayDeadLettersRequest = z.input<typeof replayDeadLetters.request>;
