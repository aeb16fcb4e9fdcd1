import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceSigner, requestIdSource } from '@tollgate/auth';
import { type Catalog, loadCatalog } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import type { UsagePublisher } from '@tollgate/events';
import {
  clientAddressResolver,
  errorHandler,
  healthRoutes,
  notFoundHandler,
  requestContext,
} from '@tollgate/http';
import { createKeyCache, lastUsedHashKey } from '@tollgate/key-cache';
import { createLogger, type Logger } from '@tollgate/logger';
import { openapiJson } from '@tollgate/openapi';
import { isCluster, type RedisClient } from '@tollgate/redis';
import { estimateCompletionTokens, estimatePromptTokens } from '@tollgate/tokens';
import express, { type Response } from 'express';
import { createAuthenticator } from '../auth/authenticate';
import { createKeyResolver, type KeyResolver } from '../auth/key-resolver';
import { authSteps } from '../auth/steps';
import { UnknownKeyLimiter } from '../auth/unknown-keys';
import type { ProxyConfig } from '../config';
import { frontDoors } from '../doors';
import { countTokensHandler, messagesErrorHandler } from '../doors/messages/routes';
import { accountRead } from '../forward/account-read';
import { createForwarder, type Forwarder } from '../forward/forward';
import { createMetrics, type ProxyMetrics, routeName } from '../metrics/metrics';
import { modelEndpointsHandler, modelsHandler } from '../models/models.routes';
import type { Completion, TokenEstimator, UsageSink } from '../pipeline/completion';
import { CompletionSlots } from '../pipeline/concurrency';
import { completionPipeline, type PipelineDeps } from '../pipeline/pipeline';
import { KeyRing, ProviderHealth } from '../routing/health';
import { allowAllSpendGuard, type SpendGuard } from '../spend/guard';
import { Upstreams } from '../upstream/upstream';
import { createDoorDispatch, type DoorDispatch, type EdgeState } from './doors';
import { jsonBodyReader, parseByteLimit } from './json-body';
import { connectRedis, redisSpendGuard, usagePublisher } from './resources';
import { listenWithLimits } from './server';

/** What tests (and main.ts) may inject; everything else is built from the config. */
export interface ProxyDeps {
  logger?: Logger;
  catalog?: Catalog;
  guard?: SpendGuard;
  /** Usage publisher; default: a RabbitMQ publisher on AMQP_URL / AMQP_PREFIX. */
  publisher?: UsagePublisher;
  redis?: RedisClient;
  resolver?: KeyResolver;
  estimator?: TokenEstimator;
}

export interface ProxyHandle {
  /** e.g. http://127.0.0.1:8080 (API base: `${url}/api/v1`). */
  url: string;
  port: number;
  server: Server;
  metrics: ProxyMetrics;
  publisher: UsagePublisher;
  /** Requests being served right now. */
  inFlight(): number;
  /** SIGTERM path: stop accepting, drain in-flight requests (deadline), close the publisher (drains). */
  close(): Promise<void>;
}

export const defaultEstimator: TokenEstimator = { estimatePromptTokens, estimateCompletionTokens };

export interface ProxyAppParts {
  app: express.Express;
  /** The front doors, served before express (http/doors.ts). */
  doors: DoorDispatch;
  inFlight(): number;
  /** Completions running, draining ones (their client gone, pipeline/drain.ts) included. */
  completions(): number;
  setDraining(): void;
  /** Stops every completion in flight with `reason` (HTTP error, or the §6 error chunk mid-stream). */
  stopCompletions(reason: AppError): number;
}

