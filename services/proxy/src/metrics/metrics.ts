import type { UsageEventV1 } from '@tollgate/events';
import type { RequestHandler } from 'express';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { SpendGuard } from '../spend/guard';
import { requestSeries, spendSeries, usageSeries } from './definitions';
import { PublisherGauges, type PublisherStatsSource } from './publisher-gauges';
import { ResponseObserver } from './responses';
import { instrumentGuard } from './spend-decisions';

export { routeName } from './responses';

export interface ProxyMetrics {
  registry: Registry;
  /** Express middleware: times every request; handlers name their route in res.locals.route. */
  track: RequestHandler;
  /**
   * What `track` records when the response closes, for a request served without express (the chat
   * door, http/doors.ts): its `locals` carry `route` and `metricsStart` like track's.
   */
  responseClosed(res: { locals: object; statusCode: number }): void;
  watchPublisher(source: PublisherStatsSource): void;
  /** A usage event was handed to the publisher (tokens and cost by model). */
  usageEvent(event: UsageEventV1): void;
  /** The spend guard with its decisions counted (admitted / untracked / key_limit / credits / unavailable). */
  instrumentGuard(guard: SpendGuard): SpendGuard;
  /** Pending spend holds an admission's sweep dropped after their 7-day bound (never billed). */
  pendingHoldsExpired(count: number): void;
}

/**
 * The proxy's Prometheus registry (served on the metrics port, never the public one; see
 * docs/operations.md "Metrics"), composed of its parts: the series' definitions (definitions.ts),
 * the per-request observer (responses.ts), the spend decisions (spend-decisions.ts) and the usage
 * publisher's queue gauges (publisher-gauges.ts).
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'tollgate_proxy_' });
  const responses = new ResponseObserver(requestSeries(registry));
  const usage = usageSeries(registry);
  const spend = spendSeries(registry);
  const publisher = new PublisherGauges(registry);
  return {
    registry,
    track: responses.track,
    responseClosed: (res) => responses.closed(res),
    watchPublisher: (source) => publisher.watch(source),
    pendingHoldsExpired: (count) => spend.pendingExpired.inc(count),
    usageEvent(event) {
      usage.events.inc();
      usage.tokenUsage.labels('chat', event.provider_name, event.model, 'input').observe(event.tokens.prompt);
      usage.tokenUsage
        .labels('chat', event.provider_name, event.model, 'output')
        .observe(event.tokens.completion);
      const usd = Number(event.cost);
      if (usd > 0) usage.cost.labels(event.model, event.provider_name).inc(usd);
    },
    instrumentGuard: (guard) => instrumentGuard(guard, spend),
  };
}
