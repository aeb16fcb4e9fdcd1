import { z } from 'zod';
import { checkRange, isoDate, limitParam, MAX_SPAN_MS } from './billing-params';
import { accountPath, decimalString, unknownParameter } from './common';
import { uuid } from './ids';

// ---------------------------------------------------------------------------------------------------
// The dashboard's reads (caller: dashboard; the account is in the path).

const granularity = z.enum(['hour', 'day', 'total'], { error: 'expected hour, day or total' });
/** `team` (issue 29): per the key's current team (`group` the team id, null: keys without a team). */
const groupBy = z.enum(['model', 'app', 'key', 'team', 'provider', 'none'], {
  error: 'expected model, app, key, team, provider or none',
});

/** One analytics row: counts as numbers, cost as an exact decimal string (USD). */
export const usageRowSchema = z.object({
  /** Start of the hour/day bucket; null for granularity `total`. */
  bucket: z.string().nullable(),
  /** The group's value (model, app, key id, team id, provider); null for `none`, requests without an app, keys without a team. */
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
    .superRefine((q, ctx) =>
      checkRange(q, ctx, MAX_SPAN_MS[q.granularity], `range too long for granularity ${q.granularity}`),
    ),
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

/** Average and percentiles of one latency measure (ms), read from the roll-ups' histograms (±20 %). */
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
    .superRefine((q, ctx) => checkRange(q, ctx, MAX_SPAN_MS.hour, 'range too long (at most 31 days)')),
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
          /**
           * The time the gateway itself added (ms, to the µs: 0.412), over the requests whose record
           * carries it (`overhead_requests`; records of proxies before it existed have none).
           */
          gateway_overhead_ms: latencyFigures,
          overhead_requests: z.number().int(),
          /**
           * Completion tokens per second of generation: after the first token when streamed, over the
           * whole time when not (null: none).
           */
          tokens_per_second: z.number().nullable(),
        }),
      ),
    }),
  }),
} as const;
export type AccountLatencyQuery = z.input<typeof accountLatency.query>;
