import { REQUEST_ID_PATTERN } from '@tollgate/auth';
import { z } from 'zod';
import { accountPath, decimalString, limitReset, unknownParameter, uuid } from './common';

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
// The dashboard's reads (caller: dashboard; the account is in the path).

/** Page size of a list: 1..max, default `fallback` (a query string value). */
const limitParam = (fallback: number, max: number) =>
  z.coerce
    .number({ error: 'expected an integer' })
    .int('expected an integer')
    .min(1, 'must be at least 1')
    .max(max, `must be at most ${max}`)
    .default(fallback);

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const granularity = z.enum(['hour', 'day', 'total'], { error: 'expected hour, day or total' });
const groupBy = z.enum(['model', 'app', 'key', 'provider', 'none'], {
  error: 'expected model, app, key, provider or none',
});
/** Most buckets one query may ask for (hourly: 31 days; daily: ~3 years). */
const MAX_SPAN_MS: Record<z.output<typeof granularity>, number> = {
  hour: 31 * DAY_MS,
  day: 1100 * DAY_MS,
  total: 1100 * DAY_MS,
};

const isoDate = (field: string) =>
  z
    .string({ error: 'is required (ISO 8601 date-time)' })
    .datetime({ offset: true, error: `expected an ISO 8601 date-time for ${field}` })
    .transform((s) => new Date(s));

/** One analytics row: counts as numbers, cost as an exact decimal string (USD). */
export const usageRowSchema = z.object({
  /** Start of the hour/day bucket; null for granularity `total`. */
  bucket: z.string().nullable(),
  /** The group's value (model, app, key id, provider); null for `none` and for requests without an app. */
  group: z.string().nullable(),
  requests: z.number().int(),
  tokens_prompt: z.number().int(),
  tokens_completion: z.number().int(),
  tokens_cached: z.number().int(),
  tokens_cache_write: z.number().int(),
  tokens_reasoning: z.number().int(),
  cost: decimalString,
});
export type UsageRowView = z.output<typeof usageRowSchema>;

/** `GET /internal/accounts/:accountId/usage`: analytics over the hourly roll-ups. */
export const accountUsage = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/usage`,
  query: z
    .strictObject(
      {
        from: isoDate('from'),
        to: isoDate('to'),
        granularity: granularity.default('day'),
        group_by: groupBy.default('none'),
        key_id: uuid('a key id').optional(),
        model: z.string().min(1).max(300).optional(),
        app: z.string().max(300).optional(),
        provider: z.string().min(1).max(300).optional(),
        /** Groups per answer (the top ones by cost over the range), and where to start. */
        limit: limitParam(100, 1000),
        offset: z.coerce
          .number({ error: 'expected an integer' })
          .int('expected an integer')
          .min(0, 'must be at least 0')
          .max(100_000, 'must be at most 100000')
          .default(0),
      },
      unknownParameter,
    )
    .superRefine((q, ctx) => {
      // zod runs this even when a field failed: only compare real dates.
      if (!(q.from instanceof Date) || !(q.to instanceof Date)) return;
      if (q.to.getTime() <= q.from.getTime())
        ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
      else if (q.to.getTime() - q.from.getTime() > MAX_SPAN_MS[q.granularity]) {
        ctx.addIssue({
          code: 'custom',
          path: ['to'],
          message: `range too long for granularity ${q.granularity}`,
        });
      }
    }),
  /** `from`/`to`: the range widened to whole buckets. */
  response: z.object({
    data: z.object({
      from: z.string(),
      to: z.string(),
      granularity,
      group_by: groupBy,
      rows: z.array(usageRowSchema),
      /** Offset of the next groups (ranked by cost over the range); null when these were the last. */
      next_offset: z.number().int().nullable().optional(),
    }),
  }),
} as const;
export type AccountUsageQuery = z.input<typeof accountUsage.query>;

/** Percentiles of one latency measure (ms), read from the roll-ups' histograms (±20 %). */
const latencyFigures = z.object({
  avg: z.number().nullable(),
  p50: z.number().nullable(),
  p90: z.number().nullable(),
  p99: z.number().nullable(),
});

/**
 * `GET /internal/accounts/:accountId/latency`: time to first token and total latency per model or
 * provider over a range (whole hours; at most 31 days), with errors and output tokens per second;
 * the `limit` groups with the most requests.
 */
export const accountLatency = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/latency`,
  query: z
    .strictObject(
      {
        from: isoDate('from'),
        to: isoDate('to'),
        group_by: z
          .enum(['model', 'provider', 'none'], { error: 'expected model, provider or none' })
          .default('model'),
        key_id: uuid('a key id').optional(),
        model: z.string().min(1).max(300).optional(),
        provider: z.string().min(1).max(300).optional(),
        limit: limitParam(20, 200),
      },
      unknownParameter,
    )
    .superRefine((q, ctx) => {
      if (!(q.from instanceof Date) || !(q.to instanceof Date)) return;
      if (q.to.getTime() <= q.from.getTime())
        ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
      else if (q.to.getTime() - q.from.getTime() > MAX_SPAN_MS.hour)
        ctx.addIssue({ code: 'custom', path: ['to'], message: 'range too long (at most 31 days)' });
    }),
  response: z.object({
    data: z.object({
      from: z.string(),
      to: z.string(),
      group_by: z.enum(['model', 'provider', 'none']),
      rows: z.array(
        z.object({
          group: z.string().nullable(),
          requests: z.number().int(),
          errors: z.number().int(),
          /** Requests whose record carries an upstream error, per request. */
          error_rate: z.number(),
          ttft_ms: latencyFigures,
          total_ms: latencyFigures,
          /** Completion tokens per second of generation after the first token (null: none). */
          tokens_per_second: z.number().nullable(),
        }),
      ),
    }),
  }),
} as const;
export type AccountLatencyQuery = z.input<typeof accountLatency.query>;

