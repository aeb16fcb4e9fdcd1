import type { Catalog } from '@tollgate/catalog';
import { errorHandler, healthRoutes, notFoundHandler } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';
import { openapiJson } from '@tollgate/openapi';
import type { RedisClient } from '@tollgate/redis';
import express from 'express';
import type { Authenticator } from '../auth/authenticate';
import type { AuthSteps } from '../auth/steps';
import type { FrontDoor } from '../doors/door';
import { countTokensHandler, messagesErrorHandler } from '../doors/messages/routes';
import { accountRead } from '../forward/account-read';
import type { Forwarder } from '../forward/forward';
import { type ProxyMetrics, routeName } from '../metrics/metrics';
import { modelEndpointsHandler, modelsHandler } from '../models/models.routes';
import type { TokenEstimator } from '../pipeline/completion-init';
import type { Handler } from './types';

/** What the express routes use (built once by http/app.ts). */
export interface RouteDeps {
  logger: Logger;
  catalog: Catalog;
  redis: RedisClient;
  estimator: TokenEstimator;
  metrics: ProxyMetrics;
  forwarders: { keys: Forwarder; billing: Forwarder };
  authenticator: Authenticator;
  steps: AuthSteps;
  /** The JSON body step the doors use too. */
  body: Handler;
  /** The Messages door (its token count and its `x-api-key`). */
  messages: FrontDoor;
  /** Whether the process is draining (readiness answers 503). */
  draining: () => boolean;
}

/**
 * Everything express serves (the front doors are served before it, http/doors.ts): health, the
 * OpenAPI file, the Messages door's token count, then the API under /api/v1 and /v1, and the one
 * error handler.
 */
export function mountRoutes(app: express.Express, deps: RouteDeps): void {
  const { logger, metrics, steps, messages } = deps;
  app.use(
    healthRoutes({
      redis: async () => {
        await deps.redis.ping();
      },
      accepting: async () => {
        if (deps.draining()) throw new Error('shutting down');
      },
    }),
  );
  // No /metrics here: the public port answers it 404 (the metrics listener is METRICS_HOST:METRICS_PORT).

  // The machine-readable API description (spec §9), public like the spec it describes.
  const openapi = Buffer.from(openapiJson);
  app.get(['/api/v1/openapi.json', '/v1/openapi.json'], metrics.track, routeName('openapi'), (_req, res) => {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('content-length', openapi.length);
    res.end(openapi);
  });

  // The Messages door's token count (no completion: an express route), errors in Anthropic's shape.
  app.post(
    ['/api/v1/messages/count_tokens', '/v1/messages/count_tokens'],
    metrics.track,
    routeName('messages_count_tokens'),
    ...(messages.before ?? []),
    steps.auth,
    steps.inference,
    deps.body,
    countTokensHandler(messages, deps.catalog, deps.estimator),
    messagesErrorHandler(logger),
  );

  const api = apiRouter(deps);
  app.use('/api/v1', api);
  app.use('/v1', api);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
}

/** The API's express routes: account reads, models, and what keys and billing own (forwarded). */
function apiRouter(deps: RouteDeps): express.Router {
  const { steps, forwarders, authenticator } = deps;
  const { management, inference } = steps;
  const api = express.Router();
  api.use(deps.metrics.track);
  // Account reads: the owner is asked while the key is authenticated (forward/account-read.ts); they
  // authenticate themselves, with the same steps as the routes below.
  const read = (forwarder: Forwarder, scope: 'inference' | null) =>
    accountRead({ forwarder, authenticator, authenticate: steps.authenticated(scope), scope });
  api.get('/key', routeName('key'), read(forwarders.keys, null));
  api.get('/credits', routeName('credits'), read(forwarders.billing, null));
  api.get('/generation', routeName('generation'), read(forwarders.billing, 'inference'));
  // Anthropic's clients send the key as x-api-key (doors/messages/routes.ts).
  api.get('/models', ...(deps.messages.before ?? []));
  api.use(steps.auth);
  api.get('/models', routeName('models'), inference, modelsHandler(deps.catalog));
  api.get(
    '/models/:author/:slug/endpoints',
    routeName('model_endpoints'),
    inference,
    modelEndpointsHandler(deps.catalog),
  );
  api.all(['/keys', '/keys/{*rest}'], routeName('keys'), management, forwarders.keys.handler());
  api.all(['/teams', '/teams/{*rest}'], routeName('teams'), management, forwarders.keys.handler());
  api.all('/account', routeName('account'), management, forwarders.keys.handler());
  api.get('/audit', routeName('audit'), management, forwarders.keys.handler());
  api.get('/activity', routeName('activity'), management, forwarders.billing.handler());
  // Alert webhook endpoints and their delivery log (billing owns them).
  api.all(
    ['/webhooks', '/webhooks/{*rest}'],
    routeName('webhooks'),
    management,
    forwarders.billing.handler(),
  );
  api.use(notFoundHandler);
  return api;
}
