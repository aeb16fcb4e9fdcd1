import { type Catalog, worstCaseCost } from '@tollgate/catalog';
import { AppError, badRequest, safeText } from '@tollgate/errors';
import { requestIdOf } from '@tollgate/http';
import { allowsModel } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Dispatcher } from 'undici';
import { authenticatedKey } from '../auth/authenticate';
import {
  buildMessagesRequest,
  classifyHttpError,
  MessagesSseBridge,
  readMessage,
} from '../providers/anthropic';
import { type Candidate, routeOf } from '../routing/candidates';
import type { KeyRing, ProviderHealth } from '../routing/health';
import { backoffMs, failsOver, keyRejected, retryAfterMs } from '../routing/policy';
import type { SpendGuard } from '../spend/guard';
import { parseChatRequest } from './chat.validation';
import { type Attempt, Completion, type TokenEstimator, type UsageSink } from './completion';
import type { KeyConcurrency } from './concurrency';
import { admissionPromptTokens } from './prompt-bound';
import { upstreamFields } from './request-fields';
import { completionErrorOf, errorChunk, StreamRelay, writeSseHead } from './stream-relay';
import {
  acquireUpstream,
  isAbortError,
  readSome,
  transportError,
  type Upstreams,
  upstreamHttpError,
} from './upstream';
import { completeUsage, isProviderUsage, messageText, tokensFromUsage } from './usage';

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
  /** Per-key cap on completions in flight in this process. */
  concurrency: KeyConcurrency;
  /** Failover bounds, provider health and key rotation (services/proxy/src/routing). */
  routing: { maxAttempts: number; deadlineMs: number; health: ProviderHealth; keys: KeyRing };
  logger: Logger;
  /** Completions in flight (the shutdown deadline stops them with the error chunk, see app.ts). */
  live?: Set<Completion>;
}

const X_TITLE_MAX = 200;
const HTTP_REFERER_MAX = 500;
/** `newRequestId()` with the CSPRNG call amortised over 256 ids (same format). */

/** A provider's answer; `errorText` is its body when routing already read it (an error answer). */
type UpstreamResponse = Dispatcher.ResponseData & { errorText?: string };

/** What a completion may be dispatched to, and the request as the caller sent it. */
interface Dispatch {
  plan: Candidate[];
  original: Record<string, unknown>;
  /** The Anthropic Messages body (model filled in per candidate), when a candidate speaks it. */
  messages: Record<string, unknown> | null;
  res: Response;
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
  if (c && !this.writableFinished) {
    c.cancelled = true;
    c.abort.abort();
  }
}
const JSON_HEAD = { 'content-type': 'application/json; charset=utf-8' };

