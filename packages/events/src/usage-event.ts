import type { z } from 'zod';
import { f } from './event-fields';

/**
 * The usage event: one per chat completion request, published by the proxy, consumed by billing.
 * Versioned JSON; consumers validate with `parseUsageEvent` and dead-letter what does not parse.
 * Money is a decimal string (USD), never a float.
 *
 * Each field is declared once (`event-fields.ts`): the zod schema and the fast check billing uses
 * for an event exactly as the proxy publishes it are both built from this declaration. A new field
 * is one line here; make it `f.optional(…)` so events of older proxies still parse.
 */
const DECIMAL = /^\d+(\.\d+)?$/;
const REQUEST_ID = /^gen-\d+-[A-Za-z0-9]{20}$/;
/** The proxy's front doors (services/proxy/src/doors/): which API a request came in by. */
export const API_TYPES = ['chat', 'messages', 'responses', 'embeddings'] as const;

/** Most characters of a kept prompt or answer: BODIES_MAX_BYTES' ceiling (256 KiB) plus its marker. */
export const BODY_MAX_CHARS = 262_144 + 64;

const nonEmpty = () => f.text(1);
const optionalText = () => f.optional(f.nullable(f.text()));

const usageEventV1Fields = f.object({
  type: f.literal('usage'),
  version: f.literal(1),
  /** The request id (`gen-…`): completion id, generation record id, idempotency key. */
  id: f.pattern(REQUEST_ID),
  account_id: f.uuid(),
  key_id: f.uuid(),
  /**
   * The key's team when the request was admitted (issue 29): its spend counts toward the team's
   * limit (billing's `team_spend`). Optional: absent or null = no team (and in events before it existed).
   */
  team_id: f.optional(f.nullable(f.uuid())),
  /** Catalog model id (`vendor/name`). */
  model: nonEmpty(),
  provider_name: nonEmpty(),
  upstream_model: nonEmpty(),
  /** The provider's own response id, when it sent one. */
  upstream_id: f.nullable(f.text()),
  /** X-OpenRouter-Title (or X-Title) of the request. */
  app: f.nullable(f.text()),
  /** HTTP-Referer of the request (optional: events published before it existed parse). */
  http_referer: optionalText(),
  /** The API the request came in by (the proxy's front door); absent in events before it existed: chat. */
  api_type: f.optional(f.oneOf(API_TYPES)),
  /**
   * The client's session (Claude Code's `X-Claude-Code-Session-Id`), so a session's spend can be
   * grouped; optional: absent when the client sent none, and in events before it existed.
   */
  session_id: optionalText(),
  /** The caller's end-user id (Anthropic `metadata.user_id`); optional like `session_id`. */
  end_user: optionalText(),
  streamed: f.boolean(),
  cancelled: f.boolean(),
  finish_reason: f.nullable(f.text()),
  /** `provider`: the provider reported usage; `estimated`: counted by the proxy's tokenizer. */
  usage_source: f.oneOf(['provider', 'estimated']),
  tokens: f.object({
    prompt: f.count(),
    completion: f.count(),
    cached: f.count(),
    cache_write: f.count(),
    /** The part of `cache_write` written for one hour (Anthropic `ttl: "1h"`); absent: none. */
    cache_write_1h: f.optional(f.count()),
    reasoning: f.count(),
  }),
  /** Total cost in USD. */
  cost: f.pattern(DECIMAL, 'expected a non-negative decimal string'),
  is_byok: f.boolean(),
  /** The upstream error that ended the request, if any. */
  error: f.nullable(f.object({ code: f.int(), message: f.text() })),
  started_at: f.datetime(),
  finished_at: f.datetime(),
  /** Request start to first byte from the provider. */
  latency_ms: f.count(),
  /** Request start to end of generation. */
  generation_time_ms: f.count(),
  /**
   * The time the gateway itself added, in microseconds: the request's whole time in the proxy (its
   * arrival to the answer's end) minus the time waiting on providers (the first attempt sent to the
   * answer's last byte). docs/architecture.md "Gateway overhead". Optional: absent in events of
   * proxies before it existed (their records have none).
   */
  gateway_overhead_us: f.optional(f.count()),
  /**
   * Every provider attempt of the request in order, the serving one last (failover). Optional:
   * events of proxies before routing have none.
   */
  attempts: f.optional(
    f.array(
      f.object({
        provider: nonEmpty(),
        model: nonEmpty(),
        status: f.nullable(f.int()),
        outcome: f.text(),
        latency_ms: f.count(),
      }),
      32,
    ),
  ),
  /** Hosted tools the request offered that were withheld from the provider (`POST /responses`). */
  withheld_tools: f.optional(f.array(f.text(1, 64), 32)),
  /**
   * Opt-in bodies (issue 28): the request's prompt and answer, when its key keeps them — redacted and
   * cut to the proxy's BODIES_MAX_BYTES (UTF-8 bytes, then a truncation marker) before they leave it.
   * Absent for every other key (and in events before it existed).
   */
  bodies: f.optional(
    f.object({
      prompt: f.text(0, BODY_MAX_CHARS),
      answer: f.text(0, BODY_MAX_CHARS),
      truncated: f.boolean(),
    }),
  ),
});

export const usageEventV1 = usageEventV1Fields.zod;

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
const refusalEventV1Fields = f.object({
  type: f.literal('refusal'),
  version: f.literal(1),
  /** The request id the refused request answered with (`X-Request-Id`). */
  id: f.pattern(REQUEST_ID),
  account_id: f.uuid(),
  key_id: f.uuid(),
  api_type: f.oneOf(API_TYPES),
  /** The model the request asked for, when its body named one (at most 200 characters). */
  model: f.nullable(f.text(0, 200)),
  app: f.nullable(f.text(0, 200)),
  /** The HTTP status answered (4xx or 5xx; billing counts it by class). */
  status: f.int(),
  error_type: f.oneOf(REFUSAL_TYPES),
  /** The error envelope's `error_type` (`key_limit_exceeded`, `rate_limited`, …). */
  code: f.text(1, 64),
  /** The error message answered (at most 300 characters). */
  message: f.text(0, 300),
  /** When the refusal was answered (named like the usage event's: billing's time check reads it). */
  finished_at: f.datetime(),
});
export const refusalEventV1 = refusalEventV1Fields.zod;

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

/**
 * True only for a v1 event that `usageEventV1` accepts and returns unchanged: every field present
 * with its exact type and format, no key the schema does not know (zod would strip it), no text
 * its transform would rewrite. Such an event is used as decoded (no zod pass); anything else —
 * invalid, or merely unusual — goes through zod, which decides. Built from the same declaration.
 */
export function isPlainUsageEventV1(o: unknown): o is UsageEventV1 {
  return usageEventV1Fields.plain(o);
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
