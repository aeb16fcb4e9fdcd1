import type { CatalogModel, CatalogProvider } from '@tollgate/catalog';
import { computeCost } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { BodyCapture } from '../bodies/capture';
import type { ApiType } from '../doors/door';
import type { TokenCounts } from '../providers/wire-format';
import type { SpendGuard, SpendReservation } from '../spend/guard';
import { isAbortError, transportError } from '../upstream/upstream';
import { upperBound } from './bound';
import type { Attempt, CompletionInit, TokenEstimator, UsageSink } from './completion-init';
import { DEFAULT_CANCEL_DRAIN_MS, Drain } from './drain';
import { NO_MEDIA, type RequestMedia } from './media';
import type { Outcome, UsageSource } from './outcome';

import type { CanonicalRequest } from './request';
import { UpstreamAbort } from './upstream-abort';
import { type Billed, finishedLine, usageEventOf } from './usage-event';

/**
 * One completion request after it was admitted (whatever its front door), as a use case: it owns its state (the candidate
 * it is aimed at, attempts, cancellation, the duration cap, a lapsed lease, the error on its record)
 * and ends in one place, `finish`, exactly once: the upstream slot is released, the spend reservation
 * settled, and (unless nothing was consumed) one usage event published (which also feeds the token
 * and cost metrics, app.ts).
 */
export class Completion {
  readonly startedAt = Date.now();
  /** Aborts the upstream request (the duration cap, a stop, the end of a drain, nothing in flight). */
  readonly abort = new UpstreamAbort();
  /** Aborted when the client goes away (made with `waitSignal`, on first use: most requests never wait on their client). */
  private _clientGone: AbortController | null = null;
  private readonly drain: Drain;
  private _waitSignal: AbortSignal | null = null;
  /** The client left, or the upstream request was aborted, while a provider held it (bound.ts: its answer may exist). */
  private abortedAtProvider = false;
  private readonly media: RequestMedia;
  private _firstByteAt = 0;
  /** performance.now() when the request arrived (0: unknown), for the gateway overhead (usage-event.ts). */
  readonly receivedAt: number;
  private _upstreamStartedAt = 0;
  private _upstreamEndedAt = 0;
  private _firstTokenAt = 0;
  private _cancelled = false;
  private _timedOut = false;
  private _stopReason: AppError | null = null;
  private _error: AppError | null = null;
  private _errorDetail: string | null = null;
  /** Releases the upstream slot of the attempt in flight. */
  private release: (() => void) | null = null;
  private ended = false;
  private _recorded = false;
  private deadline: NodeJS.Timeout | null = null;
  private maxDurationMs = 0;

  readonly requestId: string;
  readonly key: CachedKey;
  readonly api: ApiType;
  readonly request: CanonicalRequest;
  private _model: CatalogModel;
  private _provider: CatalogProvider;
  private _upstreamModel: string;
  private _upstreamBody: Record<string, unknown>;
  /** Every attempt, the serving one last (provider, model, outcome, latency), for the record. */
  readonly attempts: Attempt[] = [];
  readonly app: string | null;
  readonly httpReferer: string | null;
  private readonly logger: Logger;
  private child: Logger | null = null;
  private promptExact: number | null;
  readonly reservation: SpendReservation | null;
  /** Opt-in bodies (issue 28): the prompt and answer kept for a key with `storeBodies`, else null. */
  readonly bodies: BodyCapture | null;

  constructor(
    init: CompletionInit,
    private readonly guard: SpendGuard,
    private readonly sink: UsageSink,
    private readonly estimator: TokenEstimator,
  ) {
    this.requestId = init.requestId;
    this.key = init.key;
    this.api = init.api;
    this.request = init.request;
    this._model = init.model;
    this._provider = init.provider;
    this._upstreamModel = init.upstreamModel;
    this._upstreamBody = init.request.body;
    this.app = init.app;
    this.httpReferer = init.httpReferer;
    this.logger = init.logger;
    this.promptExact = init.promptEstimate;
    this.reservation = init.reservation;
    this.drain = new Drain(init.cancelDrainMs ?? DEFAULT_CANCEL_DRAIN_MS);
    this.media = init.media ?? NO_MEDIA;
    this.receivedAt = init.receivedAt ?? 0;
    this.bodies = init.bodies ?? null;
  }

  // Its timings, 0 until marked (holdUpstream, markFirstByte, markUpstreamEnd): Date.now() of the first
  // answer byte; performance.now() of the first upstream slot, the first byte, the answer's end.
  get firstByteAt(): number {
    return this._firstByteAt;
  }
  get upstreamStartedAt(): number {
    return this._upstreamStartedAt;
  }
  get firstTokenAt(): number {
    return this._firstTokenAt;
  }
  get upstreamEndedAt(): number {
    return this._upstreamEndedAt;
  }

