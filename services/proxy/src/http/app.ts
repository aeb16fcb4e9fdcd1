import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceSigner, requestIdSource } from '@tollgate/auth';
import { type Catalog, loadCatalog } from '@tollgate/catalog';
import { AppError } from '@tollgate/errors';
import type { UsagePublisher } from '@tollgate/events';
import { clientAddressResolver, requestContext } from '@tollgate/http';
import { createLogger, type Logger } from '@tollgate/logger';
import type { RedisClient } from '@tollgate/redis';
import { estimateCompletionTokens, estimatePromptTokens } from '@tollgate/tokens';
import express, { type Response } from 'express';
import { createKeyResolver, type KeyResolver } from '../auth/key-resolver';
import { proxyAuthentication } from '../auth/proxy-auth';
import type { ProxyConfig } from '../config';
import { frontDoors } from '../doors';
import { createForwarder, type Forwarder } from '../forward/forward';
import { createMetrics, type ProxyMetrics } from '../metrics/metrics';
import type { Completion } from '../pipeline/completion';
import type { TokenEstimator, UsageSink } from '../pipeline/completion-init';
import { completionPipeline } from '../pipeline/pipeline';
import { allowAllSpendGuard, type SpendGuard } from '../spend/guard';
import { Upstreams } from '../upstream/upstream';
import { createDoorDispatch, type DoorDispatch, type EdgeState } from './doors';
import { jsonBodyReader, parseByteLimit } from './json-body';
import { pipelineDeps } from './pipeline-deps';
import { connectRedis, redisSpendGuard, usagePublisher } from './resources';
import { mountRoutes } from './routes';
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
  /** What the server serves: the express app and the front doors (tests read their routes). */
  routes: Pick<ProxyAppParts, 'app' | 'doors'>;
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

/**
 * Builds the proxy's two ways in: the front doors (served before express, http/doors.ts), each a
 * completion pipeline, and the express app (http/routes.ts). They share the in-flight count, the
 * authentication (auth/proxy-auth.ts) and one pipeline state (http/pipeline-deps.ts).
 */
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
  const { config, logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);

  // Requests in flight (both ways in: the doors and express), and whether we are draining.
  const state: EdgeState = { inFlight: 0, draining: false };
  app.use(countInFlight(state));
  // Every request gets a `gen-…` id (never the client's: it becomes the generation id), sent on to
  // keys and billing as `x-request-id` and logged as `requestId`.
  const newId = requestIdSource(256);
  app.use(requestContext(logger, { trustIncoming: false, newId, accessLog: 'debug' }));

  const { authenticator, steps } = proxyAuthentication(config, deps);
  const live = new Set<Completion>();
  const pipeline = pipelineDeps(config, deps, live, steps.recall);
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
      steps: [...(door.before ?? []), steps.doors, steps.inference, body, completionPipeline(door, pipeline)],
    })),
  });
  const messages = doorsOfCatalog.find((d) => d.api === 'messages') as (typeof doorsOfCatalog)[number];
  mountRoutes(app, { ...deps, authenticator, steps, body, messages, draining: () => state.draining });
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

/** Counts a request in flight until its response closes; a draining process closes its connections. */
function countInFlight(state: EdgeState): express.RequestHandler {
  function onDone(this: Response) {
    state.inFlight--;
  }
  return (_req, res, next) => {
    state.inFlight++;
    res.once('close', onDone);
    if (state.draining) res.setHeader('connection', 'close');
    next();
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
    routes: { app: parts.app, doors: parts.doors },
    metrics,
    publisher,
    inFlight: parts.inFlight,
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}
