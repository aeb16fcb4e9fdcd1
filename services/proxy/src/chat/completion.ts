import type { CatalogModel, CatalogProvider } from '@tollgate/catalog';
import { computeCost } from '@tollgate/catalog';
import type { AppError } from '@tollgate/errors';
import type { UsageEvent } from '@tollgate/events';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import { toDecimal } from '@tollgate/money';
import type { TokenCounts } from '../providers/wire-format';
import type { SpendGuard, SpendReservation } from '../spend/guard';
import type { ChatRequest } from './chat.validation';

/** Where usage events go (the @tollgate/events publisher: synchronous, buffered, never throws). */
export interface UsageSink {
  publish(event: UsageEvent): void;
  /** False when a new event could be neither sent nor spooled: the request is refused (503). */
  canAdmit?(): boolean;
}

/** Token estimates for requests the provider did not report usage for (@tollgate/tokens). */
export interface TokenEstimator {
  estimatePromptTokens(messages: readonly unknown[], toolsJson: string | null): number;
  estimateCompletionTokens(text: string): number;
}

export interface CompletionError {
  code: number;
  /** What the client sees (a summary for provider errors). */
  message: string;
  errorType: string;
  /** The provider's own text, for the generation record only (never sent to the client). */
  detail?: string;
}

export type UsageSource = 'provider' | 'estimated';

/** One try of one candidate: what a user debugging a failover needs. */
export interface Attempt {
  provider: string;
  model: string;
  /** HTTP status of the provider's answer, or null for a transport failure. */
  status: number | null;
  /** `ok`, `http_<status>`, `timeout`, `unreachable`, `circuit_open`. */
  outcome: string;
  latency_ms: number;
}

export interface CompletionInit {
  requestId: string;
  key: CachedKey;
  chat: ChatRequest;
  model: CatalogModel;
  provider: CatalogProvider;
  upstreamModel: string;
  app: string | null;
  /** HTTP-Referer of the request. */
  httpReferer: string | null;
  /** The service logger; the request's child logger (with requestId and keyId) is made on first use. */
  logger: Logger;
  /** The exact prompt estimate when admission already computed it (short prompts), else null. */
  promptEstimate: number | null;
  reservation: SpendReservation | null;
}

/**
 * The state of one chat completion request after it was admitted: what the provider produced, and
 * the single place it ends (settle the spend reservation exactly once, publish at most one event).
 */
export class Completion {
  readonly startedAt = Date.now();
  readonly abort = new AbortController();
  firstByteAt = 0;
  /** performance.now() marks for the metrics (services/proxy/src/metrics): upstream time and first token. */
  upstreamStartedAt = 0;
  upstreamEndedAt = 0;
  firstTokenAt = 0;
  upstreamId: string | null = null;
  finishReason: string | null = null;
  cancelled = false;
  /** The completion ran past its maximum duration (COMPLETION_MAX_DURATION_MS) and was aborted. */
  timedOut = false;
  error: CompletionError | null = null;
  /** Called once when the completion ends (releases its upstream slot). */
  release: (() => void) | null = null;
  private ended = false;
  private deadline: NodeJS.Timeout | null = null;

  readonly requestId: string;
  readonly key: CachedKey;
  readonly chat: ChatRequest;
  /** The candidate being tried, then the one that served (failover moves these). */
  model: CatalogModel;
  provider: CatalogProvider;
  upstreamModel: string;
  /** Every attempt before the serving one (provider, model, outcome, latency), for the record. */
  readonly attempts: Attempt[] = [];
  readonly app: string | null;
  readonly httpReferer: string | null;
  private readonly logger: Logger;
  private child: Logger | null = null;
  private promptExact: number | null;
  readonly reservation: SpendReservation | null;

  constructor(
    init: CompletionInit,
    private readonly guard: SpendGuard,
    private readonly sink: UsageSink,
    private readonly estimator: TokenEstimator,
  ) {
    this.requestId = init.requestId;
    this.key = init.key;
    this.chat = init.chat;
    this.model = init.model;
    this.provider = init.provider;
    this.upstreamModel = init.upstreamModel;
    this.app = init.app;
    this.httpReferer = init.httpReferer;
    this.logger = init.logger;
    this.promptExact = init.promptEstimate;
    this.reservation = init.reservation;
  }

  /** Child logger carrying the request id (created lazily: most requests never log). */
  get log(): Logger {
    this.child ??= this.logger.child({ requestId: this.requestId, keyId: this.key.id });
    return this.child;
  }

