import { type Catalog, worstCaseCost } from '@tollgate/catalog';
import { AppError, badRequest, safeText } from '@tollgate/errors';
import { requestIdOf } from '@tollgate/http';
import { allowsModel, type CachedKey, type KeyCache } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { Dispatcher } from 'undici';
import { authenticatedKey, rateLimitVerdict, uncheckedDigest } from '../auth/authenticate';
import type {
  Next as NextFunction,
  ProxyRequest as Request,
  Handler as RequestHandler,
  ProxyResponse as Response,
} from '../http/types';
import { attemptRequest, wireFormatOf } from '../providers';
import { isProviderUsage, tokensFromUsage } from '../providers/openai/usage';
import type { ClassifiedHttpError, WireFormatName } from '../providers/wire-format';
import { type Candidate, routeOf } from '../routing/candidates';
import type { KeyRing, ProviderHealth } from '../routing/health';
import { backoffMs, retryAfterMs } from '../routing/policy';
import { KeyRateLimited, type SpendCheck, type SpendGuard, StaleKeyRecord } from '../spend/guard';
import { acquireUpstream, isAbortError, readSome, type Upstreams } from '../upstream/upstream';
import { parseChatRequest } from './chat.validation';
import { Completion, type Outcome, type TokenEstimator, type UsageSink } from './completion';
import type { CompletionSlots } from './concurrency';
import { DONE_EVENT, errorEvent, finishReasonOf, invalidResponse } from './errors';
import { admissionPromptTokens } from './prompt-bound';
import { StreamRelay, writeSseHead } from './stream-relay';
import { completeUsage, messageText } from './usage';

export interface ChatDeps {
  catalog: Catalog;
  upstreams: Upstreams;
  guard: SpendGuard;
  sink: UsageSink;
  estimator: TokenEstimator;
  keepAliveIntervalMs: number;
  /** A streaming client that does not read for this long is cut (billed for what was produced). */
  streamWriteTimeoutMs: number;
  /** Longest a completion may run (then 504 timeout). */
  maxDurationMs: number;
  /** Per-key and per-account caps on completions in flight in this process. */
  concurrency: CompletionSlots;
  /** Failover bounds, provider health and key rotation (services/proxy/src/routing). */
  routing: { maxAttempts: number; deadlineMs: number; health: ProviderHealth; keys: KeyRing };
  logger: Logger;
  /** Completions in flight (the shutdown deadline stops them with the error chunk, see app.ts). */
  live?: Set<Completion>;
  /**
   * Checked admission of recalled key records (auth/authenticate.ts `recall`): the key cache's
   * layout for the check, and the way back when it fails — forget the record, authenticate afresh.
   */
  recalled?: {
    keyCache: KeyCache;
    forget(digest: string): void;
    /** Records the key's use (`last_used_at`) once its recalled record was checked. */
    used(keyId: string): void;
    /** The chat route's authentication as if nothing was recalled (401/403/429 thrown). */
    reauthenticate(req: Request, res: Response): Promise<void>;
    now(): number;
  };
}

/** A request whose key record was recalled: checked by its admission, or not yet. */
interface Recall {
  digest: string;
  /** The admission script found the record current (the request is authenticated and counted). */
  verified: boolean;
  /** Its 429 when the script counted it over the key's rate limit. */
  limited: AppError | null;
}

const X_TITLE_MAX = 200;
const HTTP_REFERER_MAX = 500;
/** `newRequestId()` with the CSPRNG call amortised over 256 ids (same format). */

/** A provider's answer; `refusal` is its error answer classified by its wire format (non-2xx). */
type UpstreamResponse = Dispatcher.ResponseData & { refusal?: ClassifiedHttpError };

type Json = Record<string, unknown>;

/** What a completion may be dispatched to, and the request as the caller sent it. */
interface Dispatch {
  plan: Candidate[];
  original: Json;
  /** The request in each wire format of the plan (WireFormat.prepare; the model is filled in per candidate). */
  prepared: Partial<Record<WireFormatName, Json>>;
  res: Response;
}

