import type { Logger } from '@tollgate/logger';
import { httpMetrics } from '@tollgate/metrics';
import express, { type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { errorHandler, healthRoutes, jsonBody, notFoundHandler, type ReadinessCheck } from './index';
import { requestContext } from './request-context';

export interface ServiceAppOptions {
  /** The service: its request metrics are `tollgate_<service>_http_*`. */
  service: string;
  logger: Logger;
  /** GET /readyz checks (GET /healthz is always there). */
  readiness: Record<string, ReadinessCheck>;
  /** Request metrics are counted into this registry (served on the metrics port by main.ts). */
  metrics?: Registry;
  /**
   * The JSON body limit of every route (`jsonBody`); omitted, the app parses no body itself (a
   * service that parses bodies on some routes only mounts `jsonBody` on those).
   */
  jsonLimit?: string;
  /** Middleware every answer passes, health checks included (after the request id; e.g. headers). */
  before?: RequestHandler[];
  /** Mounts the service's routes (after the health checks and the body parser). */
  routes(app: express.Express): void;
}

/**
 * The express app of an internal service (keys, billing, dashboard), one shape for all: no
 * `x-powered-by`; request metrics; the request id and the request's logger (access log at debug);
 * `before`; GET /healthz and /readyz; JSON bodies up to `jsonLimit`; the service's routes; then 404 and
 * the error writer, both in the standard error envelope.
 */
export function createServiceApp(options: ServiceAppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  if (options.metrics) app.use(httpMetrics(options.metrics, `tollgate_${options.service}_http`));
  app.use(requestContext(options.logger, { accessLog: 'debug' }));
  for (const handler of options.before ?? []) app.use(handler);
  app.use(healthRoutes(options.readiness));
  if (options.jsonLimit) app.use(jsonBody(options.jsonLimit));
  options.routes(app);
  app.use(notFoundHandler);
  app.use(errorHandler(options.logger));
  return app;
}