  /** Aborts the completion (upstream request included) once it has run `ms`. */
  /** Why the gateway stopped the request before it ended (its spend lease lapsed over the limit). */
  stopReason: AppError | null = null;

  /** Stops the request with `reason` (answered like the duration cap: HTTP error or error chunk). */
  stop(reason: AppError): void {
    if (this.ended) return;
    this.stopReason = reason;
    this.timedOut = true;
    this.abort.abort();
  }

  startDeadline(ms: number): void {
    this.deadline = setTimeout(() => {
      this.timedOut = true;
      this.abort.abort();
    }, ms);
    this.deadline.unref();
  }

  markFirstByte(): void {
    if (this.firstByteAt === 0) {
      this.firstByteAt = Date.now();
      this.firstTokenAt = performance.now();
    }
  }

  /** The provider's answer ended (or broke off): the end of the upstream time. */
  markUpstreamEnd(): void {
    if (this.upstreamEndedAt === 0) this.upstreamEndedAt = performance.now();
  }

  cost(tokens: TokenCounts): bigint {
    return computeCost(this.model, tokens);
  }

  /**
   * Ends the request: settles the reservation with the final cost and publishes the usage event.
   * `tokens` null means nothing was consumed (the provider refused the request before producing
   * anything): cost 0, no event.
   */
  end(tokens: TokenCounts | null, source: UsageSource, costUnits: bigint): void {
    if (this.ended) return;
    this.ended = true;
    if (this.deadline) clearTimeout(this.deadline);
    this.release?.();
    this.release = null;
    this.guard.settle(this.reservation, costUnits).catch((err: unknown) => {
      this.log.error({ err }, 'spend settle failed');
    });
    if (tokens === null) return;
    const finishedAt = Date.now();
    const event: UsageEvent = {
      type: 'usage',
      version: 1,
      id: this.requestId,
      account_id: this.key.accountId,
      key_id: this.key.id,
      model: this.model.id,
      provider_name: this.provider.name,
      upstream_model: this.upstreamModel,
      upstream_id: this.upstreamId,
      app: this.app,
      http_referer: this.httpReferer,
      streamed: this.chat.stream,
      cancelled: this.cancelled,
      finish_reason: this.error ? 'error' : this.finishReason,
      usage_source: source,
      tokens: {
        prompt: tokens.prompt,
        completion: tokens.completion,
        cached: tokens.cached,
        cache_write: tokens.cacheWrite,
        reasoning: tokens.reasoning,
      },
      cost: toDecimal(costUnits),
      is_byok: false,
      error: this.error ? { code: this.error.code, message: this.error.detail ?? this.error.message } : null,
      started_at: new Date(this.startedAt).toISOString(),
      finished_at: new Date(finishedAt).toISOString(),
      latency_ms: Math.max(0, (this.firstByteAt || finishedAt) - this.startedAt),
      generation_time_ms: Math.max(0, finishedAt - this.startedAt),
      attempts: this.attempts,
    };
    try {
      this.sink.publish(event);
    } catch (err) {
      this.log.error({ err }, 'usage event publish failed');
    }
    // The usage event is the durable record of every completion; this line is for debugging only.
    if (!this.logger.isLevelEnabled('debug')) return;
    this.log.debug(
      {
        model: this.model.id,
        provider: this.provider.name,
        streamed: event.streamed,
        cancelled: event.cancelled,
        usageSource: source,
        promptTokens: tokens.prompt,
        completionTokens: tokens.completion,
        cost: event.cost,
        finishReason: event.finish_reason,
        error: event.error?.code,
        ms: event.generation_time_ms,
      },
      'completion finished',
    );
  }

  /** Conservative prompt estimate of the request messages (tokenized on first use only). */
  promptEstimate(): number {
    this.promptExact ??= this.estimator.estimatePromptTokens(this.chat.messages, this.chat.toolsJson);
    return this.promptExact;
  }

  /**
   * Estimated counts: prompt from the request messages, completion from the text actually produced
   * (plus `overflowBytes`, UTF-8 bytes of produced text that was only counted, not kept: an upper
   * bound of its tokens). The estimator's counts are linear-time and budgeted (@tollgate/tokens).
   */
  estimate(producedText: string, overflowBytes = 0): TokenCounts {
    return {
      prompt: this.promptEstimate(),
      completion:
        (producedText.length === 0 ? 0 : this.estimator.estimateCompletionTokens(producedText)) +
        overflowBytes,
      cached: 0,
      cacheWrite: 0,
      reasoning: 0,
    };
  }
}
