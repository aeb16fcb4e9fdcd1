import { safeText } from '@tollgate/errors';
import { z } from 'zod';

/**
 * The usage event: one per chat completion request, published by the proxy, consumed by billing.
 * Versioned JSON; consumers validate with `parseUsageEvent` and dead-letter what does not parse.
 * Money is a decimal string (USD), never a float.
 */
const DECIMAL = /^\d+(\.\d+)?$/;
const REQUEST_ID = /^gen-\d+-[A-Za-z0-9]{20}$/;
const decimal = z.string().regex(DECIMAL, 'expected a non-negative decimal string');
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** The proxy's front doors (services/proxy/src/doors/): which API a request came in by. */
export const API_TYPES = ['chat', 'messages', 'responses', 'embeddings'] as const;
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
  id: z.string().regex(REQUEST_ID),
  account_id: z.string().uuid(),
  key_id: z.string().uuid(),
  /**
   * The key's team when the request was admitted (issue 29): its spend counts toward the team's
   * limit (billing's `team_spend`). Optional: absent or null = no team (and in events before it existed).
   */
  team_id: z.string().uuid().nullable().optional(),
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
  /** The API the request came in by (the proxy's front door); absent in events before it existed: chat. */
  api_type: z.enum(API_TYPES).optional(),
  /**
   * The client's session (Claude Code's `X-Claude-Code-Session-Id`), so a session's spend can be
   * grouped; optional: absent when the client sent none, and in events before it existed.
   */
  session_id: text.nullable().optional(),
  /** The caller's end-user id (Anthropic `metadata.user_id`); optional like `session_id`. */
  end_user: text.nullable().optional(),
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
    /** The part of `cache_write` written for one hour (Anthropic `ttl: "1h"`); absent: none. */
    cache_write_1h: count.optional(),
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
  /** Hosted tools the request offered that were withheld from the provider (`POST /responses`). */
  withheld_tools: z
    .array(text.pipe(z.string().min(1).max(64)))
    .max(32)
    .optional(),
});

export type UsageEventV1 = z.output<typeof usageEventV1>;

/** What a refused request is counted as (`RefusalEventV1.error_type`). */
export const REFUSAL_TYPES = ['limit', 'rate_limit', 'auth', 'bad_request', 'provider', 'other'] as const;
export type RefusalType = (typeof REFUSAL_TYPES)[number];

/**
 * A request of a known key answered with an error and nothing billed (spend limit, rate limit, a
 * disabled key, a bad request, every provider refusing), published by the proxy on the same
 * exchange so the refusals are counted in billing's roll-ups and the last ones per key are kept.
 * No cost, no tokens: billing's checks verify its signature and time like any event's. Requests of
 * unknown keys have no account: they are only counted in the proxy's metrics.
 */
export const refusalEventV1 = z.object({
  type: z.literal('refusal'),
  version: z.literal(1),
  /** The request id the refused request answered with (`X-Request-Id`). */
  id: z.string().regex(REQUEST_ID),
  account_id: z.string().uuid(),
  key_id: z.string().uuid(),
  api_type: z.enum(API_TYPES),
  /** The model the request asked for, when its body named one (at most 200 characters). */
  model: text.pipe(z.string().max(200)).nullable(),
  app: text.pipe(z.string().max(200)).nullable(),
  /** The HTTP status answered (400–599). */
  status: z.number().int().min(400).max(599),
  error_type: z.enum(REFUSAL_TYPES),
  /** The error envelope's `error_type` (`key_limit_exceeded`, `rate_limited`, …). */
  code: text.pipe(z.string().min(1).max(64)),
  /** The error message answered (at most 300 characters). */
  message: text.pipe(z.string().max(300)),
  /** When the refusal was answered (named like the usage event's: billing's time check reads it). */
  finished_at: z.string().datetime(),
});

export type RefusalEventV1 = z.output<typeof refusalEventV1>;
/** Any event of the usage exchange (see `usageEventSchemas`). */
export type UsageEvent = UsageEventV1 | RefusalEventV1;

/**
 * The catalog of messages on the usage exchange: type → version → schema. A consumer decodes a
 * message by its body's `type` and `version`; billing has one typed handler per entry. A new version
 * is added here (the old one stays while producers may still send it).
 */
export const usageEventSchemas = { usage: { 1: usageEventV1 }, refusal: { 1: refusalEventV1 } } as const;

export type UsageEventSchemas = typeof usageEventSchemas;
export type UsageEventType = keyof UsageEventSchemas;
/** The decoded event of one catalog entry. */
export type UsageEventOf<
  T extends UsageEventType,
  V extends keyof UsageEventSchemas[T],
> = UsageEventSchemas[T][V] extends z.ZodType ? z.output<UsageEventSchemas[T][V]> : never;

export type ParseResult = { ok: true; event: UsageEvent } | { ok: false; reason: string };

// ---- fast path: the v1 event exactly as the proxy publishes it --------------------------------

