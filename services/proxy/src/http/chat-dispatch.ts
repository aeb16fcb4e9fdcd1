import type { IncomingMessage, ServerResponse } from 'node:http';
import { internalErrorEnvelope } from '@tollgate/errors';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_FIELD, toAppError, withRequestId } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { FrontDoor } from '../doors/door';
import type { Handler, ProxyRequest, ProxyResponse } from './types';

/**
 * `POST /api/v1/chat/completions` and `POST /v1/chat/completions` served straight from the node:http
 * request listener, before express (issue 11: express's app and router walk, its prototype swaps and
 * its per-request closures were paid by every completion). Every other request — other methods on
 * these paths included, and spellings express also routes to the chat route (other letter case, a
 * trailing slash, an absolute-form URL) — goes to express, which mounts the very same steps, so the
 * answers are the same either way:
 *
 *   in-flight count (+ `connection: close` while draining) → `gen-…` request id (`x-request-id`
 *   header, async context for the service client, `requestId` in logs) → metrics (`route` = chat) →
 *   authentication (recall) → inference scope → JSON body → the chat handler; any error → the
 *   envelope, exactly as the express error handler writes it.
 */
export interface ChatDispatch {
  /** True for a request this dispatch serves (then `serve` it, else hand it to express). */
  matches(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): void;
}

/** What the app shares with both ways in (express and this dispatch). */
export interface EdgeState {
  inFlight: number;
  draining: boolean;
}

const API_PATH = '/api/v1/chat/completions';
const SHORT_PATH = '/v1/chat/completions';

/** The path part of a request target that is exactly one of the two chat paths, with or without a query. */
function isChatTarget(url: string | undefined): boolean {
  if (url === undefined) return false;
  if (url === API_PATH || url === SHORT_PATH) return true;
  const q = url.indexOf('?');
  return (
    (q === API_PATH.length && url.startsWith(API_PATH)) ||
    (q === SHORT_PATH.length && url.startsWith(SHORT_PATH))
  );
}

const pathOf = (url: string | undefined): string => {
  const u = url ?? '';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
};

/**
 * `res.locals` of a chat request: every field the steps use (metrics, authentication, the chat
 * handler), declared up front so they all share one object shape (express's `locals` is a
 * null-prototype dictionary).
 */
class ChatLocals {
  route = 'chat';
  key: CachedKey | undefined = undefined;
  unchecked: string | undefined = undefined;
  completion: unknown = undefined;
  constructor(
    readonly requestId: string,
    readonly metricsStart: number,
  ) {}
}

/** The express error handler's answer (`@tollgate/http` errorHandler), for a response express never saw. */
function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function createChatDispatch(deps: {
  state: EdgeState;
  logger: Logger;
  newId: () => string;
  /** The access line at debug (`request finished`), like requestContext's `accessLog: 'debug'`. */
  accessLog: boolean;
  metrics: { responseClosed(res: { locals: object; statusCode: number }): void };
  /** The steps after the request context, in order (authentication, scope, body, the chat handler). */
  steps: readonly Handler[];
  /** The door's error envelope (FrontDoor.errorBody). */
  errorBody: FrontDoor['errorBody'];
}): ChatDispatch {
  const { state, logger, newId, metrics, steps } = deps;
  const logAccess = deps.accessLog && logger.isLevelEnabled('debug');

  const requestLog = (res: ProxyResponse): Logger =>
    logger.child({ [REQUEST_ID_LOG_FIELD]: (res.locals as ChatLocals).requestId });

  // Hoisted listeners: one function for every response, state read from the response.
  function onClose(this: ProxyResponse): void {
    state.inFlight--;
    metrics.responseClosed(this);
  }
  function onFinish(this: ProxyResponse): void {
    const locals = this.locals as ChatLocals;
    requestLog(this).debug(
      {
        method: this.req.method,
        path: pathOf(this.req.url),
        status: this.statusCode,
        ms: Math.round(performance.now() - locals.metricsStart),
      },
      'request finished',
    );
  }

  /** The express error handler (`@tollgate/http` errorHandler) for this route. */
  function fail(req: ProxyRequest, res: ProxyResponse, err: unknown): void {
    const appError = toAppError(err);
    if (res.headersSent) {
      requestLog(res).error({ err, path: pathOf(req.url) }, 'error after response started');
      res.destroy();
      return;
    }
    if (appError) {
      const { status, body } = deps.errorBody(appError);
      sendJson(res, status, body);
      return;
    }
    requestLog(res).error({ err }, 'unhandled error');
    sendJson(res, 500, internalErrorEnvelope());
  }

  /** Runs step `i` and, when it calls `next()`, the next one (a sync throw or a rejection fails like next(err)). */
  function run(req: ProxyRequest, res: ProxyResponse, i: number): void {
    const step = steps[i];
    if (step === undefined) return;
    let called = false;
    const next = (err?: unknown) => {
      if (called) return;
      called = true;
      if (err) fail(req, res, err);
      else run(req, res, i + 1);
    };
    try {
      const ret = step(req, res, next);
      if (ret !== undefined) ret.catch((err: unknown) => next(err ?? new Error('Rejected promise')));
    } catch (err) {
      next(err);
    }
  }

  function start(req: ProxyRequest, res: ProxyResponse): void {
    run(req, res, 0);
  }

  return {
    matches: (req) => req.method === 'POST' && isChatTarget(req.url),
    serve(req, res) {
      const r = res as ProxyResponse;
      state.inFlight++;
      r.on('close', onClose);
      if (state.draining) r.setHeader('connection', 'close');
      // Never the client's id: it becomes the generation id.
      const requestId = newId();
      r.setHeader(REQUEST_ID_HEADER, requestId);
      r.locals = new ChatLocals(requestId, performance.now());
      if (logAccess) r.once('finish', onFinish);
      withRequestId(requestId, start, req as ProxyRequest, r);
    },
  };
}
