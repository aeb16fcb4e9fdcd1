import type { Server } from 'node:http';
import {
  SERVICE_TOKEN_HEADER,
  type ServiceClaims,
  type ServiceName,
  type ServiceVerifier,
  type VerifiedClaims,
} from '@tollgate/auth';
import { isCanonicalUuid } from '@tollgate/contracts';
import { AppError, badRequest, describeIssues, unauthorized } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Router } from 'express';
import type { z } from 'zod';
import { answerClientErrors } from './client-error';

export {
  ACTOR_KEY_HEADER,
  ACTOR_USER_HEADER,
  CLIENT_ADDRESS_HEADER,
  type ClientAddress,
  clientAddressResolver,
  forwardedClientAddress,
  parseTrustedProxies,
  type TrustedProxies,
  trustedProxiesEnv,
} from './client-address';
export { answerClientErrors, clientErrorFor } from './client-error';
export {
  currentRequestId,
  REQUEST_ID_HEADER,
  REQUEST_ID_LOG_FIELD,
  type RequestContextOptions,
  requestContext,
  requestIdOf,
  requestLogger,
  withRequestId,
} from './request-context';
export { createServiceApp, type ServiceAppOptions } from './service-app';
export {
  type CallOptions,
  createServiceClient,
  type HttpMethod,
  type ServiceClient,
  type ServiceClientOptions,
  type StreamOptions,
} from './service-client';
export { onShutdown } from './shutdown';

/** JSON body parsing with the errors mapped into the envelope by errorHandler. */
export const jsonBody = (limit = '1mb'): RequestHandler => express.json({ limit, strict: false });

interface BodyParserError {
  type?: string;
  status?: number;
}

/** Maps express/body-parser failures to AppErrors; everything else stays unknown (500). */
export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const e = err as BodyParserError | null;
  switch (e?.type) {
    case 'entity.parse.failed':
      return badRequest('Request body is not valid JSON');
    case 'entity.too.large':
      return new AppError('payload_too_large', 'Request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('unsupported_media_type', 'Unsupported body encoding or charset');
    case 'request.aborted':
      return badRequest('Request aborted');
    default:
      if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
        return new AppError('bad_request', 'Malformed request', {}, e.status);
      }
      return null;
  }
}

/** An error's answer: its status and body. The standard envelope unless a route's API has its own shape. */
type ErrorRender = (error: AppError, res: express.Response) => { status: number; body: unknown };

const standardEnvelope: ErrorRender = (e) => ({ status: e.status, body: e.toEnvelope() });

/**
 * The one error handler of the express apps: an error after the head is logged and the socket
 * destroyed; anything not of the closed set is logged with its stack and answered as a generic 500;
 * the answer is `render`'s (default: the standard envelope; the Messages door's routes: Anthropic's).
 */
export function errorHandler(logger: Logger, render: ErrorRender = standardEnvelope): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      ((req as { log?: Logger }).log ?? logger).error(
        { err, path: req.path },
        'error after response started',
      );
      res.destroy();
      return;
    }
    let appError = toAppError(err);
    if (!appError) {
      // Logged once: with the request's child logger (it carries the request id) when there is one.
      ((req as { log?: Logger }).log ?? logger).error({ err }, 'unhandled error');
      appError = new AppError('internal', 'Internal server error');
    }
    const { status, body } = render(appError, res);
    res.status(status).json(body);
  };
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('not_found', `No route for ${req.method} ${req.path}`));
};

/** Parses input with a zod schema; a failure is a 400 whose message names the field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssues(result.error.issues));
  return result.data;
}

export type ReadinessCheck = () => Promise<void>;

/** GET /healthz (process is up) and GET /readyz (dependencies answer). */
export function healthRoutes(checks: Record<string, ReadinessCheck>): Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const results: Record<string, string> = {};
    let ok = true;
    await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        try {
          await check();
          results[name] = 'ok';
        } catch {
          ok = false;
          results[name] = 'unavailable';
        }
      }),
    );
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'unavailable', checks: results });
  });
  return router;
}

/** Starts an internal service's server; parser errors are answered in the envelope (answerClientErrors). */
export function listen(
  app: express.Express,
  port: number,
  host = '0.0.0.0',
  logger?: Logger,
): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(server)));
    server.keepAliveTimeout = 65_000;
    answerClientErrors(server, logger);
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

export type KeyCallerClaims = Extract<ServiceClaims, { kind: 'key' }>;

/** The only service that hands over an API key's identity (it authenticated the key itself). */
export const KEY_CALLER_ISSUER: ServiceName = 'proxy';

async function claimsOf(req: Request, verifier: ServiceVerifier): Promise<VerifiedClaims | null> {
  const token = req.headers[SERVICE_TOKEN_HEADER];
  return typeof token === 'string' ? verifier.verify(token) : null;
}

/**
 * The caller identity the proxy hands over on public routes: a `{kind:'key'}` token for this service,
 * signed by the proxy, with uuid key and account ids. Anything else is 401.
 */
export async function keyCallerClaims(req: Request, verifier: ServiceVerifier): Promise<KeyCallerClaims> {
  const claims = await claimsOf(req, verifier);
  if (
    claims?.kind !== 'key' ||
    claims.caller !== KEY_CALLER_ISSUER ||
    !isCanonicalUuid(claims.keyId) ||
    !isCanonicalUuid(claims.accountId)
  ) {
    throw unauthorized('Missing or invalid caller identity');
  }
  return { kind: 'key', keyId: claims.keyId, accountId: claims.accountId, scope: claims.scope };
}

/**
 * Internal routes: a `{kind:'service'}` token for this service from a trusted caller (else 401), and
 * that caller must be one the route allows (else 403). `res.locals.serviceCaller` names the caller.
 */
export function serviceCaller(verifier: ServiceVerifier, allowed: readonly ServiceName[]): RequestHandler {
  if (allowed.length === 0) throw new Error('serviceCaller: a route must allow at least one caller');
  return async (req, res, next) => {
    const claims = await claimsOf(req, verifier);
    if (claims?.kind !== 'service') throw unauthorized('Missing or invalid service token');
    if (!allowed.includes(claims.caller)) {
      throw new AppError('forbidden', `The ${claims.caller} service may not call this route`, {
        caller: claims.caller,
      });
    }
    res.locals.serviceCaller = claims.caller;
    next();
  };
}
