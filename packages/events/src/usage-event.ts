import { safeText } from '@tollgate/errors';
import { z } from 'zod';

/**
 * The usage event: one per chat completion request, published by the proxy, consumed by billing.
 * Versioned JSON; consumers validate with `parseUsageEvent` and dead-letter what does not parse.
 * Money is a decimal string (USD), never a float.
 */
const decimal = z.string().regex(/^\d+(\.\d+)?$/, 'expected a non-negative decimal string');
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/**
 * Free text that reaches Postgres `text`/`jsonb`, which cannot hold NUL nor a lone surrogate
 * (`\ud83d` without its pair: jsonb rejects the escape): a provider sending one in a finish_reason
 * or error message, or a cut through a surrogate pair, must not turn the event into a poison
 * message, so NUL is dropped and lone surrogates become U+FFFD.
 */
const text = z.string().transform((s) => safeText(s.includes('\u0000') ? s.replaceAll('\u0000', '') : s));

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
  /**
   * Every provider attempt of the request in order, the serving one last (failover). Optional:
   * events of proxies before routing have none.
   */
  attempts: z
    .array(
      z.object({
        provider: text.pipe(z.string().min(1)),
        model: text.pipe(z.string().min(1)),
        status: z.number().int().nullable(),
        outcome: text,
        latency_ms: count,
      }),
    )
    .max(32)
    .optional(),
});

export type UsageEventV1 = z.output<typeof usageEventV1>;
export type UsageEvent = UsageEventV1;

/**
 * The catalog of messages on the usage exchange: type → version → schema. A consumer decodes a
 * message by its body's `type` and `version`; billing has one typed handler per entry. A new version
 * is added here (the old one stays while producers may still send it).
 */
export const usageEventSchemas = { usage: { 1: usageEventV1 } } as const;

export type UsageEventSchemas = typeof usageEventSchemas;
export type UsageEventType = keyof UsageEventSchemas;
/** The decoded event of one catalog entry. */
export type UsageEventOf<
  T extends UsageEventType,
  V extends keyof UsageEventSchemas[T],
> = UsageEventSchemas[T][V] extends z.ZodType ? z.output<UsageEventSchemas[T][V]> : never;

export type ParseResult = { ok: true; event: UsageEvent } | { ok: false; reason: string };

export function parseUsageEvent(body: Buffer | string): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  const { type, version } = (json ?? {}) as { type?: unknown; version?: unknown };
  const versions: Record<string, z.ZodType<UsageEvent> | undefined> | undefined =
    typeof type === 'string' && Object.hasOwn(usageEventSchemas, type)
      ? usageEventSchemas[type as UsageEventType]
      : undefined;
  if (!versions) return { ok: false, reason: `type: unknown event type ${JSON.stringify(type)}` };
  const schema = typeof version === 'number' ? versions[String(version)] : undefined;
  if (!schema)
    return { ok: false, reason: `version: unknown version ${JSON.stringify(version)} of "${type}"` };
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, event: result.data };
}

/**
 * AMQP `type` of a message carrying several usage events: their JSON bodies joined by `\n` (NDJSON;
 * JSON text never holds a raw newline, so the split is exact). The proxy packs the events it has at
 * hand into one message (fewer broker writes, confirms and deliveries per event); a message of one
 * event keeps the plain `usage.v1` shape.
 */
export const USAGE_BATCH_MESSAGE_TYPE = 'usage.batch.v1';

const NEWLINE = 0x0a;

/** The event bodies of a message: its lines when it is a batch message, else the whole body. */
export function usageMessageBodies(content: Buffer, type: unknown): Buffer[] {
  if (type !== USAGE_BATCH_MESSAGE_TYPE) return [content];
  const bodies: Buffer[] = [];
  let start = 0;
  for (;;) {
    const end = content.indexOf(NEWLINE, start);
    const line = content.subarray(start, end === -1 ? content.length : end);
    if (line.length > 0) bodies.push(line);
    if (end === -1) return bodies;
    start = end + 1;
  }
}

/** One batch message body from event bodies (each already a JSON text without raw newlines). */
export function usageBatchBody(bodies: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < bodies.length; i++) {
    if (i > 0) parts.push(NEWLINE_BUFFER);
    parts.push(bodies[i] as Buffer);
  }
  return Buffer.concat(parts);
}
const NEWLINE_BUFFER = Buffer.from('\n');
