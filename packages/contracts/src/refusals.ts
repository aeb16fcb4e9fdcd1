import { REQUEST_ID_PATTERN } from '@tollgate/auth/request-id-pattern';
import { z } from 'zod';
import { checkRange, isoDate, limitParam, MAX_SPAN_MS } from './billing-params';
import { accountPath, unknownParameter } from './common';
import { uuid } from './ids';

/**
 * Errors and refusals as data (billing's internal API, caller: dashboard). A refusal is a request of
 * a known key answered with an error and billed nothing (the proxy's `refusal` events); an upstream
 * error is an answered request whose record carries the provider's failure.
 */

export const refusalTypes = ['limit', 'rate_limit', 'auth', 'bad_request', 'provider', 'other'] as const;
const counts = z.object(
  Object.fromEntries(refusalTypes.map((t) => [t, z.number().int()])) as Record<
    (typeof refusalTypes)[number],
    z.ZodNumber
  >,
);

/** `GET /internal/accounts/:accountId/errors`: answered requests, upstream errors and refusals per bucket. */
export const accountErrors = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/errors`,
  query: z
    .strictObject(
      {
        from: isoDate('from'),
        to: isoDate('to'),
        granularity: z
          .enum(['hour', 'day', 'total'], { error: 'expected hour, day or total' })
          .default('day'),
        group_by: z.enum(['key', 'none'], { error: 'expected key or none' }).default('none'),
        key_id: uuid('a key id').optional(),
      },
      unknownParameter,
    )
    .superRefine((q, ctx) =>
      checkRange(q, ctx, MAX_SPAN_MS[q.granularity], `range too long for granularity ${q.granularity}`),
    ),
  response: z.object({
    data: z.object({
      from: z.string(),
      to: z.string(),
      granularity: z.enum(['hour', 'day', 'total']),
      group_by: z.enum(['key', 'none']),
      rows: z.array(
        z.object({
          /** Start of the bucket (null: total). */
          bucket: z.string().nullable(),
          /** The key id (group_by key), else null. */
          group: z.string().nullable(),
          /** Requests answered and recorded (billed), the refusals not included. */
          requests: z.number().int(),
          /** Recorded requests that ended with an upstream error (a provider failure). */
          errors: z.number().int(),
          /** Refusals by error type. */
          refused: counts,
          /** Every answered request by status class: 2xx served, 4xx/5xx refused or failed. */
          status: z.object({ '2xx': z.number().int(), '4xx': z.number().int(), '5xx': z.number().int() }),
          /** (errors + refusals) / (requests + refusals); 0 when there was none. */
          error_rate: z.number(),
        }),
      ),
    }),
  }),
} as const;
export type AccountErrorsQuery = z.input<typeof accountErrors.query>;

export const refusalSchema = z.object({
  id: z.string(),
  key_id: z.string(),
  api_type: z.string(),
  model: z.string().nullable(),
  app: z.string().nullable(),
  status: z.number().int(),
  error_type: z.enum(refusalTypes),
  code: z.string(),
  message: z.string(),
  created_at: z.string(),
});
export type RefusalView = z.output<typeof refusalSchema>;

/** `GET /internal/accounts/:accountId/refusals`: the last refusals (per key: at most 50 are kept). */
export const listAccountRefusals = {
  method: 'GET',
  path: (accountId: string) => `${accountPath(accountId)}/refusals`,
  query: z.strictObject({ key_id: uuid('a key id').optional(), limit: limitParam(20, 50) }, unknownParameter),
  response: z.object({ data: z.array(refusalSchema) }),
} as const;
export type ListAccountRefusalsQuery = z.input<typeof listAccountRefusals.query>;

/** `GET /internal/accounts/:accountId/refusals/:id`: one refusal by the request id it answered with. */
export const getAccountRefusal = {
  method: 'GET',
  path: (accountId: string, id: string) => `${accountPath(accountId)}/refusals/${encodeURIComponent(id)}`,
  params: z.object({ id: z.string().regex(REQUEST_ID_PATTERN, 'expected a request id (gen-…)') }),
  response: z.object({ data: refusalSchema }),
} as const;