  /** The candidate being tried, then the one that served (failover moves it, `aim`). */
  get model(): CatalogModel {
    return this._model;
  }
  get provider(): CatalogProvider {
    return this._provider;
  }
  get upstreamModel(): string {
    return this._upstreamModel;
  }
  /** The body sent to the candidate (its wire format's). */
  get upstreamBody(): Record<string, unknown> {
    return this._upstreamBody;
  }
  /** The client went away (or stopped reading): nothing more is written to it. */
  get cancelled(): boolean {
    return this._cancelled;
  }
  /** The duration cap (COMPLETION_MAX_DURATION_MS) or a lapsed lease aborted the completion. */
  get timedOut(): boolean {
    return this._timedOut;
  }
  /** Why the answer failed after the provider accepted the request (first failure wins; pipeline/errors.ts). */
  get error(): AppError | null {
    return this._error;
  }
  /** The provider's own text of `error`, for the record only. */
  get errorDetail(): string | null {
    return this._errorDetail;
  }

  /** Its usage event was published (a failure billed is recorded there, never as a refusal too). */
  get recorded(): boolean {
    return this._recorded;
  }

  /** Child logger carrying the request id (created lazily: most requests never log). */
  get log(): Logger {
    this.child ??= this.logger.child({ requestId: this.requestId, keyId: this.key.id });
    return this.child;
  }

  /** Points the completion at a candidate, with the body its wire format sends. */
  aim(
    target: { model: CatalogModel; provider: CatalogProvider; upstreamModel: string },
    body: Record<string, unknown>,
  ): void {
    this._model = target.model;
    this._provider = target.provider;
    this._upstreamModel = target.upstreamModel;
    this._upstreamBody = body;
  }

  /** One failed or answered try of the candidate aimed at. */
  recordAttempt(status: number | null, outcome: string, startedAt: number): void {
    this.attempts.push({
      provider: this._provider.name,
      model: this._model.id,
      status,
      outcome,
      latency_ms: Date.now() - startedAt,
    });
  }

  /** The attempt's upstream slot (upstream.ts acquireUpstream); the previous one must be released. */
  holdUpstream(release: () => void): void {
    if (this._upstreamStartedAt === 0) this._upstreamStartedAt = performance.now();
    this.release = release;
  }

  /** Frees the attempt's upstream slot (a failed attempt, or the end). */
  releaseUpstream(): void {
    this.release?.();
    this.release = null;
    // A cancelled completion whose attempt failed has nothing left to drain (no failover follows).
    if (this._cancelled && !this.abort.aborted) {
      this.drain.stop();
      this.abort.abort();
    }
  }

  /** Ends a wait on the client: the client went away, or the upstream request was aborted. */
  get waitSignal(): AbortSignal {
    if (this._waitSignal === null) {
      this._clientGone = new AbortController();
      if (this._cancelled) this._clientGone.abort();
      this._waitSignal = AbortSignal.any([this.abort.signal, this._clientGone.signal]);
    }
    return this._waitSignal;
  }

  /** An attempt is at a provider (its upstream slot is held): what the provider does is billed. */
  get atProvider(): boolean {
    return this.release !== null && !this.ended;
  }

  /**
   * The client went away (or stopped reading): nothing more is written to it. When a provider holds
   * the request, its answer is drained for the usage (drain.ts); otherwise the request is aborted.
   */
  cancel(): void {
    if (this._cancelled) return;
    this._cancelled = true;
    if (this.atProvider) this.abortedAtProvider = true;
    this._clientGone?.abort();
    if (!this.drain.start(this)) this.abort.abort();
  }

  /** The drain's grace period is over: the upstream request is aborted (Drain). */
  expireDrain(): void {
    this.log.warn(
      { provider: this._provider.name },
      'cancelled completion: no usage within the drain period',
    );
    this.abortUpstream();
  }

  /** Stops the request with `reason` (answered like the duration cap: HTTP error or error chunk). */
  stop(reason: AppError): void {
    if (this.ended) return;
    this._stopReason = reason;
    this._timedOut = true;
    this.abortUpstream();
  }

  /**
   * A cancelled completion ended without reading an answer: may the provider have produced one? Yes
   * when a provider held the request as the client left or as it was aborted, unless its last answer
   * was an error (it refused the request).
   */
  private answerMayExist(): boolean {
    const last = this.attempts.at(-1);
    const refused = last !== undefined && last.status !== null && last.status >= 300;
    return this.abortedAtProvider && !refused;
  }

  /** Aborts the upstream request, noting whether a provider held it (its work is then billed: bound.ts). */
  private abortUpstream(): void {
    if (this.atProvider) this.abortedAtProvider = true;
    this.abort.abort();
  }

  /** Aborts the completion (upstream request included) once it has run `ms`. */
  startDeadline(ms: number): void {
    this.maxDurationMs = ms;
    this.deadline = setTimeout(() => {
      this._timedOut = true;
      this.abortUpstream();
    }, ms);
    this.deadline.unref();
  }

