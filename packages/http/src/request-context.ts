import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Logger } from '@tollgate/logger';
import type { Request, RequestHandler } from 'express';

/** The header a request id travels in, between services and back to the caller. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** The one log field that carries the request id, in every service (`requestId`). */
export const REQUEST_ID_LOG_FIELD = 'requestId';

const INCOMING_ID = /^[\w.-]{1,100}$/;

interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The id of the request being served (undefined outside a request): the service client passes it on. */
export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;

/**
 * Runs `fn(...args)` as part of request `requestId` (for work that starts outside express: a CLI call,
 * the proxy's chat route served from the request listener).
 */
export const withRequestId = <A extends unknown[], T>(
  requestId: string,
  fn: (...args: A) => T,
  ...args: A
): T => storage.run({ requestId }, fn, ...args);

export interface RequestContextOptions {
  /**
   * Accept the caller's `x-request-id` (internal services: the proxy's id crosses the hop). The public
   * edge passes false: its ids become generation ids and must never be chosen by a client.
   */
  trustIncoming?: boolean;
  /** How a new id is made (default: a uuid). */
  newId?: () => string;
  /** One line per finished request at this level (method, path, status, duration), or false for none. */
  accessLog?: 'info' | 'debug' | false;
}

/**
 * The per-request context every service mounts first: the request id (from `x-request-id` when
 * trusted, else new), echoed as the `x-request-id` response header, a child logger on `req.log`
 * carrying `requestId` (made on first use, so the hot path pays nothing unless it logs), and an async
 * context so the service client passes the id on without threading it through every call.
 */
export function requestContext(logger: Logger, options: RequestContextOptions = {}): RequestHandler {
  const newId = options.newId ?? randomUUID;
  const trust = options.trustIncoming ?? true;
  const level = options.accessLog ?? false;
  return (req, res, next) => {
    const incoming = trust ? req.headers[REQUEST_ID_HEADER] : undefined;
    const requestId = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : newId();
    res.setHeader(REQUEST_ID_HEADER, requestId);
    res.locals.requestId = requestId;
    let child: Logger | undefined;
    Object.defineProperty(req, 'log', {
      configurable: true,
      get: () => {
        child ??= logger.child({ [REQUEST_ID_LOG_FIELD]: requestId });
        return child;
      },
    });
    if (level && logger.isLevelEnabled(level)) {
      const started = performance.now();
      res.once('finish', () => {
        requestLogger(req)[level](
          {
            method: req.method,
            path: req.path,
            status: res.statusCode,
            ms: Math.round(performance.now() - started),
          },
          'request finished',
        );
      });
    }
    storage.run({ requestId }, next);
  };
}

/** The request's child logger (with `requestId`); the given fallback outside requestContext. */
export function requestLogger(req: Request, fallback?: Logger): Logger {
  const log = (req as { log?: Logger }).log ?? fallback;
  if (!log) throw new Error('requestContext is not mounted and no fallback logger was given');
  return log;
}

/** The request id requestContext gave this response (any response with `locals.requestId`). */
export function requestIdOf(res: { locals: object }): string {
  return (res.locals as { requestId: string }).requestId;
}
