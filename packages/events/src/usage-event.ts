import { z } from 'zod';

/**
 * The usage event: one per chat completion request, published by the proxy, consumed by billing.
 * Versioned JSON; consumers validate with `parseUsageEvent` and dead-letter what does not parse.
 * Money is a decimal string (USD), never a float.
 */
const decimal = z.string().regex(/^\d+(\.\d+)?$/, 'expected a non-negative decimal string');
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/**
 * Free text that reaches Postgres `text`/`jsonb`, which cannot hold NUL: a provider sending one in a
 * finish_reason or error message must not turn the event into a poison message, so it is dropped.
 */
const text = z.string().transform((s) => (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s));

export const usageEventV1 = z.object({
  type: z.literal('usage'),
  version: z.literal(1),
  /** The request id (`gen-…`): completion id, generation record id, idempotency key. */
  id: z.string().regex(/^gen-\d+-[A-Za-z0-9]{20}$/),
  account_id: z.string().uuid(),
  key_id: z.string().uuid(),
  /** Catalog model id (`vendor/name`). */
  model: text.pipe(z.string().min(1)),
  provider_name: text.pipe(z.string().min(1)),
  upstream_model: text.pipe(z.string().min(1)),
  /** The provider's own response id, when it sent one. */
  upstream_id: text.nullable(),
  /** X-OpenRouter-Title (or X-Title) of the request. */
  app: text.nullable(),
  /** HTTP-Referer of the request (optional: events published before it existed parse). */
  http_referer: text.nullable().optional(),
  streamed: z.boolean(),
  cancelled: z.boolean(),
  finish_reason: text.nullable(),
  /** `provider`: the provider reported usage; `estimated`: counted by the proxy's tokenizer. */
  usage_source: z.enum(['provider', 'estimated']),
  tokens: z.object({
    prompt: count,
    completion: count,
    cached: count,
    cache_write: count,
    reasoning: count,
  }),
  /** Total cost in USD. */
  cost: decimal,
  is_byok: z.boolean(),
  /** The upstream error that ended the request, if any. */
  error: z.object({ code: z.number().int(), message: text }).nullable(),
  started_at: z.string().datetime(),
  finished_at: z.string().datetime(),
  /** Request start to first byte from the provider. */
  latency_ms: count,
  /** Request start to end of generation. */
  generation_time_ms: count,
});

export type UsageEventV1 = z.output<typeof usageEventV1>;
export type UsageEvent = UsageEventV1;

/** The catalog of message types on the usage exchange: type → schema. */
export const usageEventSchemas = { 'usage.v1': usageEventV1 } as const;

export type ParseResult = { ok: true; event: UsageEvent } | { ok: false; reason: string };

export function parseUsageEvent(body: Buffer | string): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  const result = usageEventV1.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, event: result.data };
}