/** Builds the express app: health, metrics, then the API under /api/v1 and /v1. */
export function createProxyApp(deps: {
  config: ProxyConfig;
  logger: Logger;
  catalog: Catalog;
  guard: SpendGuard;
  sink: UsageSink;
  redis: RedisClient;
  resolver: KeyResolver;
  estimator: TokenEstimator;
  upstreams: Upstreams;
  metrics: ProxyMetrics;
  forwarders: { keys: Forwarder; billing: Forwarder };
}): ProxyAppParts {
  const { config, logger, redis } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);

  // Requests in flight (both ways in: the doors and express), and whether we are draining.
  const state: EdgeState = { inFlight: 0, draining: false };
  function onDone(this: Response) {
    state.inFlight--;
  }
  app.use((_req, res, next) => {
    state.inFlight++;
    res.once('close', onDone);
    if (state.draining) res.setHeader('connection', 'close');
    next();
  });
  // Every request gets a `gen-…` id (never the client's: it becomes the generation id), sent on to
  // keys and billing as `x-request-id` and logged as `requestId`.
  const newId = requestIdSource(256);
  app.use(requestContext(logger, { trustIncoming: false, newId, accessLog: 'debug' }));

  const keyCache = createKeyCache(redis, { prefix: config.REDIS_PREFIX });
  const authenticator = createAuthenticator({
    keyCache,
    resolver: deps.resolver,
    redis,
    lastUsedKey: (keyId) => lastUsedHashKey(config.REDIS_PREFIX, keyId),
    logger,
    unknownKeys: new UnknownKeyLimiter({
      perMinute: config.UNKNOWN_KEY_LOOKUPS_PER_MINUTE,
      perSecond: config.UNKNOWN_KEY_LOOKUPS_PER_SECOND,
      burst: config.UNKNOWN_KEY_LOOKUP_BURST,
    }),
  });
  // Records are recalled when admission can check them; not on a Redis Cluster (docs/architecture.md).
  const steps = authSteps(authenticator, keyCache, {
    recall: deps.guard.checks === true && !isCluster(redis),
    clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
  });
  const { auth, inference, management, authenticated } = steps;

  // One pipeline's state for every door: concurrency caps, provider health, key rotation, live set.
  const live = new Set<Completion>();
  const pipeline: PipelineDeps = {
    catalog: deps.catalog,
    upstreams: deps.upstreams,
    guard: deps.guard,
    sink: deps.sink,
    estimator: deps.estimator,
    keepAliveIntervalMs: config.KEEPALIVE_INTERVAL_MS,
    streamWriteTimeoutMs: config.STREAM_WRITE_TIMEOUT_MS,
    maxDurationMs: config.COMPLETION_MAX_DURATION_MS,
    cancelDrainMs: config.CANCEL_DRAIN_MS,
    maxImages: config.MAX_IMAGES_PER_REQUEST,
    concurrency: new CompletionSlots(
      config.MAX_CONCURRENT_COMPLETIONS_PER_KEY,
      config.MAX_CONCURRENT_COMPLETIONS_PER_ACCOUNT,
    ),
    routing: {
      maxAttempts: config.ROUTING_MAX_ATTEMPTS,
      deadlineMs: config.ROUTING_DEADLINE_MS,
      health: new ProviderHealth(config.CIRCUIT_FAILURE_THRESHOLD, config.CIRCUIT_COOLDOWN_MS),
      keys: new KeyRing(),
    },
    logger,
    live,
    recalled: steps.recall,
  };
  const body = jsonBodyReader(parseByteLimit(config.BODY_LIMIT));
  const doorsOfCatalog = frontDoors(deps.catalog);
  // The front doors: served by the request listener, never by express (http/doors.ts).
  const doors = createDoorDispatch({
    state,
    logger,
    newId,
    accessLog: true,
    metrics: deps.metrics,
    refusals: (event) => deps.sink.publish(event),
    routes: doorsOfCatalog.map((door) => ({
      door,
      steps: [...(door.before ?? []), steps.doors, inference, body, completionPipeline(door, pipeline)],
    })),
  });

  app.use(
    healthRoutes({
      redis: async () => {
        await redis.ping();
      },
      accepting: async () => {
        if (state.draining) throw new Error('shutting down');
      },
    }),
  );
  // No /metrics here: the public port answers it 404 (the metrics listener is METRICS_HOST:METRICS_PORT).

  // The machine-readable API description (spec §9), public like the spec it describes.
  const openapi = Buffer.from(openapiJson);
  app.get(
    ['/api/v1/openapi.json', '/v1/openapi.json'],
    deps.metrics.track,
    routeName('openapi'),
    (_req, res) => {
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.setHeader('content-length', openapi.length);
      res.end(openapi);
    },
  );

  // The Messages door's token count (no completion: an express route), errors in Anthropic's shape.
  const messages = doorsOfCatalog.find((d) => d.api === 'messages') as (typeof doorsOfCatalog)[number];
  app.post(
    ['/api/v1/messages/count_tokens', '/v1/messages/count_tokens'],
    deps.metrics.track,
    routeName('messages_count_tokens'),
    ...(messages.before ?? []),
    auth,
    inference,
    body,
    countTokensHandler(messages, deps.catalog, deps.estimator),
    messagesErrorHandler(logger),
  );

  const api = express.Router();
  api.use(deps.metrics.track);
  // Account reads: the owner is asked while the key is authenticated (forward/account-read.ts); they
  // authenticate themselves, with the same steps as the routes below.
  const read = (forwarder: Forwarder, scope: 'inference' | null) =>
    accountRead({ forwarder, authenticator, authenticate: authenticated(scope), scope });
  api.get('/key', routeName('key'), read(deps.forwarders.keys, null));
  api.get('/credits', routeName('credits'), read(deps.forwarders.billing, null));
  api.get('/generation', routeName('generation'), read(deps.forwarders.billing, 'inference'));
  // Anthropic's clients send the key as x-api-key (doors/messages/routes.ts).
  api.get('/models', ...(messages.before ?? []));
  api.use(auth);
  api.get('/models', routeName('models'), inference, modelsHandler(deps.catalog));
  api.get(
    '/models/:author/:slug/endpoints',
    routeName('model_endpoints'),
    inference,
    modelEndpointsHandler(deps.catalog),
  );
  api.all(['/keys', '/keys/{*rest}'], routeName('keys'), management, deps.forwarders.keys.handler());
  api.all(['/teams', '/teams/{*rest}'], routeName('teams'), management, deps.forwarders.keys.handler());
  api.get('/audit', routeName('audit'), management, deps.forwarders.keys.handler());
  api.get('/activity', routeName('activity'), management, deps.forwarders.billing.handler());
  // Alert webhook endpoints and their delivery log (billing owns them).
  api.all(
    ['/webhooks', '/webhooks/{*rest}'],
    routeName('webhooks'),
    management,
    deps.forwarders.billing.handler(),
  );
  api.use(notFoundHandler);

  app.use('/api/v1', api);
  app.use('/v1', api);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return {
    app,
    doors,
    inFlight: () => state.inFlight,
    completions: () => live.size,
    setDraining: () => {
      state.draining = true;
    },
    stopCompletions: (reason) => {
      const n = live.size;
      for (const c of live) c.stop(reason);
      return n;
    },
  };
}

