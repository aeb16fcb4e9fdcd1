import { badRequest, describeIssues } from '@tollgate/errors';
import { LIMIT_RESETS, MoneyError, toDecimal, toUnits } from '@tollgate/money';
import { z } from 'zod';

/** Highest accepted spend limit in USD (the column is numeric(20,10)). */
export const MAX_LIMIT_USD = 1_000_000_000;

const name = z
  .string({ error: 'expected a string' })
  .trim()
  .min(1, { error: 'must not be empty' })
  .max(200, { error: 'must be at most 200 characters' })
  .refine((s) => !s.includes('\u0000'), { error: 'must not contain NUL characters' });

/** A USD amount as a JSON number: finite, >= 0, at most 10 decimal places; becomes a decimal string. */
const limit = z
  .number({ error: 'expected a number (USD) or null' })
  .min(0, { error: 'must not be negative' })
  .max(MAX_LIMIT_USD, { error: `must be at most ${MAX_LIMIT_USD}` })
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

const limitReset = z.enum(LIMIT_RESETS, { error: 'expected one of daily, weekly, monthly, or null' });

/** ISO 8601 date-time with a zone (`Z` or an offset); must lie in the future. */
const expiresAt = z
  .string({ error: 'expected an ISO 8601 date-time (e.g. 2030-01-01T00:00:00Z) or null' })
  .refine((s) => z.iso.datetime({ offset: true }).safeParse(s).success, {
    error: 'expected an ISO 8601 date-time with a time zone (e.g. 2030-01-01T00:00:00Z) or null',
  })
  .transform((s) => new Date(s))
  .refine((d) => Number.isFinite(d.getTime()), { error: 'is not a valid date' })
  .refine((d) => d.getTime() > Date.now(), { error: 'must be in the future' });

/** Highest accepted allow-list length and per-key requests per minute. */
export const MAX_ALLOWED_MODELS = 200;
export const MAX_RATE_LIMIT_RPM = 1_000_000;

/** A model id (`vendor/name`) or a vendor pattern (`vendor/*`). */
export const MODEL_PATTERN =
  /^[A-Za-z0-9][A-Za-z0-9._-]*\/(\*|[A-Za-z0-9][A-Za-z0-9._:-]*(\/[A-Za-z0-9._:-]+)*)$/;

const allowedModels = z
  .array(
    z
      .string({ error: 'expected model ids (vendor/name) or vendor/* patterns' })
      .max(200, { error: 'each entry must be at most 200 characters' })
      .regex(MODEL_PATTERN, { error: 'each entry must be a model id (vendor/name) or a vendor/* pattern' }),
    { error: 'expected an array of model ids (vendor/name) or vendor/* patterns' },
  )
  .max(MAX_ALLOWED_MODELS, { error: `must have at most ${MAX_ALLOWED_MODELS} entries` })
  .transform((list) => [...new Set(list)]);

const rateLimitRpm = z
  .number({ error: 'expected a positive integer (requests per minute) or null' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be at least 1 (null removes the limit)' })
  .max(MAX_RATE_LIMIT_RPM, { error: `must be at most ${MAX_RATE_LIMIT_RPM}` });

const includeByok = z.boolean({ error: 'expected true or false' });

export const createKeyBody = z.strictObject({
  name,
  limit: limit.nullable().optional(),
  limit_reset: limitReset.nullable().optional(),
  expires_at: expiresAt.nullable().optional(),
  include_byok_in_limit: includeByok.optional(),
  allowed_models: allowedModels.optional(),
  rate_limit_rpm: rateLimitRpm.nullable().optional(),
});

export const updateKeyBody = z.strictObject({
  name: name.optional(),
  disabled: z.boolean({ error: 'expected true or false' }).optional(),
  limit: limit.nullable().optional(),
  limit_reset: limitReset.nullable().optional(),
  expires_at: expiresAt.nullable().optional(),
  include_byok_in_limit: includeByok.optional(),
  allowed_models: allowedModels.optional(),
  rate_limit_rpm: rateLimitRpm.nullable().optional(),
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseHash(value: unknown): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw badRequest('hash: must be a uuid');
  return value.toLowerCase();
}

/** Parses a JSON object body: 400 naming the field (unknown fields included). */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object (Content-Type: application/json)');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  if (first?.code === 'unrecognized_keys') {
    const field = first.keys[0] ?? '';
    const hint = field === 'scope' ? '; keys created through the API always have scope inference' : '';
    throw badRequest(`${field}: unknown field${hint}`, { field });
  }
  const field = first?.path.map(String).join('.');
  throw badRequest(describeIssues(result.error.issues), field ? { field } : {});
}

export interface ListQuery {
  includeRevoked: boolean;
  offset: number;
}

/** `include_disabled` true|false (true also returns revoked keys), `offset` a non-negative integer. */
export function parseListQuery(query: Record<string, unknown>): ListQuery {
  const inc = query.include_disabled;
  if (inc !== undefined && inc !== 'true' && inc !== 'false') {
    throw badRequest('include_disabled: must be true or false', { field: 'include_disabled' });
  }
  const off = query.offset;
  if (off !== undefined && (typeof off !== 'string' || !/^\d{1,9}$/.test(off))) {
    throw badRequest('offset: must be a non-negative integer', { field: 'offset' });
  }
  return { includeRevoked: inc === 'true', offset: off === undefined ? 0 : Number(off) };
}