  /**
   * Records why the answer failed (the error chunk's and the record's error); the first failure wins.
   * `detail` is the provider's own text, for the record only.
   */
  fail(error: AppError, detail: string | null = null): void {
    if (this._error !== null) return;
    this._error = error;
    this._errorDetail = detail;
  }

  /** True when `err` (a failed upstream call or read) means the client went away, not a failure. */
  isCancellation(err: unknown): boolean {
    return this._cancelled || (isAbortError(err) && !this._timedOut);
  }

  /** The gateway error for a failed upstream call: capacity (503), a lapsed lease, the duration cap (504), transport. */
  failureOf(err: unknown): AppError {
    if (err instanceof AppError) return err;
    if (this._stopReason) return this._stopReason;
    if (this._timedOut) {
      return new AppError(
        'timeout',
        `Completion exceeded the gateway's maximum duration of ${Math.round(this.maxDurationMs / 1000)} s`,
        { provider_name: this._provider.name },
      );
    }
    return transportError(err, this._provider.name);
  }

  markFirstByte(): void {
    if (this._firstByteAt === 0) {
      this._firstByteAt = Date.now();
      this._firstTokenAt = performance.now();
    }
  }

  /** The provider's answer ended (or broke off): the end of the upstream time. */
  markUpstreamEnd(): void {
    if (this._upstreamEndedAt === 0) this._upstreamEndedAt = performance.now();
  }

  cost(tokens: TokenCounts): bigint {
    return computeCost(this._model, tokens);
  }

  /**
   * Ends the completion, exactly once (later calls do nothing): clears the duration cap, releases the
   * upstream slot, settles the reservation with the outcome's cost, and publishes the usage event
   * unless nothing was consumed (`refused`).
   */
  finish(outcome: Outcome): void {
    if (this.ended) return;
    this.ended = true;
    if (this.deadline) clearTimeout(this.deadline);
    this.drain.stop();
    this.releaseUpstream();
    let tokens: TokenCounts;
    let source: UsageSource = 'estimated';
    let costUnits: bigint;
    let finishReason: string | null = null;
    let upstreamId: string | null = null;
    switch (outcome.kind) {
      case 'refused':
        this.settle(0n, 0);
        return;
      case 'served':
        ({ tokens, source, costUnits, finishReason, upstreamId } = outcome);
        // A JSON answer is its last bytes (a stream's were captured as they were relayed).
        if (!this.request.stream && outcome.lastBytes !== null) this.bodies?.answer(outcome.lastBytes);
        break;
      case 'failed':
        // The provider accepted the request; its answer was never seen: the whole output budget.
        this.fail(outcome.error);
        tokens = this.bound(0, 'none');
        costUnits = this.cost(tokens);
        break;
      case 'cancelled':
        tokens = this.bound(0, this.answerMayExist() ? 'none' : 'prompt-only');
        costUnits = this.cost(tokens);
        break;
    }
    this.settle(costUnits, tokens.prompt + tokens.completion);
    this.publish({ tokens, source, costUnits, finishReason, upstreamId });
  }

  /** `tokensUsed`: prompt + completion, what the tokens-per-minute charge is corrected to (issue 29). */
  private settle(costUnits: bigint, tokensUsed: number): void {
    this.guard.settle(this.reservation, costUnits, tokensUsed).catch((err: unknown) => {
      this.log.error({ err }, 'spend settle failed');
    });
  }

  private publish(billed: Billed): void {
    const event = usageEventOf(this, billed, Date.now(), performance.now());
    this._recorded = true;
    try {
      this.sink.publish(event);
    } catch (err) {
      this.log.error({ err }, 'usage event publish failed');
    }
    // The usage event is the durable record of every completion; this line is for debugging only.
    if (this.logger.isLevelEnabled('debug')) this.log.debug(finishedLine(event), 'completion finished');
  }

  /** Conservative prompt estimate of the request messages (tokenized on first use only). */
  promptEstimate(): number {
    this.promptExact ??= this.estimator.estimatePromptTokens(this.request.messages, this.request.toolsJson);
    return this.promptExact;
  }

  /**
   * The upper bound billed when the provider reported no usage (bound.ts): the prompt with its media
   * at the serving model's bounds (and cache writes when asked), the text actually produced
   * (`overflowBytes`: UTF-8 bytes of produced text only counted, an upper bound of its tokens) plus
   * the reasoning budget the request allowed. The estimator's counts are linear-time and budgeted.
   */
  estimate(producedText: string, overflowBytes = 0): TokenCounts {
    const produced =
      (producedText.length === 0 ? 0 : this.estimator.estimateCompletionTokens(producedText)) + overflowBytes;
    return this.bound(produced, 'stream');
  }

  private bound(producedTokens: number, observed: 'stream' | 'none' | 'prompt-only'): TokenCounts {
    return upperBound({
      model: this._model,
      request: this.request,
      media: this.media,
      promptTextTokens: this.promptEstimate(),
      producedTokens,
      observed,
    });
  }
}