/** Starts the proxy in-process (tests, bench, main.ts). PORT=0 picks a free port. */
export async function startProxy(config: ProxyConfig, deps: ProxyDeps = {}): Promise<ProxyHandle> {
  const logger =
    deps.logger ?? createLogger({ name: 'proxy', level: config.LOG_LEVEL, pretty: config.LOG_PRETTY });
  const catalog = deps.catalog ?? loadCatalog(config.CATALOG_PATH);
  const ownsRedis = !deps.redis;
  // The proxy's own identity: it signs its calls to keys and billing, and nothing else trusts it more.
  const signer = createServiceSigner('proxy', config.SERVICE_PRIVATE_KEY);
  const redis = deps.redis ?? (await connectRedis(config, logger));
  const resolver =
    deps.resolver ??
    createKeyResolver({
      url: config.KEYS_URL,
      signer,
      timeoutMs: config.SERVICE_TIMEOUT_MS,
      maxInFlight: config.KEY_LOOKUP_MAX_IN_FLIGHT,
      logger,
    });
  const metrics = createMetrics({ defaultMetrics: true });
  const publisher = deps.publisher ?? usagePublisher(config, logger);
  metrics.watchPublisher(publisher);
  const upstreams = new Upstreams({
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    connections: config.UPSTREAM_CONNECTIONS,
    maxQueued: config.UPSTREAM_MAX_QUEUED,
  });
  const forwardOptions = {
    signer,
    timeoutMs: config.SERVICE_TIMEOUT_MS,
    logger,
    clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
  };
  const keysForwarder = createForwarder({ service: 'keys', url: config.KEYS_URL, ...forwardOptions });
  const billingForwarder = createForwarder({
    service: 'billing',
    url: config.BILLING_URL,
    ...forwardOptions,
  });

  const guard = metrics.instrumentGuard(
    deps.guard ??
      (config.SPEND_GUARD === 'redis'
        ? redisSpendGuard(config, { redis, signer, logger, metrics })
        : allowAllSpendGuard),
  );
  const parts = createProxyApp({
    config,
    logger,
    catalog,
    guard,
    sink: {
      publish(event) {
        if (event.type === 'usage') metrics.usageEvent(event);
        publisher.publish(event);
      },
      canAdmit: () => publisher.canAdmit(),
    },
    redis,
    resolver,
    estimator: deps.estimator ?? defaultEstimator,
    upstreams,
    metrics,
    forwarders: { keys: keysForwarder, billing: billingForwarder },
  });
  // Provider connections this process may hold: UPSTREAM_CONNECTIONS per distinct provider origin.
  const origins = new Set(catalog.providers().map((p) => new URL(p.baseUrl).origin)).size;
  const server = await listenWithLimits(parts, config, logger, {
    upstreamSockets: origins * config.UPSTREAM_CONNECTIONS,
  });
  const port = (server.address() as AddressInfo).port;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  logger.info({ port, models: catalog.models().length }, 'proxy listening');

  let closing: Promise<void> | undefined;
  async function shutdown(): Promise<void> {
    parts.setDraining();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = Date.now() + config.SHUTDOWN_TIMEOUT_MS;
    // Completions whose client went away are still draining their provider's usage (pipeline/drain.ts).
    const busy = () => parts.inFlight() > 0 || parts.completions() > 0;
    while (busy() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      server.closeIdleConnections();
    }
    if (busy()) {
      // Completions still running end the way the spec says a failed stream ends: the usage chunk
      // (what was produced is billed), the §6 error chunk, [DONE]; a non-streamed one gets a 503.
      // A draining one is billed the upper bound of what its provider can have charged.
      const stopped = parts.stopCompletions(
        new AppError('service_unavailable', 'The gateway is restarting; retry the request'),
      );
      const grace = Date.now() + 1_000;
      while (busy() && Date.now() < grace) await new Promise((r) => setTimeout(r, 25));
      logger.warn(
        { stopped, stillInFlight: parts.inFlight() },
        'shutdown deadline: completions stopped with the error chunk, cutting what is left',
      );
    }
    server.closeAllConnections();
    await closed;
    // Cut streams end (and publish) on their close event; give them that tick before closing the publisher.
    await new Promise((r) => setImmediate(r));
    // Settles waiting for their batch (settleLingerMs) go now, before Redis is closed.
    await guard.flush?.().catch((err: unknown) => logger.error({ err }, 'spend settle failed'));
    const result = await publisher.close({ drainTimeoutMs: Math.max(1_000, deadline - Date.now()) });
    if (!result.drained) logger.error({ remaining: result.remaining }, 'usage events lost at shutdown');
    await Promise.allSettled([
      upstreams.close(),
      keysForwarder.close(),
      billingForwarder.close(),
      resolver.close(),
    ]);
    if (ownsRedis) redis.disconnect();
    logger.info('proxy stopped');
  }

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    metrics,
    publisher,
    inFlight: parts.inFlight,
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}
