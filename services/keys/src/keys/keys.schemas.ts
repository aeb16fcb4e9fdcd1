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

export const createKeyBody = z.strictObject({
  name,
  limit: limit.nullable().optional(),
  limit_reset: limitReset.nullable().optional(),
});

export const updateKeyBody = z.strictObject({
  name: name.optional(),
  disabled: z.boolean({ error: 'expected true or false' }).optional(),
  limit: limit.nullable().optional(),
  limit_reset: limitReset.nullable().optional(),
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
