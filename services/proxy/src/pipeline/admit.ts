import { AppError, headerText } from '@tollgate/errors';

/** A key over its `rate_limit_tpm` (429, reason tpm): `Retry-After` like the request rate limit's. */
function tokenRateRetryAfter(res: ProxyResponse, err: unknown): void {
  if (!(err instanceof AppError) || err.type !== 'rate_limited') return;
  if (err.metadata.reason !== 'tpm' && err.metadata.reason !== 'team_tpm') return;
  const seconds = err.metadata.retry_after_seconds;
  if (typeof seconds === 'number' && !res.headersSent) res.setHeader('Retry-After', String(seconds));
}

import { requestIdOf } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { Recall } from '../auth/recall';
import type { BodyCapture } from '../bodies/capture';
import type { ProxyRequest, ProxyResponse } from '../http/types';
import type { SpendGuard } from '../spend/guard';
import { Completion } from './completion';
import type { TokenEstimator, UsageSink } from './completion-init';
import type { CompletionSlots } from './concurrency';
import { DEFAULT_MAX_IMAGES, requestMedia } from './media';
import { type Plan, worstCase, worstTokens } from './plan';
import { admissionPromptTokens } from './prompt-bound';

const X_TITLE_MAX = 200;
const HTTP_REFERER_MAX = 500;

/** What admission needs (a part of PipelineDeps, pipeline.ts). */
export interface AdmitDeps {
  guard: SpendGuard;
  sink: UsageSink;
  estimator: TokenEstimator;
  /** Per-key and per-account caps on completions in flight in this process. */
  concurrency: CompletionSlots;
  /** Longest a completion may run (then 504 timeout). */
  maxDurationMs: number;
  /** How long a completion whose client went away keeps reading the provider for its usage (drain.ts). */
  cancelDrainMs?: number;
  /** Most image parts one request may carry (MAX_IMAGES_PER_REQUEST; default DEFAULT_MAX_IMAGES). */
  maxImages?: number;
  logger: Logger;
}

/** An admitted request: its completion, and the concurrency slot it holds (released by `finish`). */
export interface Admitted {
  completion: Completion;
  release: () => void;
}

interface CompletionLocals {
  completion?: Completion;
  /** performance.now() when the request arrived (the door's, or express's `track`). */
  metricsStart?: number;
}

/**
 * Hoisted: the client going away cancels the completion: it drains the provider's answer for its
 * usage when a provider holds the request (drain.ts), else the request is aborted.
 */
function onResponseClose(this: ProxyResponse): void {
  const c = (this.locals as CompletionLocals).completion;
  if (c && !this.writableFinished) c.cancel();
}

/**
 * Stage 3, admit: the usage record can be kept (broker or spool), a concurrency slot of the key and
 * its account, then the spend admission (one Lua call: the worst case of the plan against the key's
 * limit and the account's credits, reserved as a lease; a recalled key record is checked and counted
 * in the same call, auth/recall.ts). Returns the running `Completion` (its duration cap started),
 * keeping `bodies` (the opt-in capture of the caller's body, made before parse) for its record.
 */
export async function admit(
  deps: AdmitDeps,
  req: ProxyRequest,
  res: ProxyResponse,
  p: Plan,
  key: CachedKey,
  recall: Recall | null,
  bodies: BodyCapture | null,
): Promise<Admitted> {
  // Its images and documents, priced per candidate by the catalog's bounds (400 past MAX_IMAGES_PER_REQUEST).
  const media = requestMedia(
    p.request.messages,
    deps.maxImages ?? DEFAULT_MAX_IMAGES,
    p.request.cacheWrite,
    p.request.nativeMedia,
  );
  // Never serve a request whose usage event could be neither confirmed nor spooled to disk.
  if (deps.sink.canAdmit && !deps.sink.canAdmit()) {
    throw new AppError(
      'service_unavailable',
      'Usage recording is unavailable (message broker and disk spool are both unavailable); retry shortly',
    );
  }
  const slot = deps.concurrency.acquire(key.id, key.accountId);
  if (typeof slot !== 'function') {
    throw new AppError(
      'rate_limited',
      `Too many concurrent completions for this ${slot.scope} (at most ${slot.limit} at a time); retry when one finishes`,
      { limit: slot.limit, reason: 'concurrency', scope: slot.scope },
    );
  }
  // Released here when the response closes before the completion exists, else by `finish`.
  res.once('close', slot);

  const requestId = requestIdOf(res);
  res.setHeader('X-Generation-Id', requestId);
  const { request } = p;
  if (request.answerHeaders) for (const [name, value] of request.answerHeaders) res.setHeader(name, value);
  let prompt: ReturnType<typeof admissionPromptTokens>;
  let reservation: Awaited<ReturnType<SpendGuard['admit']>>;
  try {
    prompt =
      request.promptTokens === undefined
        ? admissionPromptTokens(request.messages, request.toolsJson, deps.estimator)
        : { tokens: request.promptTokens, exact: request.promptTokens };
    reservation = await deps.guard.admit({
      key,
      worstCaseCostUnits: worstCase(p, prompt.tokens, media),
      // Charged against the key's and its team's tokens per minute (issue 29), when either has one.
      worstCaseTokens:
        key.rateLimitTpm == null && (key.teamId == null || key.teamRateLimitTpm == null)
          ? undefined
          : worstTokens(p, prompt.tokens, media),
      requestId,
      check: recall ? recall.check(key) : undefined,
    });
  } catch (err) {
    tokenRateRetryAfter(res, err);
    throw recall ? recall.admissionFailed(err, slot) : err;
  }

  const first = p.candidates[0] as Plan['candidates'][number];
  const title = req.headers['x-openrouter-title'] ?? req.headers['x-title'];
  const referer = req.headers['http-referer'];
  const c = new Completion(
    {
      requestId,
      key,
      api: p.door.api,
      request,
      model: first.model,
      provider: first.provider,
      upstreamModel: first.upstreamModel,
      app: typeof title === 'string' && title.length > 0 ? headerText(title, X_TITLE_MAX) : null,
      httpReferer:
        typeof referer === 'string' && referer.length > 0 ? headerText(referer, HTTP_REFERER_MAX) : null,
      logger: deps.logger,
      promptEstimate: prompt.exact,
      reservation,
      cancelDrainMs: deps.cancelDrainMs,
      media,
      receivedAt: (res.locals as CompletionLocals).metricsStart,
      bodies,
    },
    deps.guard,
    deps.sink,
    deps.estimator,
  );
  // The client going away cancels the completion (a drain, or an abort when no provider holds it); the
  // metrics read the completion's timings when the response closes (metrics/responses.ts).
  (res.locals as CompletionLocals).completion = c;
  // From here `finish` releases the slot: a completion draining after its client went away (drain.ts)
  // still holds a provider connection, so it keeps counting against its key's and account's caps
  // (else cancel-and-resend would hold every connection of a provider with a few slots).
  res.off('close', slot);
  res.once('close', onResponseClose);
  c.startDeadline(deps.maxDurationMs);
  // A lease that lapsed and no longer fits the limit stops the request (packages/spend, Leases).
  if (reservation) reservation.onLost = (reason) => c.stop(reason);
  return { completion: c, release: slot };
}
