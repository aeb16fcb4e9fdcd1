import { REQUEST_ID_PATTERN } from '@tollgate/auth/request-id-pattern';
import { z } from 'zod';
import { isoDate, limitParam } from './billing-params';
import { accountPath, decimalString, unknownParameter } from './common';
import { uuid } from './ids';

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
  /** The time the gateway itself added (ms, to the µs), or null when the record has none. */
  gateway_overhead_ms: z.number().nullable(),
  /** Completion tokens per second of generation (after the first token when streamed), or null. */
  tokens_per_second: z.number().nullable(),
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
  response: z.object({
    data: accountGenerationSchema.extend({
      /**
       * Opt-in bodies (issue 28): the prompt and answer kept for a key with `store_bodies` (redacted
       * and bounded by the proxy), null when none were kept or they are past BODIES_RETENTION_DAYS.
       * Only here (the account's dashboard): the public `GET /generation` has no such field.
       */
      bodies: z.object({ prompt: z.string(), answer: z.string(), truncated: z.boolean() }).nullable(),
    }),
  }),
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
