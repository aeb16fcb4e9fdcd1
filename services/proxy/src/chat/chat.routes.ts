import { type Catalog, worstCaseCost } from '@tollgate/catalog';
import { AppError, badRequest, safeText } from '@tollgate/errors';
import { requestIdOf } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticatedKey } from '../auth/authenticate';
import type { SpendGuard } from '../spend/guard';
import { parseChatRequest } from './chat.validation';
import { Completion, type TokenEstimator, type UsageSink } from './completion';
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
  logger: Logger;
}

const X_TITLE_MAX = 200;
/** `newRequestId()` with the CSPRNG call amortised over 256 ids (same format). */

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
    const route = model.providers[0];
    if (!route)
      throw new AppError('service_unavailable', `model: '${chat.model}' has no provider configured`);

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
    const prompt = admissionPromptTokens(chat.messages, estimator);
    const reservation = await guard.admit({
      key,
      worstCaseCostUnits: worstCaseCost(model, prompt.tokens, {
        maxTokens: chat.maxTokens ?? undefined,
        n: chat.n,
      }),
      requestId,
    });

    const title = req.headers['x-title'];
    const c = new Completion(
      {
        requestId,
        key,
        chat,
        model,
        provider: route.provider,
        upstreamModel: route.upstreamModel,
        app: typeof title === 'string' && title.length > 0 ? safeText(title, X_TITLE_MAX) : null,
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

    // Only the wire format's documented fields reach the provider (request-fields.ts).
    const body = upstreamFields(chat.body, route.provider);
    chat.body = body;
    body.model = route.upstreamModel;
    if (chat.stream) {
      body.stream_options = {
        ...((body.stream_options as object | null | undefined) ?? {}),
        include_usage: true,
      };
      await relayStream(c, res);
    } else {
      await relayJson(c, res);
    }
  }

  /** Request start → provider response; errors before any byte are ordinary HTTP errors. */
  async function send(c: Completion) {
    const target = upstreams.target(c.provider);
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

  async function relayJson(c: Completion, res: Response): Promise<void> {
    let up: Awaited<ReturnType<typeof send>>;
    try {
      up = await send(c);
    } catch (err) {
      if (c.cancelled || (isAbortError(err) && !c.timedOut)) return endCancelledEarly(c);
      c.end(null, 'estimated', 0n);
      throw failureOf(c, err);
    }
    c.markFirstByte();
    let text: string;
    try {
      if (up.statusCode < 200 || up.statusCode >= 300) {
        const errorText = await readSome(up.body);
        c.end(null, 'estimated', 0n);
        throw refusal(c, up.statusCode, errorText);
      }
      text = await up.body.text();
    } catch (err) {
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
    json.usage = completeUsage(providerUsage, tokens, cost);
    if (!c.cancelled) {
      const out = JSON.stringify(json);
      res.writeHead(200, JSON_HEAD).end(out);
    }
    c.end(tokens, fromProvider ? 'provider' : 'estimated', cost);
  }

  async function relayStream(c: Completion, res: Response): Promise<void> {
    const relay = new StreamRelay(c, res, deps.streamWriteTimeoutMs);
    relay.startKeepAlive(keepAliveIntervalMs);
    let up: Awaited<ReturnType<typeof send>>;
    try {
      up = await send(c);
    } catch (err) {
      relay.stopKeepAlive();
      if (c.cancelled || (isAbortError(err) && !c.timedOut)) return endCancelledEarly(c);
      return refuseStream(c, res, failureOf(c, err));
    }
    if (up.statusCode < 200 || up.statusCode >= 300) {
      relay.stopKeepAlive();
      const errorText = await readSome(up.body);
      return refuseStream(c, res, refusal(c, up.statusCode, errorText));
    }
    writeSseHead(res);
    try {
      for await (const bytes of up.body) {
        c.markFirstByte();
        await relay.push(bytes as Uint8Array);
        if (relay.terminated) break;
      }
      if (!relay.terminated) relay.endOfInput();
    } catch (err) {
      if (c.timedOut || !(c.cancelled || isAbortError(err))) relay.fail(completionErrorOf(failureOf(c, err)));
    } finally {
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