/** A generation id: the request id the proxy minted. */
const generationId = z.string().regex(REQUEST_ID_PATTERN, 'expected a request id (gen-…)');

const attemptSchema = z.object({
  provider_name: z.string(),
  model_permaslug: z.string(),
  status: z.number().nullable(),
  latency: z.number(),
});

/** `GET /generation`'s record (OpenRouter's fields included; docs/api.md lists the neutral ones). */
export const generationSchema = z.object({
  id: z.string(),
  model: z.string(),
  provider_name: z.string(),
  upstream_id: z.string().nullable(),
  created_at: z.string(),
  streamed: z.boolean(),
  cancelled: z.boolean(),
  finish_reason: z.string().nullable(),
  tokens_prompt: z.number(),
  tokens_completion: z.number(),
  tokens_cached: z.number(),
  tokens_cache_write: z.number(),
  tokens_reasoning: z.number(),
  total_cost: z.number(),
  is_byok: z.boolean(),
  usage_source: z.enum(['provider', 'estimated']),
  app: z.string().nullable(),
  latency_ms: z.number(),
  generation_time_ms: z.number(),
  attempts: z.array(
    z.object({
      provider: z.string(),
      model: z.string(),
      status: z.number().nullable(),
      outcome: z.string(),
      latency_ms: z.number(),
    }),
  ),
  http_referer: z.string().nullable(),
  /** The client's session (Claude Code's X-Claude-Code-Session-Id), or null. */
  session_id: z.string().nullable(),
  /** Hosted tools the request offered that were withheld from the provider (`POST /responses`). */
  withheld_tools: z.array(z.string()),
  /** `completions` (chat), or the other door's name (`messages`, …). */
  api_type: z.string(),
  app_id: z.null(),
  cache_discount: z.null(),
  data_region: z.literal('global'),
  /** The caller's end-user id (Anthropic `metadata.user_id`), or null. */
  external_user: z.string().nullable(),
  generation_time: z.number(),
  latency: z.number(),
  moderation_latency: z.null(),
  native_finish_reason: z.string().nullable(),
  native_tokens_prompt: z.number(),
  native_tokens_completion: z.number(),
  native_tokens_cached: z.number(),
  native_tokens_reasoning: z.number(),
  native_tokens_completion_images: z.null(),
  num_fetches: z.null(),
  num_input_audio_prompt: z.null(),
  num_media_completion: z.null(),
  num_media_prompt: z.null(),
  num_search_results: z.null(),
  origin: z.string(),
  preset_id: z.null(),
  provider_responses: z.array(attemptSchema).nullable(),
  router: z.null(),
  service_tier: z.null(),
  upstream_inference_cost: z.null(),
  usage: z.number(),
  user_agent: z.null(),
  web_search_engine: z.null(),
  workspace_id: z.null(),
});

/** The dashboard's record: the public one plus key, upstream model, finish time, error and exact cost. */
export const accountGenerationSchema = generationSchema.extend({
  key_id: z.string(),
  upstream_model: z.string(),
  finished_at: z.string(),
  error: z.object({ code: z.number(), message: z.string() }).nullable(),
  cost: decimalString,
});

/** Sort orders of the request log (`created_at` is the default, newest first). */
const generationSort = z.enum(['created_at', 'cost', 'tokens', 'latency'], {
  error: 'expected created_at, cost, tokens or latency',
});
/** Deepest offset of a sorted request log (a deeper page is a narrower date range away). */
export const GENERATIONS_MAX_OFFSET = 10_000;
const prefix = z.string().min(1).max(300);