/** The patterns zod itself uses for `.uuid()` and `.datetime()` (no offset, any precision). */
const UUID = z.regexes.uuid();
const DATETIME = z.regexes.datetime({ precision: null, offset: false, local: false });
const V1_KEYS = new Set(Object.keys(usageEventV1.shape));
const TOKEN_KEYS = new Set(['prompt', 'completion', 'cached', 'cache_write', 'cache_write_1h', 'reasoning']);
const ERROR_KEYS = new Set(['code', 'message']);
const ATTEMPT_KEYS = new Set(['provider', 'model', 'status', 'outcome', 'latency_ms']);

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const onlyKeys = (o: Obj, allowed: Set<string>) => {
  for (const k in o) if (!allowed.has(k)) return false;
  return true;
};
const isCount = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
/** `String.prototype.isWellFormed` (ES2024; the workspace's lib is ES2023). */
const isWellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();
/** Text the schema's `text` transform leaves unchanged: no NUL, no lone surrogate. */
const isText = (v: unknown): v is string => typeof v === 'string' && !v.includes('\u0000') && isWellFormed(v);
const isNonEmptyText = (v: unknown) => isText(v) && v.length > 0;
const isTextOrNull = (v: unknown) => v === null || isText(v);
const matches = (v: unknown, re: RegExp) => typeof v === 'string' && re.test(v);

const isToolList = (v: unknown) =>
  Array.isArray(v) && v.length <= 32 && v.every((t) => isNonEmptyText(t) && (t as string).length <= 64);

/**
 * True only for a v1 event that `usageEventV1` accepts and returns unchanged: every field present
 * with its exact type and format, no key the schema does not know (zod would strip it), no text
 * its transform would rewrite. Such an event is used as decoded (no zod pass: most of the worker's
 * decode cost); anything else — invalid, or merely unusual — goes through zod, which decides.
 * Stricter than zod is safe; looser would not be (`usage-event.test.ts` checks it against zod).
 */
export function isPlainUsageEventV1(o: unknown): o is UsageEventV1 {
  if (!isObject(o) || !onlyKeys(o, V1_KEYS)) return false;
  const { tokens, error, attempts } = o;
  if (
    !(
      o.type === 'usage' &&
      o.version === 1 &&
      matches(o.id, REQUEST_ID) &&
      matches(o.account_id, UUID) &&
      matches(o.key_id, UUID) &&
      (!Object.hasOwn(o, 'team_id') || o.team_id === null || matches(o.team_id, UUID)) &&
      isNonEmptyText(o.model) &&
      isNonEmptyText(o.provider_name) &&
      isNonEmptyText(o.upstream_model) &&
      isTextOrNull(o.upstream_id) &&
      isTextOrNull(o.app) &&
      (!Object.hasOwn(o, 'http_referer') || isTextOrNull(o.http_referer)) &&
      (!Object.hasOwn(o, 'api_type') || (API_TYPES as readonly unknown[]).includes(o.api_type)) &&
      (!Object.hasOwn(o, 'session_id') || isTextOrNull(o.session_id)) &&
      (!Object.hasOwn(o, 'end_user') || isTextOrNull(o.end_user)) &&
      typeof o.streamed === 'boolean' &&
      typeof o.cancelled === 'boolean' &&
      isTextOrNull(o.finish_reason) &&
      (o.usage_source === 'provider' || o.usage_source === 'estimated') &&
      matches(o.cost, DECIMAL) &&
      typeof o.is_byok === 'boolean' &&
      matches(o.started_at, DATETIME) &&
      matches(o.finished_at, DATETIME) &&
      isCount(o.latency_ms) &&
      isCount(o.generation_time_ms)
    )
  )
    return false;
  if (
    !isObject(tokens) ||
    !onlyKeys(tokens, TOKEN_KEYS) ||
    !isCount(tokens.prompt) ||
    !isCount(tokens.completion) ||
    !isCount(tokens.cached) ||
    !isCount(tokens.cache_write) ||
    (Object.hasOwn(tokens, 'cache_write_1h') && !isCount(tokens.cache_write_1h)) ||
    !isCount(tokens.reasoning)
  )
    return false;
  if (
    error !== null &&
    !(
      isObject(error) &&
      onlyKeys(error, ERROR_KEYS) &&
      Number.isSafeInteger(error.code) &&
      isText(error.message)
    )
  )
    return false;
  if (Object.hasOwn(o, 'withheld_tools') && !isToolList(o.withheld_tools)) return false;
  if (!Object.hasOwn(o, 'attempts')) return true;
  if (!Array.isArray(attempts) || attempts.length > 32) return false;
  for (const a of attempts as unknown[]) {
    if (
      !isObject(a) ||
      !onlyKeys(a, ATTEMPT_KEYS) ||
      !isNonEmptyText(a.provider) ||
      !isNonEmptyText(a.model) ||
      !(a.status === null || Number.isSafeInteger(a.status)) ||
      !isText(a.outcome) ||
      !isCount(a.latency_ms)
    )
      return false;
  }
  return true;
}

export function parseUsageEvent(body: Buffer | string): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { ok: false, reason: 'body is not JSON' };
  }
  if (isPlainUsageEventV1(json)) return { ok: true, event: json };
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
