import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '@tollgate/errors';
import type { RefusalEventV1 } from '@tollgate/events';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_FIELD, toAppError, withRequestId } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { FrontDoor } from '../doors/door';
import { refusalEventOf, refusedKeyOf } from '../pipeline/refusal';
import type { Handler, ProxyRequest, ProxyResponse } from './types';

/**
 * The one way in for the front doors (doors/<door>/): `POST /api/v1<door.path>` and
 * `POST /v1<door.path>` served straight from the node:http request listener, never by express (issue
 * 11: express's app and router walk, its prototype swaps and its per-request closures were paid by
 * every completion). The spellings express would also have routed there — other letter case, one
 * trailing slash, an absolute-form URL, a query string — are served here too; every other request,
 * other methods on these paths included, goes to express. Per request, in order:
 *
 *   in-flight count (+ `connection: close` while draining) → `gen-…` request id (`x-request-id`
 *   header, async context for the service client, `requestId` in logs) → metrics (`route` = the
 *   door's api) → the door's steps (authentication, inference scope, JSON body, the pipeline); any
 *   error → the one error writer, in the door's envelope (`FrontDoor.errorBody`).
 */
export interface DoorDispatch {
  /** The door serving this request, or null (then hand it to express). */
  match(req: IncomingMessage): DoorRoute | null;
  serve(route: DoorRoute, req: IncomingMessage, res: ServerResponse): void;
  /** What it serves (`POST`): every door's path under each mount, e.g. `/api/v1/chat/completions`. */
  readonly paths: readonly string[];
}

/** A door and what serves it after the request context (authentication, scope, body, the pipeline). */
export interface DoorRoute {
  door: FrontDoor;
  steps: readonly Handler[];
}

/** What the app shares with both ways in (express and this dispatch). */
export interface EdgeState {
  inFlight: number;
  draining: boolean;
}

/** The mounts of every door's path. */
const MOUNTS = ['/api/v1', '/v1'];

const pathOf = (url: string | undefined): string => {
  const u = url ?? '';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
};

/**
 * The path express's router would match for a request target: an absolute-form target's path, one
 * trailing slash dropped, lower case (its routes are case-insensitive and not strict).
 */
function routedPath(url: string | undefined): string {
  let p = pathOf(url);
  if (!p.startsWith('/')) {
    const scheme = p.indexOf('://');
    const slash = scheme === -1 ? -1 : p.indexOf('/', scheme + 3);
    p = slash === -1 ? '/' : p.slice(slash);
  }
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p.toLowerCase();
}

/**
 * `res.locals` of a door request: every field the steps use (metrics, authentication, the pipeline),
 * declared up front so they all share one object shape (express's `locals` is a null-prototype
 * dictionary).
 */