/** POST /chat/completions: validate, admit, forward, relay (JSON or SSE), settle, publish. */
export function chatCompletionsHandler(deps: ChatDeps): RequestHandler {
  const { catalog, upstreams, guard, sink, estimator, keepAliveIntervalMs, logger, concurrency } = deps;

  async function handle(req: Request, res: Response): Promise<void> {
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
    // Anthropic candidates get the translated body, built once before admission: a request it cannot
    // express (n > 1, audio parts, …) skips them, and is a 400 when no other candidate is left.
    const { plan, messages } = anthropicPlan(routed, chat.body);
    const first = plan[0] as Candidate;

    // Never serve a request whose usage event could be neither confirmed nor spooled to disk.
    if (sink.canAdmit && !sink.canAdmit()) {
      throw new AppError(
        'service_unavailable',
        'Usage recording is unavailable (message broker and disk spool are both unavailable); retry shortly',
      );
    }
    const slot = concurrency.acquire(key.id);
    if (!slot) {
      throw new AppError(
        'rate_limited',
        `Too many concurrent completions for this key (at most ${concurrency.limit} at a time); retry when one finishes`,
        { limit: concurrency.limit, reason: 'concurrency' },
      );
    }
    res.once('close', slot);

    const requestId = requestIdOf(res);
    res.setHeader('X-Generation-Id', requestId);
    const prompt = admissionPromptTokens(chat.messages, chat.toolsJson, estimator);
    // The dearest candidate that may serve bounds what the request can cost.
    let worst = 0n;
    for (const cand of plan) {
      const w = worstCaseCost(cand.model, prompt.tokens, {
        maxTokens: chat.maxTokens ?? undefined,
        n: chat.n,
      });
      if (w > worst) worst = w;
    }
    const reservation = await guard.admit({ key, worstCaseCostUnits: worst, requestId });

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

    const original = chat.body;
    const attempt: Dispatch = { plan, original, messages, res };
    deps.live?.add(c);
    try {
      if (chat.stream) await relayStream(c, res, attempt);
      else await relayJson(c, res, attempt);
    } finally {
      deps.live?.delete(c);
    }
  }

  /** The candidates to try, circuit-open providers skipped while another candidate exists. */
  function candidatesOf(route: ReturnType<typeof routeOf>): Candidate[] {
    const all = route.allowFallbacks ? route.candidates : route.candidates.slice(0, 1);
    const usable = all.filter((c) => deps.routing.health.available(c.provider.name));
    return usable.length > 0 ? usable : all;
  }

  /**
   * The Messages body for the plan's Anthropic candidates (null when there are none), and the plan
   * without them when the request cannot be translated (the adapter's 400 when nothing else is left).
   */
  function anthropicPlan(
    plan: Candidate[],
    body: Record<string, unknown>,
  ): { plan: Candidate[]; messages: Record<string, unknown> | null } {
    if (!plan.some((cand) => cand.provider.format === 'anthropic')) return { plan, messages: null };
    try {
      return { plan, messages: buildMessagesRequest(body, { model: '' }) };
    } catch (err) {
      const others = plan.filter((cand) => cand.provider.format !== 'anthropic');
      if (others.length === 0 || !(err instanceof AppError)) throw err;
      return { plan: others, messages: null };
    }
  }

  /** Points the completion at `cand` and builds its upstream body (documented fields only). */
  function aim(c: Completion, cand: Candidate, d: Dispatch): void {
    c.model = cand.model;
    c.provider = cand.provider;
    c.upstreamModel = cand.upstreamModel;
    if (cand.provider.format === 'anthropic' && d.messages) {
      // Anthropic Messages body (providers/anthropic): no OpenAI-only fields such as stream_options.
      const body: Record<string, unknown> = { ...d.messages, model: cand.upstreamModel };
      // Without a caller's max_tokens, the adapter's default stays within the model's output cap
      // (what the admission worst case assumed).
      const cap = cand.model.maxOutputTokens;
      const unbounded = d.original.max_tokens == null && d.original.max_completion_tokens == null;
      if (unbounded && cap !== undefined && (body.max_tokens as number) > cap) body.max_tokens = cap;
      if (cand.provider.simulator && d.original.sim !== undefined) body.sim = d.original.sim;
      c.chat.body = body;
      return;
    }
    const original = d.original;
    // Only the wire format's documented fields reach the provider (request-fields.ts).
    const body = upstreamFields(original, cand.provider);
    body.model = cand.upstreamModel;
    if (c.chat.stream) {
      body.stream_options = {
        ...((body.stream_options as object | null | undefined) ?? {}),
        include_usage: true,
      };
    }
    c.chat.body = body;
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
      const record = (status: number | null, outcome: string) =>
        c.attempts.push({
          provider: cand.provider.name,
          model: cand.model.id,
          status,
          outcome,
          latency_ms: Date.now() - started,
        } satisfies Attempt);
      let up: UpstreamResponse;
      try {
        up = await send(c, apiKey);
      } catch (err) {
        c.release?.();
        c.release = null;
        if (c.cancelled || isAbortError(err) || c.timedOut) throw err;
        const e = failureOf(c, err);
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
      let errorText: string | null = null;
      let over = failsOver(up.statusCode);
      if (!over && up.statusCode === 400 && cand.provider.format === 'anthropic') {
        // Anthropic's 400 `billing_error` is our account's problem, not the caller's: read the body.
        errorText = await readSome(up.body);
        over = classifyHttpError(up.statusCode, errorText).failover;
      }
      if (!over) {
        health.success(cand.provider.name);
        record(up.statusCode, up.statusCode < 300 ? 'ok' : `http_${up.statusCode}`);
        return errorText === null ? up : Object.assign(up, { errorText });
      }
      errorText ??= await readSome(up.body);
      c.release?.();
      c.release = null;
      lastRetryAfter = retryAfterMs(up.headers['retry-after']);
      if (keyRejected(up.statusCode) && apiKey) {
        keys.reject(apiKey, lastRetryAfter);
        rejectedKeys.add(apiKey);
      }
      health.failure(cand.provider.name);
      record(up.statusCode, `http_${up.statusCode}`);
      last = refusal(c, up.statusCode, errorText);
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
    if (c.upstreamStartedAt === 0) c.upstreamStartedAt = performance.now();
    c.release = acquireUpstream(target, c.provider.name);
    return target.pool.request({
      method: 'POST',
      path: target.path,
      headers: target.headers,
      body: JSON.stringify(c.chat.body),
      signal: c.abort.signal,
    });
  }

  /** The gateway error for a failed upstream call: capacity (503), the duration cap (504), transport. */
  function failureOf(c: Completion, err: unknown): AppError {
    if (err instanceof AppError) return err;
    if (c.stopReason) return c.stopReason;
    if (c.timedOut) {
      return new AppError(
        'timeout',
        `Completion exceeded the gateway's maximum duration of ${Math.round(deps.maxDurationMs / 1000)} s`,
        { provider_name: c.provider.name },
      );
    }
    return transportError(err, c.provider.name);
  }

  /** A provider's error response: the summary for the client; its own text goes to the log only. */
  function refusal(c: Completion, status: number, errorText: string): AppError {
    const { error, detail } = upstreamHttpError(status, errorText, c.provider.name);
    c.log.warn({ provider: c.provider.name, upstreamStatus: status, detail }, 'provider refused the request');
    return error;
  }

  /** Cancelled before the provider answered: the prompt was sent, bill its estimate. */
  function endCancelledEarly(c: Completion): void {
    const tokens = c.estimate('');
    c.end(tokens, 'estimated', c.cost(tokens));
  }

  async function relayJson(c: Completion, res: Response, d: Dispatch): Promise<void> {
    let up: UpstreamResponse;
    try {
      up = await dispatch(c, d);
    } catch (err) {
      if (c.cancelled || (isAbortError(err) && !c.timedOut)) return endCancelledEarly(c);
      c.end(null, 'estimated', 0n);
      throw failureOf(c, err);
    }
    c.markFirstByte();
    let text: string;
    try {
      if (up.statusCode < 200 || up.statusCode >= 300) {
        const errorText = up.errorText ?? (await readSome(up.body));
        c.end(null, 'estimated', 0n);
        throw refusal(c, up.statusCode, errorText);
      }
      text = await up.body.text();
      c.markUpstreamEnd();
    } catch (err) {
      c.markUpstreamEnd();
      if (err instanceof AppError) throw err;
      if (c.cancelled || (isAbortError(err) && !c.timedOut)) return endCancelledEarly(c);
      // The provider accepted the request and broke off while sending the answer: it did work.
      const e = failureOf(c, err);
      c.error = completionErrorOf(e);
      endCancelledEarly(c);
      throw e;
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
      if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('not an object');
      if (c.provider.format === 'anthropic') {
        // An Anthropic Message → the chat.completion (and OpenAI-shaped usage) priced below.
        const read = readMessage(json, { model: c.model.id, created: Math.floor(c.startedAt / 1000) });
        if (!read) throw new Error('not a Message');
        json = read;
      }
    } catch {
      const e = new AppError('provider_error', `Provider ${c.provider.name} returned an invalid response`, {
        provider_name: c.provider.name,
      });
      c.error = completionErrorOf(e);
      endCancelledEarly(c);
      throw e;
    }
    const providerUsage = json.usage;
    const fromProvider = isProviderUsage(providerUsage);
    const tokens = fromProvider ? tokensFromUsage(providerUsage) : c.estimate(messageText(json));
    const cost = c.cost(tokens);
    c.upstreamId = typeof json.id === 'string' ? json.id : null;
    const choices = Array.isArray(json.choices) ? (json.choices as { finish_reason?: unknown }[]) : [];
    const reason = choices.find((ch) => typeof ch?.finish_reason === 'string')?.finish_reason;
    c.finishReason = typeof reason === 'string' ? reason : null;
    json.id = c.requestId;
    json.model = c.model.id;
    json.provider = c.provider.name;
    json.usage = completeUsage(providerUsage, tokens, cost);
    const out = JSON.stringify(json);
    // The usage event first (sent, or written to the spool), then the answer: a process killed in
    // between bills an answer nobody saw rather than serving one nobody bills.
    c.end(tokens, fromProvider ? 'provider' : 'estimated', cost);
    if (!c.cancelled) res.writeHead(200, JSON_HEAD).end(out);
  }

  async function relayStream(c: Completion, res: Response, d: Dispatch): Promise<void> {
    const relay = new StreamRelay(c, res, deps.streamWriteTimeoutMs);
    relay.startKeepAlive(keepAliveIntervalMs);
    let up: UpstreamResponse;
    try {
      up = await dispatch(c, d);
    } catch (err) {
      relay.stopKeepAlive();
      if (c.cancelled || (isAbortError(err) && !c.timedOut)) return endCancelledEarly(c);
      return refuseStream(c, res, failureOf(c, err));
    }
    if (up.statusCode < 200 || up.statusCode >= 300) {
      relay.stopKeepAlive();
      const errorText = up.errorText ?? (await readSome(up.body));
      return refuseStream(c, res, refusal(c, up.statusCode, errorText));
    }
    writeSseHead(res);
    // Anthropic events are translated into the OpenAI chunks the relay reads (providers/anthropic).
    const bridge =
      c.provider.format === 'anthropic'
        ? new MessagesSseBridge(c.model.id, Math.floor(c.startedAt / 1000))
        : null;
    try {
      for await (const bytes of up.body) {
        c.markFirstByte();
        if (bridge) {
          const text = bridge.push(bytes as Uint8Array);
          if (text.length > 0) await relay.push(Buffer.from(text));
        } else await relay.push(bytes as Uint8Array);
        if (relay.terminated) break;
      }
      if (bridge && !relay.terminated) {
        const text = bridge.end();
        if (text.length > 0) await relay.push(Buffer.from(text));
      }
      if (!relay.terminated) relay.endOfInput();
    } catch (err) {
      if (c.timedOut || !(c.cancelled || isAbortError(err))) relay.fail(completionErrorOf(failureOf(c, err)));
    } finally {
      c.markUpstreamEnd();
      if (relay.terminated) up.body.destroy();
    }
    relay.finish();
  }

  /**
   * The provider refused the request before producing anything: nothing is billed, no event. If the
   * 200 was already committed (keep-alive comments during a slow start), the refusal becomes the
   * §6 error chunk; otherwise it is an ordinary HTTP error.
   */
  function refuseStream(c: Completion, res: Response, err: AppError): void {
    c.end(null, 'estimated', 0n);
    if (!res.headersSent) throw err;
    if (!res.writableEnded && !res.destroyed) {
      res.end(`data: ${errorChunk(completionErrorOf(err), c.provider.name)}\n\ndata: [DONE]\n\n`);
    }
  }

  return (req: Request, res: Response, next: NextFunction) => {
    handle(req, res).catch(next);
  };
}
