import { z } from 'zod';
import { auditTimelinePage } from './audit';
import { accountLatency, accountUsage } from './billing-analytics';
import {
  accountCredits,
  getAccountGeneration,
  listAccountGenerations,
  listAccountSessions,
} from './billing-generations';
import { decimalString } from './common';
import { createUser } from './dashboard';
import { createAccountKey, getAccount, keyObjectSchema } from './keys';
import { accountErrors, getAccountRefusal, listAccountRefusals } from './refusals';
import { teamObjectSchema } from './teams';
import { accountWebhooks } from './webhooks';

/**
 * The dashboard's browser API (`/api/*`, session cookie): the answer of every route the SPA reads.
 * A relayed answer is its owner's contract (keys, billing); the dashboard's own answers are defined
 * here, and its routes build them as `z.input` of these schemas. The SPA (services/dashboard/ui)
 * imports the types only (`import type … from '@tollgate/contracts'`: no zod in the browser bundle).
 */

/** A dashboard user's role (`member`: a team viewer, who sees their teams' keys only). */
const dashboardRole = z.enum(['owner', 'viewer', 'member']);

/** `GET /api/me`: the signed-in user, their account, the session's CSRF token. */
const meSchema = z.object({
  user: z.object({ id: z.string(), email: z.string(), display_name: z.string(), role: dashboardRole }),
  account: getAccount.response.shape.data,
  csrf_token: z.string(),
  session_expires_at: z.string(),
});

/** `GET /api/sso`: which ways to sign in the sign-in page offers. */
const ssoStatusSchema = z.object({ enabled: z.boolean(), password_sign_in: z.boolean() });

const spendFigures = z.object({ cost: decimalString, requests: z.number().int() });
const topEntry = spendFigures.extend({ name: z.string().nullable() });

/** `GET /api/overview`: spend today/this week/this month, the balance, top models and apps, 30 days. */
const overviewSchema = z.object({
  today: spendFigures,
  week: spendFigures,
  month: spendFigures,
  credits: accountCredits.response.shape.data.pick({
    total_credits: true,
    total_usage: true,
    remaining: true,
  }),
  top_models: z.array(topEntry),
  top_apps: z.array(topEntry),
  daily: z.array(spendFigures.extend({ date: z.string() })),
});

/** `GET /api/models`: one catalog model with its prices (USD decimals, per million tokens). */
const catalogModelSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  context_length: z.number().int(),
  providers: z.array(z.string()),
  price_per_million: z.object({
    prompt: decimalString,
    completion: decimalString,
    cache_read: decimalString,
    cache_write: decimalString,
  }),
  price_per_request: decimalString,
});

/** `GET /api/users`: a user of the account (an `invited` one has not set a password nor signed in). */
const dashboardUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  display_name: z.string(),
  role: dashboardRole,
  invited: z.boolean(),
  sso: z.boolean(),
  team_ids: z.array(z.string()),
  created_at: z.string(),
});

/** `GET /api/teams`: a team, its budget and spend in the current period, its members (user ids). */
const dashboardTeamSchema = teamObjectSchema
  .pick({ id: true, name: true, key_count: true, limit: true, limit_reset: true, rate_limit_tpm: true })
  .extend({
    /** Committed spend in the team's limit period (billing.team_spend), USD. */
    usage: z.number(),
    /** What is left of the limit (never below 0); null without a limit. */
    limit_remaining: z.number().nullable(),
    member_ids: z.array(z.string()),
  });

/** `POST /api/users/:id/sign-in-link`: a re-sent invitation or a password reset, once. */
const signInLinkSchema = z.object({
  kind: z.enum(['invitation', 'password_reset']),
  sign_in_link: z.string(),
  expires_at: z.string(),
});

const answer = <T extends z.ZodType>(data: T) => z.object({ data });

/** Every route of the SPA's with the schema of its answer (`data`, and a page's cursor). */
export const dashboardApi = {
  me: answer(meSchema),
  /** `PATCH /api/account`: the account's settings (owners). */
  account: getAccount.response,
  sso: answer(ssoStatusSchema),
  overview: answer(overviewSchema),
  keys: answer(z.array(keyObjectSchema)),
  createKey: createAccountKey.response,
  usage: accountUsage.response,
  latency: accountLatency.response,
  errors: accountErrors.response,
  refusals: listAccountRefusals.response,
  refusal: getAccountRefusal.response,
  generations: listAccountGenerations.response,
  generation: getAccountGeneration.response,
  sessions: listAccountSessions.response,
  credits: accountCredits.response,
  models: answer(z.array(catalogModelSchema)),
  users: answer(z.array(dashboardUserSchema)),
  teams: answer(z.array(dashboardTeamSchema)),
  invite: createUser.response,
  signInLink: answer(signInLinkSchema),
  webhooks: accountWebhooks.list.response,
  createWebhook: accountWebhooks.create.response,
  deliveries: accountWebhooks.attempts.response,
  /** `GET /api/audit`: entries of the timeline, each with the log it came from. */
  audit: auditTimelinePage,
} as const;

/** The answer of a route of the SPA's, as the browser reads it. */
export type DashboardAnswer<R extends keyof typeof dashboardApi> = z.output<(typeof dashboardApi)[R]>;
/** Its `data`. */
export type DashboardData<R extends keyof typeof dashboardApi> = DashboardAnswer<R>['data'];
/** The answer as a route of the dashboard's builds it (before the schema's defaults). */
export type DashboardAnswerInput<R extends keyof typeof dashboardApi> = z.input<(typeof dashboardApi)[R]>;