class DoorLocals {
  key: CachedKey | undefined = undefined;
  unchecked: string | undefined = undefined;
  completion: unknown = undefined;
  constructor(
    readonly route: string,
    readonly requestId: string,
    readonly metricsStart: number,
    readonly door: FrontDoor,
  ) {}
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

const INTERNAL = new AppError('internal', 'Internal server error');

export function createDoorDispatch(deps: {
  state: EdgeState;
  logger: Logger;
  newId: () => string;
  /** The access line at debug (`request finished`), like requestContext's `accessLog: 'debug'`. */
  accessLog: boolean;
  metrics: { responseClosed(res: { locals: object; statusCode: number }): void };
  routes: readonly DoorRoute[];
  /**
   * Where the refusal of a known key's request goes (the usage publisher: in memory, no I/O on the
   * request's path); absent: refusals are only counted in the metrics.
   */
  refusals?: (event: RefusalEventV1) => void;
}): DoorDispatch {
  const { state, logger, newId, metrics } = deps;
  const logAccess = deps.accessLog && logger.isLevelEnabled('debug');
  const paths = deps.routes.flatMap((route) => MOUNTS.map((mount) => `${mount}${route.door.path}`));
  const byPath = new Map<string, DoorRoute>();
  for (const route of deps.routes) {
    for (const mount of MOUNTS) byPath.set(`${mount}${route.door.path}`.toLowerCase(), route);
  }

  const requestLog = (res: ProxyResponse): Logger =>
    logger.child({ [REQUEST_ID_LOG_FIELD]: (res.locals as DoorLocals).requestId });

  // Hoisted listeners: one function for every response, state read from the response.
  function onClose(this: ProxyResponse): void {
    state.inFlight--;
    metrics.responseClosed(this);
  }
  function onFinish(this: ProxyResponse): void {
    const locals = this.locals as DoorLocals;
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

  /** The one error writer of the doors: the door's envelope, a generic 500 for anything unexpected. */
  function fail(req: ProxyRequest, res: ProxyResponse, err: unknown): void {
    if (res.headersSent) {
      requestLog(res).error({ err, path: pathOf(req.url) }, 'error after response started');
      res.destroy();
      return;
    }
    let appError = toAppError(err);
    if (!appError) {
      requestLog(res).error({ err }, 'unhandled error');
      appError = INTERNAL;
    }
    const locals = res.locals as DoorLocals;
    const { status, body } = locals.door.errorBody(appError);
    sendJson(res, status, body);
    if (deps.refusals) publishRefusal(req, res, appError, status, err);
  }

  /**
   * A known key's request answered with an error and nothing recorded for it: its refusal event (a
   * completion that published its usage event, a failure billed, is not counted twice).
   */
  function publishRefusal(
    req: ProxyRequest,
    res: ProxyResponse,
    error: AppError,
    status: number,
    err: unknown,
  ) {
    const locals = res.locals as DoorLocals;
    const key = locals.key ?? refusedKeyOf(err);
    if (!key || status < 400 || (locals.completion as { recorded?: boolean } | undefined)?.recorded) return;
    try {
      deps.refusals?.(
        refusalEventOf({
          requestId: locals.requestId,
          key,
          api: locals.door.api,
          error,
          status,
          body: req.body,
          title: req.headers['x-openrouter-title'] ?? req.headers['x-title'],
          at: Date.now(),
        }),
      );
    } catch (e) {
      requestLog(res).error({ err: e }, 'refusal event publish failed');
    }
  }

  /** Runs step `i` and, when it calls `next()`, the next one (a sync throw or a rejection fails like next(err)). */
  function run(req: ProxyRequest, res: ProxyResponse, steps: readonly Handler[], i: number): void {
    const step = steps[i];
    if (step === undefined) return;
    let called = false;
    const next = (err?: unknown) => {
      if (called) return;
      called = true;
      if (err) fail(req, res, err);
      else run(req, res, steps, i + 1);
    };
    try {
      const ret = step(req, res, next);
      if (ret !== undefined) ret.catch((err: unknown) => next(err ?? new Error('Rejected promise')));
    } catch (err) {
      next(err);
    }
  }

  function start(req: ProxyRequest, res: ProxyResponse, steps: readonly Handler[]): void {
    run(req, res, steps, 0);
  }

  return {
    paths,
    match(req) {
      if (req.method !== 'POST') return null;
      // The exact spelling first (every client's); then the ones express would have routed here.
      return byPath.get(pathOf(req.url)) ?? byPath.get(routedPath(req.url)) ?? null;
    },
    serve(route, req, res) {
      const r = res as ProxyResponse;
      state.inFlight++;
      r.on('close', onClose);
      if (state.draining) r.setHeader('connection', 'close');
      // Never the client's id: it becomes the generation id.
      const requestId = newId();
      r.setHeader(REQUEST_ID_HEADER, requestId);
      r.locals = new DoorLocals(route.door.api, requestId, performance.now(), route.door);
      if (logAccess) r.once('finish', onFinish);
      withRequestId(requestId, start, req as ProxyRequest, r, route.steps);
    },
  };
}
