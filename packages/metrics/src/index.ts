import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { envBoolean, envPort } from '@tollgate/config';
import { AppError } from '@tollgate/errors';
import type { Logger } from '@tollgate/logger';
import type { RequestHandler, Response } from 'express';
import { AggregatorRegistry, Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { z } from 'zod';

/**
 * The metrics listener's settings, spread into each service's config schema. Metrics are never on the
 * public port: anyone who can reach the API would read model names and traffic.
 */
export const metricsEnv = (defaultPort: number) => ({
  /** false: no metrics listener at all. */
  METRICS_ENABLED: envBoolean(true),
  /** Interface of the metrics listener; 127.0.0.1 keeps it off the network (set 0.0.0.0 in a pod). */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** Port of the metrics listener (0 picks a free one, logged at start). */
  METRICS_PORT: envPort(defaultPort),
});

export interface MetricsConfig {
  METRICS_ENABLED: boolean;
  METRICS_HOST: string;
  METRICS_PORT: number;
}

export interface MetricsServer {
  /** e.g. http://127.0.0.1:9464 (scrape `${url}/metrics`). */
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

const notFoundBody = (path: string) =>
  JSON.stringify(
    new AppError('not_found', `No route for ${path} (this port serves GET /metrics)`).toEnvelope(),
  );

/**
 * Serves `GET /metrics` on its own listener. `cluster: 'primary'`: the registry is a node:cluster
 * primary's, and the answer aggregates every worker's registries (counters and histograms summed;
 * each worker calls `exposeToClusterPrimary`).
 */
export async function serveMetrics(options: {
  registry: Registry;
  port: number;
  host: string;
  logger?: Logger;
  cluster?: 'primary';
}): Promise<MetricsServer> {
  const { registry, logger } = options;
  const aggregator = options.cluster === 'primary' ? new AggregatorRegistry() : null;
  const render = async (): Promise<string> => {
    if (!aggregator) return registry.metrics();
    const [own, workers] = await Promise.all([registry.metrics(), aggregator.clusterMetrics()]);
    return `${own}\n${workers}`;
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(notFoundBody(path));
      return;
    }
    render().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        logger?.error({ err }, 'metrics collection failed');
        res
          .writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
          .end('metrics collection failed\n');
      },
    );
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  logger?.info({ metricsPort: port, metricsHost: options.host }, 'metrics listening');
  return {
    url: `http://${host}:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The metrics listener a service's main.ts starts when METRICS_ENABLED (null otherwise). */
export async function serveMetricsFromConfig(
  config: MetricsConfig,
  registry: Registry,
  logger: Logger,
  cluster?: 'primary',
): Promise<MetricsServer | null> {
  if (!config.METRICS_ENABLED) return null;
  return serveMetrics({ registry, port: config.METRICS_PORT, host: config.METRICS_HOST, logger, cluster });
}

/** In a node:cluster worker: the primary's metrics listener reads these registries (over IPC). */
export function exposeToClusterPrimary(registries: Registry[]): void {
  AggregatorRegistry.setRegistries(registries);
  // The constructor installs the worker-side IPC listener (idempotent).
  new AggregatorRegistry();
}

interface RouteLocals {
  metricsStart?: number;
}

/**
 * Request count and duration for an internal service, labelled by the matched express route pattern
 * (bounded: the route table) and status; unmatched paths are `other`.
 */
export function httpMetrics(registry: Registry, prefix: string): RequestHandler {
  const requests = new Counter({
    name: `${prefix}_requests_total`,
    help: 'HTTP requests answered, by route pattern and status',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: `${prefix}_request_duration_seconds`,
    help: 'Time from request to the end of the response, by route pattern',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  function onClose(this: Response) {
    const req = this.req as { route?: { path?: unknown }; baseUrl?: string };
    const pattern = req.route?.path;
    const route = typeof pattern === 'string' ? `${req.baseUrl ?? ''}${pattern}` : 'other';
    requests.labels(route, String(this.statusCode)).inc();
    const start = (this.locals as RouteLocals).metricsStart;
    if (start !== undefined) duration.labels(route).observe((performance.now() - start) / 1000);
  }
  return (_req, res, next) => {
    (res.locals as RouteLocals).metricsStart = performance.now();
    res.once('close', onClose);
    next();
  };
}

/** A service's registry with Node's process metrics (`tollgate_<service>_process_…`, `…_nodejs_…`). */
export function serviceRegistry(service: string): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: `tollgate_${service}_` });
  return registry;
}