/**
 * True when a provider body has received its end and holds nothing more: the chunk just read from it
 * was its last (the provider's end came in the same read). Reads the stream's state (false if that is
 * ever unavailable: then the chunk is simply written on its own, as any other).
 */
function endedWith(body: unknown): boolean {
  const state = (body as { _readableState?: { ended?: unknown; length?: unknown } })._readableState;
  return state?.ended === true && state.length === 0;
}

/** Resolves after `ms`, or at once when the request is aborted. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

interface CompletionLocals {
  completion?: Completion;
}

/** Hoisted: the client going away aborts the upstream request (and whatever the relay waits for). */
function onResponseClose(this: Response): void {
  const c = (this.locals as CompletionLocals).completion;
  if (c && !this.writableFinished) c.cancel();
}
const JSON_HEAD = { 'content-type': 'application/json; charset=utf-8' };
const CANCELLED: Outcome = Object.freeze({ kind: 'cancelled' });
/** A relay that threw (a bug): ended like a broken answer, so the completion still ends once. */
const UNFINISHED: Outcome = Object.freeze({
  kind: 'failed',
  error: new AppError('internal', 'Internal server error'),
});

/** POST /chat/completions: validate, admit, forward, relay (JSON or SSE), settle, publish. */
export function chatCompletionsHandler(deps: ChatDeps): RequestHandler {
  const { catalog, upstreams, guard, sink, estimator, keepAliveIntervalMs, logger, concurrency } = deps;

  /**
   * A request whose key record was recalled (no Redis read yet) runs with that record; its admission
   * checks it. Should that check find it stale, or anything fail before the check ran, the request
   * is authenticated afresh first, so it ends exactly as without the recall (401 for a key disabled
   * meanwhile, 400 for a bad body of a valid key, …); a stale record is then served with the new one.
   */
  async function handleRecalled(req: Request, res: Response, digest: string): Promise<void> {
    const recall: Recall = { digest, verified: false, limited: null };
    const recalled = deps.recalled;
    const used = authenticatedKey(res);
    try {
      await handle(req, res, recall);
    } catch (err) {
      if (recall.verified || !recalled) throw err;
      recalled.forget(digest);
      (res.locals as { unchecked?: string }).unchecked = undefined;
      await recalled.reauthenticate(req, res);
      // The record changed (its allowed models, limit, …): the request is decided again with the new one.
      if (err instanceof StaleKeyRecord || authenticatedKey(res).version !== used.version) {
        await handle(req, res, null);
        return;
      }
      throw err;
    }
  }

  /** The admission's check of a recalled record (rate-limit headers set once it counted the request). */
  function checkOf(res: Response, recall: Recall, key: CachedKey): SpendCheck {
    const recalled = deps.recalled as NonNullable<ChatDeps['recalled']>;
    const now = recalled.now();
    const window = recalled.keyCache.rateWindow(recall.digest, now);
    return {
      recordKey: recalled.keyCache.redisKey(recall.digest),
      version: key.version,
      counterKey: window.counterKey,
      counterTtlMs: window.counterTtlMs,
      rateLimit: key.rateLimitRpm ?? null,
      onCount(count) {
        recall.verified = true;
        recalled.used(key.id);
        recall.limited = rateLimitVerdict(res, key, { count, windowEndMs: window.windowEndMs }, now);
      },
    };
  }

  async function handle(req: Request, res: Response, recall: Recall | null): Promise<void> {
    const key = authenticatedKey(res);
    const chat = parseChatRequest(req.body);
    const model = catalog.model(chat.model);
    if (!model) throw badRequest(`model: '${chat.model}' is not a model of this gateway (see GET /models)`);
    if (!allowsModel(key, model.id)) {
      throw new AppError(
        'forbidden',
        `model: this key may not use '${model.id}' (its allowed_models: ${(key.allowedModels ?? []).join(', ')})`,
        { model: model.id },
      );
    }
    // Fallback models outside the key's allow-list are never tried (the requested model is allowed).
    const route = routeOf(catalog, model, chat.body);
    const routed = candidatesOf({
      ...route,
      candidates: route.candidates.filter((c) => allowsModel(key, c.model.id)),
    });
    // Each wire format of the plan translates the request once, before admission: a request one cannot
    // express (Anthropic: n > 1, audio parts, …) skips its candidates, and is a 400 when none is left.
    const { plan, prepared } = preparePlan(routed, chat.body);
    const first = plan[0] as Candidate;

    // Never serve a request whose usage event could be neither confirmed nor spooled to disk.
    if (sink.canAdmit && !sink.canAdmit()) {
      throw new AppError(
        'service_unavailable',
        'Usage recording is unavailable (message broker and disk spool are both unavailable); retry shortly',
      );
    }
    const slot = concurrency.acquire(key.id, key.accountId);
    if (typeof slot !== 'function') {
      throw new AppError(
        'rate_limited',
        `Too many concurrent completions for this ${slot.scope} (at most ${slot.limit} at a time); retry when one finishes`,
        { limit: slot.limit, reason: 'concurrency', scope: slot.scope },
      );
    }
    res.once('close', slot);

    const requestId = requestIdOf(res);
    res.setHeader('X-Generation-Id', requestId);
    let prompt: ReturnType<typeof admissionPromptTokens>;
    let reservation: Awaited<ReturnType<SpendGuard['admit']>>;
    try {
      prompt = admissionPromptTokens(chat.messages, chat.toolsJson, estimator);
      // The dearest candidate that may serve bounds what the request can cost.
      let worst = 0n;
      for (const cand of plan) {
        const w = worstCaseCost(cand.model, prompt.tokens, {
          maxTokens: chat.maxTokens ?? undefined,
          n: chat.n,
        });
        if (w > worst) worst = w;
      }
      reservation = await guard.admit({
        key,
        worstCaseCostUnits: worst,
        requestId,
        check: recall ? checkOf(res, recall, key) : undefined,
      });
    } catch (err) {
      if (err instanceof KeyRateLimited && recall?.limited) throw recall.limited;
      // An unchecked record may be handled again from the start (handleRecalled), with a new slot.
      if (recall && !recall.verified) slot();
      throw err;
    }

    const title = req.headers['x-openrouter-title'] ?? req.headers['x-title'];
    const referer = req.headers['http-referer'];
    const c = new Completion(
      {
        requestId,
        key,
        chat,
        model: first.model,
        provider: first.provider,
        upstreamModel: first.upstreamModel,
        app: typeof title === 'string' && title.length > 0 ? safeText(title, X_TITLE_MAX) : null,
        httpReferer:
          typeof referer === 'string' && referer.length > 0 ? safeText(referer, HTTP_REFERER_MAX) : null,
        logger,
        promptEstimate: prompt.exact,
        reservation,
      },
      guard,
      sink,
      estimator,
    );
    // The client going away aborts the upstream request (and whatever the relay is waiting for).
    (res.locals as CompletionLocals).completion = c;
    res.once('close', onResponseClose);
    c.startDeadline(deps.maxDurationMs);
    // A lease that lapsed and no longer fits the limit stops the request (packages/spend, Leases).
    if (reservation) reservation.onLost = (reason) => c.stop(reason);

    const attempt: Dispatch = { plan, original: chat.body, prepared, res };
    deps.live?.add(c);
    // The one place a completion ends (Completion.finish, exactly once): whatever the relay says,
    // or, should it throw, a failure billed like a broken answer.
    let outcome: Outcome = UNFINISHED;
    try {
      outcome = chat.stream ? await relayStream(c, res, attempt) : await relayJson(c, attempt);
    } finally {
      deps.live?.delete(c);
      c.finish(outcome);
    }
    answer(c, res, outcome);
  }

  /**
   * The end of the answer, written once the completion has ended (its usage event sent or spooled
   * first: a process killed in between bills an answer nobody saw rather than serving one nobody
   * bills). Served: the JSON body, or the stream's last bytes. Refused or failed: an ordinary HTTP
   * error, or, when a stream's 200 was already committed (keep-alive comments during a slow start),
   * the §6 error chunk. A cancelled client gets nothing.
   */
  function answer(c: Completion, res: Response, outcome: Outcome): void {
    if (outcome.kind === 'served') {
      if (outcome.lastBytes === null || res.writableEnded || res.destroyed) return;
      if (c.chat.stream) writeSseHead(res);
      else {
        // A known length instead of chunked framing: head and body leave in one socket write.
        res.setHeader('content-length', Buffer.byteLength(outcome.lastBytes));
        res.writeHead(200, JSON_HEAD);
      }
      res.end(outcome.lastBytes);
      return;
    }
    if (outcome.kind === 'cancelled') return;
    if (!res.headersSent) throw outcome.error;
    if (!res.writableEnded && !res.destroyed) {
      res.end(errorEvent(outcome.error, c.provider.name) + DONE_EVENT);
    }
  }

  /** The candidates to try, circuit-open providers skipped while another candidate exists. */
  function candidatesOf(route: ReturnType<typeof routeOf>): Candidate[] {
    const all = route.allowFallbacks ? route.candidates : route.candidates.slice(0, 1);
    const usable = all.filter((c) => deps.routing.health.available(c.provider.name));
    return usable.length > 0 ? usable : all;
  }

  /**
   * The request in each wire format of the plan, and the plan without the candidates whose format
   * cannot express it (that format's 400 when nothing else is left).
   */
  function preparePlan(plan: Candidate[], body: Json): { plan: Candidate[]; prepared: Dispatch['prepared'] } {
    const prepared: Dispatch['prepared'] = {};
    // Allocated only when a format cannot express the request (rare).
    let failed: WireFormatName[] | null = null;
    let error: unknown = null;
    for (const cand of plan) {
      const name = cand.provider.format;
      if (prepared[name] !== undefined || failed?.includes(name)) continue;
      try {
        prepared[name] = wireFormatOf(name).prepare(body);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        if (failed === null) failed = [];
        failed.push(name);
        error ??= err;
      }
    }
    if (failed === null) return { plan, prepared };
    const skip = failed;
    const rest = plan.filter((cand) => !skip.includes(cand.provider.format));
    if (rest.length === 0) throw error;
    return { plan: rest, prepared };
  }

  /** Points the completion at `cand` with its upstream body (its wire format's, documented fields only). */
  function aim(c: Completion, cand: Candidate, d: Dispatch): void {
    const format = wireFormatOf(cand.provider.format);
    c.aim(cand, format.requestBody(d.prepared[format.name] as Json, cand, d.original, c.chat.stream));
  }

  /**
   * Tries the candidates in order until one answers with something other than a failover status
   * (policy.ts), before any byte reached the client; bounded by `maxAttempts` and one deadline.
   * Returns that answer (2xx, or the caller's own 4xx); throws the last failure when none is left,
   * and rethrows a cancel/abort as it is.
   */
  async function dispatch(c: Completion, d: Dispatch): Promise<UpstreamResponse> {
    const { maxAttempts, deadlineMs, health, keys } = deps.routing;
    const deadline = c.startedAt + deadlineMs;
    const rejectedKeys = new Set<string>();
    let last: AppError | null = null;
    let lastRetryAfter: number | undefined;
    let previous: string | null = null;
    for (let i = 0; i < d.plan.length && i < maxAttempts; i++) {
      const cand = d.plan[i] as Candidate;
      if (i > 0) {
        if (cand.provider.name === previous) {
          // The same provider again (another model or key): back off, honouring Retry-After.
          const wait = Math.min(lastRetryAfter ?? backoffMs(i), deadline - Date.now());
          if (wait > 0) await sleep(wait, c.abort.signal);
        }
        if (Date.now() >= deadline || c.cancelled) break;
      }
      aim(c, cand, d);
      previous = cand.provider.name;
      const apiKey = keys.pick(cand.provider.name, cand.provider.apiKeys, rejectedKeys);
      const started = Date.now();
      health.attempting(cand.provider.name);
      const record = (status: number | null, outcome: string) => c.recordAttempt(status, outcome, started);
      let up: UpstreamResponse;
      try {
        up = await send(c, apiKey);
      } catch (err) {
        c.releaseUpstream();
        if (c.cancelled || isAbortError(err) || c.timedOut) throw err;
        const e = c.failureOf(err);
        // At capacity in this process is not the provider's fault: no health penalty.
        if (e.type !== 'service_unavailable') health.failure(cand.provider.name);
        record(
          null,
          e.type === 'timeout' ? 'timeout' : e.type === 'service_unavailable' ? 'capacity' : 'unreachable',
        );
        last = e;
        lastRetryAfter = undefined;
        continue;
      }
      // An error answer is read (64 KiB at most) and classified by its wire format (failover, key).
      const refused =
        up.statusCode >= 200 && up.statusCode < 300
          ? null
          : wireFormatOf(cand.provider.format).classifyHttpError(
              up.statusCode,
              await readSome(up.body),
              cand.provider.name,
            );
      if (!refused?.failover) {
        health.success(cand.provider.name);
        record(up.statusCode, up.statusCode < 300 ? 'ok' : `http_${up.statusCode}`);
        return refused === null ? up : Object.assign(up, { refusal: refused });
      }
      c.releaseUpstream();
      lastRetryAfter = retryAfterMs(up.headers['retry-after']);
      if (refused.keyRejected && apiKey) {
        keys.reject(apiKey, lastRetryAfter);
        rejectedKeys.add(apiKey);
      }
      health.failure(cand.provider.name);
      record(up.statusCode, `http_${up.statusCode}`);
      last = refusal(c, up.statusCode, refused);
    }
    // A final 429 passes the provider's Retry-After on to the client.
    if (last?.status === 429 && lastRetryAfter !== undefined && !d.res.headersSent) {
      d.res.setHeader('Retry-After', String(Math.ceil(lastRetryAfter / 1000)));
    }
    throw (
      last ??
      new AppError(
        'provider_error',
        `No provider of ${c.model.id} could be tried within the routing deadline`,
        {
          provider_name: c.provider.name,
        },
      )
    );
  }

  /** One attempt: request start → provider response headers. */
  async function send(c: Completion, apiKey: string | undefined): Promise<UpstreamResponse> {
    const target = upstreams.target(c.provider, apiKey);
    c.holdUpstream(acquireUpstream(target, c.provider.name));
    const body = JSON.stringify(c.upstreamBody);
    // The wire format's path and headers for this model and body (Gemini, Azure, Bedrock's signature).
    const { path, headers } = await attemptRequest({
      provider: c.provider,
      upstreamModel: c.upstreamModel,
      stream: c.chat.stream,
      apiKey,
      body,
      base: target,
    });
    return target.pool.request({ method: 'POST', path, headers, body, signal: c.abort.signal });
  }

  /** A provider's error response: the summary for the client; its own text goes to the log only. */
  function refusal(c: Completion, status: number, refused: ClassifiedHttpError): AppError {
    c.log.warn(
      { provider: c.provider.name, upstreamStatus: status, detail: refused.detail },
      'provider refused the request',
    );
    return refused.summary;
  }

  /** The JSON answer: dispatch, read the provider's answer in its wire format, relay it priced. */
  async function relayJson(c: Completion, d: Dispatch): Promise<Outcome> {
    let up: UpstreamResponse;
    try {
      up = await dispatch(c, d);
    } catch (err) {
      if (c.isCancellation(err)) return CANCELLED;
      return { kind: 'refused', error: c.failureOf(err) };
    }
    c.markFirstByte();
    if (up.refusal) return { kind: 'refused', error: refusal(c, up.statusCode, up.refusal) };
    let text: string;
    try {
      text = await up.body.text();
    } catch (err) {
      if (c.isCancellation(err)) return CANCELLED;
      // The provider accepted the request and broke off while sending the answer: it did work.
      return { kind: 'failed', error: c.failureOf(err) };
    } finally {
      c.markUpstreamEnd();
    }
    let json: Json;
    try {
      const parsed = JSON.parse(text) as Json;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error('not an object');
      // The wire format's answer → the chat.completion (and OpenAI-shaped usage) priced below.
      const read = wireFormatOf(c.provider.format).readResponse(parsed, {
        model: c.model.id,
        created: Math.floor(c.startedAt / 1000),
      });
      if (!read) throw new Error('not a completion');
      json = read;
    } catch {
      return { kind: 'failed', error: invalidResponse(c.provider.name) };
    }
    const providerUsage = json.usage;
    const fromProvider = isProviderUsage(providerUsage);
    const tokens = fromProvider ? tokensFromUsage(providerUsage) : c.estimate(messageText(json));
    const cost = c.cost(tokens);
    const upstreamId = typeof json.id === 'string' ? json.id : null;
    json.id = c.requestId;
    json.model = c.model.id;
    json.provider = c.provider.name;
    json.usage = completeUsage(providerUsage, tokens, cost);
    return {
      kind: 'served',
      tokens,
      source: fromProvider ? 'provider' : 'estimated',
      costUnits: cost,
      finishReason: finishReasonOf(json.choices),
      upstreamId,
      lastBytes: c.cancelled ? null : JSON.stringify(json),
    };
  }

  /** The SSE answer: dispatch, then relay the provider's stream (its wire format bridged to OpenAI chunks). */
  async function relayStream(c: Completion, res: Response, d: Dispatch): Promise<Outcome> {
    const relay = new StreamRelay(c, res, deps.streamWriteTimeoutMs);
    relay.startKeepAlive(keepAliveIntervalMs);
    let up: UpstreamResponse;
    try {
      up = await dispatch(c, d);
    } catch (err) {
      relay.stopKeepAlive();
      if (c.isCancellation(err)) return CANCELLED;
      return { kind: 'refused', error: c.failureOf(err) };
    }
    if (up.refusal) {
      relay.stopKeepAlive();
      return { kind: 'refused', error: refusal(c, up.statusCode, up.refusal) };
    }
    relay.commitHead();
    // A wire format other than OpenAI's is translated into the OpenAI chunks the relay reads.
    const bridge = wireFormatOf(c.provider.format).streamBridge({
      model: c.model.id,
      created: Math.floor(c.startedAt / 1000),
    });
    try {
      for await (const bytes of up.body) {
        c.markFirstByte();
        // The provider's end came in the same read: these bytes leave with the answer's end.
        const last = endedWith(up.body);
        if (bridge) {
          const text = bridge.push(bytes as Uint8Array);
          if (text.length > 0) await relay.push(Buffer.from(text), last);
        } else await relay.push(bytes as Buffer, last);
        if (relay.terminated) break;
      }
      if (bridge && !relay.terminated) {
        const text = bridge.end();
        if (text.length > 0) await relay.push(Buffer.from(text));
      }
      if (!relay.terminated) relay.endOfInput();
    } catch (err) {
      // Cut mid-stream, the duration cap or a lapsed lease: the error chunk ends the stream.
      if (c.timedOut || !(c.cancelled || isAbortError(err))) c.fail(c.failureOf(err));
    } finally {
      c.markUpstreamEnd();
      if (relay.terminated) up.body.destroy();
    }
    return relay.finish();
  }

  return (req: Request, res: Response, next: NextFunction) => {
    const digest = deps.recalled ? uncheckedDigest(res) : null;
    (digest === null ? handle(req, res, null) : handleRecalled(req, res, digest)).catch(next);
  };
}
