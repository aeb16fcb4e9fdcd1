import type { RequestHandler, Response } from 'express';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** What the publisher exposes for the gauges (the @tollgate/events publisher's stats()). */
export interface PublisherStatsSource {
  stats(): { buffered: number; dropped: number; connected: boolean; spooled?: number; spoolBytes?: number };
  canAdmit?(): boolean;
}

export interface ProxyMetrics {
  registry: Registry;
  /** Express middleware: times every request; handlers name their route in res.locals.route. */
  track: RequestHandler;
  watchPublisher(source: PublisherStatsSource): void;
}

interface RouteLocals {
  route?: string;
  metricsStart?: bigint;
}

/** Names the route of a request for the metrics labels (never the raw path: bounded cardinality). */
export const routeName =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    (res.locals as RouteLocals).route = route;
    next();
  };

export function createMetrics(options: { defaultMetrics?: boolean } = {}): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'tollgate_proxy_' });
  const requests = new Counter({
    name: 'tollgate_proxy_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tollgate_proxy_request_duration_seconds',
    help: 'Time from request to the end of the response (streams: until [DONE]), by route',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  let publisher: PublisherStatsSource | null = null;
  new Gauge({
    name: 'tollgate_proxy_publisher_buffered_events',
    help: 'Usage events held in memory, not yet confirmed by RabbitMQ',
    registers: [registry],
    collect() {
      this.set(publisher?.stats().buffered ?? 0);
    },
  });
  new Gauge({
    name: 'tollgate_proxy_publisher_connected',
    help: '1 when the usage publisher has a channel to RabbitMQ',
    registers: [registry],
    collect() {
      this.set(publisher?.stats().connected ? 1 : 0);
    },
  });
  new Gauge({
    name: 'tollgate_proxy_publisher_spooled_events',
    help: "Usage events on the disk spool (fsync'd), waiting for RabbitMQ",
    registers: [registry],
    collect() {
      this.set(publisher?.stats().spooled ?? 0);
    },
  });
  new Gauge({
    name: 'tollgate_proxy_publisher_spool_bytes',
    help: 'Size of the disk spool; alarm well before SPOOL_MAX_BYTES',
    registers: [registry],
    collect() {
      this.set(publisher?.stats().spoolBytes ?? 0);
    },
  });
  new Gauge({
    name: 'tollgate_proxy_usage_admitting',
    help: '0 while billable requests are refused because usage events could be neither sent nor spooled',
    registers: [registry],
    collect() {
      this.set(publisher?.canAdmit ? (publisher.canAdmit() ? 1 : 0) : 1);
    },
  });
  // A counter whose value is read from the publisher at scrape time (it only grows).
  new Counter({
    name: 'tollgate_proxy_publisher_dropped_events_total',
    help: 'Usage events dropped because the publisher buffer was full',
    registers: [registry],
    collect() {
      const dropped = publisher?.stats().dropped ?? 0;
      this.reset();
      if (dropped > 0) this.inc(dropped);
    },
  });

  // Label children cached by route/status: prom-client hashes label objects on every call otherwise.
  const requestCounters = new Map<string, { inc(): void }>();
  const durationHistograms = new Map<string, { observe(v: number): void }>();
  const requestCounter = (route: string, status: number) => {
    const k = `${route} ${status}`;
    let child = requestCounters.get(k);
    if (!child) {
      child = requests.labels(route, String(status));
      requestCounters.set(k, child);
    }
    return child;
  };
  const durationHistogram = (route: string) => {
    let child = durationHistograms.get(route);
    if (!child) {
      child = duration.labels(route);
      durationHistograms.set(route, child);
    }
    return child;
  };

  // Hoisted: one listener function for every response (reads its state from res.locals).
  function onFinish(this: Response) {
    const locals = this.locals as RouteLocals;
    const route = locals.route ?? 'other';
    requestCounter(route, this.statusCode).inc();
    if (locals.metricsStart !== undefined) {
      durationHistogram(route).observe(Number(process.hrtime.bigint() - locals.metricsStart) / 1e9);
    }
  }

  return {
    registry,
    track(_req, res, next) {
      (res.locals as RouteLocals).metricsStart = process.hrtime.bigint();
      res.once('close', onFinish);
      next();
    },
    watchPublisher(source) {
      publisher = source;
    },
  };
}
