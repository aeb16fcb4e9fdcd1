import type { UsageEventV1 } from '@tollgate/events';
import { toDecimal } from '@tollgate/money';
import type { TokenCounts } from '../providers/wire-format';
import type { Completion } from './completion';
import type { UsageSource } from './outcome';

/** What a completion is billed (its outcome's, or the estimate of a failed or cancelled one). */
export interface Billed {
  tokens: TokenCounts;
  source: UsageSource;
  costUnits: bigint;
  finishReason: string | null;
  upstreamId: string | null;
}

type EventSource = Pick<
  Completion,
  | 'requestId'
  | 'key'
  | 'model'
  | 'provider'
  | 'upstreamModel'
  | 'app'
  | 'httpReferer'
  | 'api'
  | 'request'
  | 'cancelled'
  | 'error'
  | 'errorDetail'
  | 'startedAt'
  | 'firstByteAt'
  | 'attempts'
  | 'receivedAt'
  | 'upstreamStartedAt'
  | 'upstreamEndedAt'
  | 'bodies'
>;

/**
 * The gateway's overhead in µs at `now` (performance.now()): the request's time in the proxy (its
 * arrival to now) minus the time waiting on providers (the first attempt's upstream slot taken to
 * the answer's end, failed attempts included). Undefined when either mark is missing. Monotonic
 * clock marks only (the metrics take the same ones); `now` is the one read this adds per request.
 */
export function gatewayOverheadUs(
  c: Pick<EventSource, 'receivedAt' | 'upstreamStartedAt' | 'upstreamEndedAt'>,
  now: number,
): number | undefined {
  if (c.receivedAt === 0 || c.upstreamStartedAt === 0) return undefined;
  const waited = (c.upstreamEndedAt > 0 ? c.upstreamEndedAt : now) - c.upstreamStartedAt;
  return Math.max(0, Math.round((now - c.receivedAt - waited) * 1000));
}

/**
 * The usage event of a completion that ended at `finishedAt` (epoch ms; `now`, the same instant on
 * the monotonic clock): Completion.finish publishes it.
 */
export function usageEventOf(c: EventSource, b: Billed, finishedAt: number, now: number): UsageEventV1 {
  const error = c.error;
  const overhead = gatewayOverheadUs(c, now);
  const { tokens } = b;
  return {
    type: 'usage',
    version: 1,
    id: c.requestId,
    account_id: c.key.accountId,
    key_id: c.key.id,
    ...(c.key.teamId ? { team_id: c.key.teamId } : {}),
    model: c.model.id,
    provider_name: c.provider.name,
    upstream_model: c.upstreamModel,
    upstream_id: b.upstreamId,
    app: c.app,
    http_referer: c.httpReferer,
    api_type: c.api,
    ...(c.request.sessionId ? { session_id: c.request.sessionId } : {}),
    ...(c.request.withheldTools?.length ? { withheld_tools: c.request.withheldTools } : {}),
    ...(c.request.endUser ? { end_user: c.request.endUser } : {}),
    streamed: c.request.stream,
    cancelled: c.cancelled,
    finish_reason: error ? 'error' : b.finishReason,
    usage_source: b.source,
    tokens: {
      prompt: tokens.prompt,
      completion: tokens.completion,
      cached: tokens.cached,
      cache_write: tokens.cacheWrite,
      // The 1-hour share of the cache writes, priced apart (billing recomputes the cost with it).
      ...(tokens.cacheWrite1h ? { cache_write_1h: tokens.cacheWrite1h } : {}),
      reasoning: tokens.reasoning,
    },
    cost: toDecimal(b.costUnits),
    is_byok: false,
    error: error ? { code: error.status, message: c.errorDetail ?? error.message } : null,
    started_at: new Date(c.startedAt).toISOString(),
    finished_at: new Date(finishedAt).toISOString(),
    latency_ms: Math.max(0, (c.firstByteAt || finishedAt) - c.startedAt),
    generation_time_ms: Math.max(0, finishedAt - c.startedAt),
    ...(overhead === undefined ? {} : { gateway_overhead_us: overhead }),
    attempts: c.attempts,
    ...(c.bodies ? { bodies: c.bodies.result(c.request.stream) } : {}),
  };
}

/** The debug line of a finished completion (the usage event is the durable record; this is for debugging). */
export function finishedLine(event: UsageEventV1): Record<string, unknown> {
  return {
    model: event.model,
    provider: event.provider_name,
    streamed: event.streamed,
    cancelled: event.cancelled,
    usageSource: event.usage_source,
    promptTokens: event.tokens.prompt,
    completionTokens: event.tokens.completion,
    cost: event.cost,
    finishReason: event.finish_reason,
    error: event.error?.code,
    ms: event.generation_time_ms,
  };
}