/**
 * `GET /internal/accounts/:accountId/generations`: the request log. Newest first with keyset pages
 * (`before`) by default; any other `sort`/`order` pages by `offset` (`next_offset`). Filters: exact
 * `model`/`app`/`key_id`/`provider`/`usage_source`/`session_id`, prefixes `model_prefix`/`app_prefix`/`id_prefix`,
 * and the range [`from`, `to`) of `created_at`.
 */
export const listAccountGenerations = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/generations`,
  query: z
    .strictObject(
      {
        limit: limitParam(50, 200),
        before: generationId.optional(),
        offset: z.coerce
          .number({ error: 'expected an integer' })
          .int('expected an integer')
          .min(0, 'must be at least 0')
          .max(GENERATIONS_MAX_OFFSET, `must be at most ${GENERATIONS_MAX_OFFSET}`)
          .optional(),
        sort: generationSort.optional(),
        order: z.enum(['asc', 'desc'], { error: 'expected asc or desc' }).optional(),
        from: isoDate('from').optional(),
        to: isoDate('to').optional(),
        model: z.string().min(1).max(300).optional(),
        model_prefix: prefix.optional(),
        app: z.string().max(300).optional(),
        app_prefix: prefix.optional(),
        id_prefix: z.string().min(3, 'must be at least 3 characters').max(100).optional(),
        key_id: uuid('a key id').optional(),
        provider: z.string().min(1).max(300).optional(),
        usage_source: z
          .enum(['provider', 'estimated'], { error: 'expected provider or estimated' })
          .optional(),
        /** One client session's records (Claude Code's or Codex's session id). */
        session_id: z.string().min(1).max(128).optional(),
      },
      unknownParameter,
    )
    .superRefine((q, ctx) => {
      const keyset = (q.sort ?? 'created_at') === 'created_at' && (q.order ?? 'desc') === 'desc';
      if (q.before !== undefined && (!keyset || q.offset !== undefined))
        ctx.addIssue({
          code: 'custom',
          path: ['before'],
          message: 'only with the default order (use offset)',
        });
      if (q.from instanceof Date && q.to instanceof Date && q.to.getTime() <= q.from.getTime())
        ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
    }),
  response: z.object({
    data: z.array(accountGenerationSchema),
    /** Keyset cursor of the next page (default order). */
    next_before: z.string().nullable(),
    /** Offset of the next page (other orders, or when `offset` was given); absent otherwise. */
    next_offset: z.number().int().nullable().optional(),
  }),
} as const;
export type ListAccountGenerationsQuery = z.input<typeof listAccountGenerations.query>;

/**
 * `GET /internal/accounts/:accountId/sessions`: the client sessions (Claude Code's, Codex's) of the
 * request log with their totals, most recently active first; `offset` pages.
 */
export const listAccountSessions = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/sessions`,
  query: z.strictObject(
    {
      from: isoDate('from').optional(),
      to: isoDate('to').optional(),
      limit: limitParam(20, 200),
      offset: z.coerce
        .number({ error: 'expected an integer' })
        .int('expected an integer')
        .min(0, 'must be at least 0')
        .max(GENERATIONS_MAX_OFFSET, `must be at most ${GENERATIONS_MAX_OFFSET}`)
        .default(0),
    },
    unknownParameter,
  ),
  response: z.object({
    data: z.array(
      z.object({
        session_id: z.string(),
        requests: z.number().int(),
        cost: decimalString,
        tokens_prompt: z.number().int(),
        tokens_completion: z.number().int(),
        first_at: z.string(),
        last_at: z.string(),
        /** Up to five of the session's models. */
        models: z.array(z.string()),
      }),
    ),
    next_offset: z.number().int().nullable(),
  }),
} as const;
export type ListAccountSessionsQuery = z.input<typeof listAccountSessions.query>;

/** `GET /internal/accounts/:accountId/generations/:id`: 404 unless the account's. */
export const getAccountGeneration = {
  method: 'GET',
  path: (accountId: string, id: string) => `${accountPath(accountId)}/generations/${encodeURIComponent(id)}`,
  params: z.object({ id: generationId }),
  response: z.object({ data: accountGenerationSchema }),
} as const;

/** `GET /internal/accounts/:accountId/credits`: balance (exact decimals) and the ledger, newest first. */
export const accountCredits = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/credits`,
  query: z.strictObject(
    {
      limit: limitParam(50, 200),
      before: uuid('a ledger entry id').optional(),
    },
    unknownParameter,
  ),
  response: z.object({
    data: z.object({
      total_credits: decimalString,
      total_usage: decimalString,
      remaining: decimalString,
      ledger: z.array(
        z.object({
          id: z.string(),
          amount: decimalString,
          note: z.string().nullable(),
          created_at: z.string(),
        }),
      ),
      next_before: z.string().nullable(),
    }),
  }),
} as const;
export type AccountCreditsQuery = z.input<typeof accountCredits.query>;

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
