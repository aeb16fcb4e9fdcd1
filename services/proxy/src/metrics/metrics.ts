import type { UsageEventV1 } from '@tollgate/events';
import type { RequestHandler, Response } from 'express';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Completion } from '../pipeline/completion';
import { KeyRateLimited, type SpendGuard, StaleKeyRecord } from '../spend/guard';
import { BoundCounter, BoundHistogram } from './bound';

/** What the publisher exposes for the gauges (the @tollgate/events publisher's stats()). */
interface PublisherStatsSource {
  stats(): {
    buffered: number;
    dropped: number;
    connected: boolean;
    published?: number;
    spooled?: number;
    spoolBytes?: number;
  };
  canAdmit?(): boolean;
}

/**
 * What the metrics read of a completion when its response closes (set by the pipeline's admit stage):
 * upstreamStartedAt / upstreamEndedAt, performance.now() when the first upstream attempt was sent and
 * when the upstream body ended; firstTokenAt, of the first byte of the answer's content (0: none).
 */
type CompletionTiming = Pick<
  Completion,
  'model' | 'provider' | 'request' | 'upstreamStartedAt' | 'upstreamEndedAt' | 'firstTokenAt'
>;

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

interface RouteLocals {
  route?: string;
  /** performance.now() at the start of the request. */
  metricsStart?: number;
  /** The completion of a door request (its timing is read at close). */
  completion?: CompletionTiming;
}

/** Names the route of a request for the metrics labels (never the raw path: bounded cardinality). */
export const routeName =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    (res.locals as RouteLocals).route = route;
    next();
  };

/** OpenTelemetry GenAI duration buckets (semantic conventions: gen_ai.client.operation.duration). */
const GENAI_SECONDS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/** OpenTelemetry GenAI time-to-first-token buckets (gen_ai.server.time_to_first_token). */
const TTFT_SECONDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** OpenTelemetry GenAI token buckets (gen_ai.client.token.usage). */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216];
/** The gateway's own time: sub-millisecond resolution where it matters. */
const OVERHEAD_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25,
  0.5, 1,
];

/**
 * The proxy's Prometheus registry (served on the metrics port, never the public one; see
 * docs/operations.md "Metrics"). Labels are bounded: routes are names, models and providers are the
 * catalog's, statuses are HTTP codes; never key, account or request ids.
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): ProxyMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'tollgate_proxy_' });
  // The per-request metrics bind their label children once (bound.ts): an observation allocates nothing.
  const requests = new BoundCounter(
    'tollgate_proxy_requests_total',
    'HTTP requests answered, by route and status',
    ['route', 'status'],
    registry,
  );
  const duration = new BoundHistogram(
    'tollgate_proxy_request_duration_seconds',
    'Time from request to the end of the response (streams: until [DONE]), by route',
    ['route'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registry,
  );
  const completions = new BoundCounter(
    'tollgate_proxy_completions_total',
    'Chat completions answered, by model, provider (the one that served) and HTTP status',
    ['model', 'provider', 'status'],
    registry,
  );
  const overhead = new BoundHistogram(
    'tollgate_gateway_overhead_seconds',
    "The gateway's own time per chat completion: total time minus the time waiting on the provider",
    ['streamed'],
    OVERHEAD_SECONDS,
    registry,
  );
  const upstream = new BoundHistogram(
    'gen_ai_client_operation_duration_seconds',
    'Provider call duration as the gateway (client) saw it: first attempt sent to the end of the answer',
    ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'error_type'],
    GENAI_SECONDS,
    registry,
  );
  const ttft = new BoundHistogram(
    'gen_ai_server_time_to_first_token_seconds',
    'Time from the request reaching the gateway to the first byte of the answer content',
    ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'],
    TTFT_SECONDS,
    registry,
  );
  const tokenUsage = new BoundHistogram(
    'gen_ai_client_token_usage',
    'Tokens per completion, by type (input = prompt, output = completion)',
    ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_token_type'],
    TOKEN_BUCKETS,
    registry,
  );
  const cost = new BoundCounter(
    'tollgate_proxy_cost_usd_total',
    'Cost of completions (USD, as billed), by model; billing holds the exact figures',
    ['model', 'provider'],
    registry,
  );
  const usageEvents = new BoundCounter(
    'tollgate_proxy_usage_events_total',
    'Usage events handed to the publisher (one per billed completion)',
    [],
    registry,
  );
  const spend = new BoundCounter(
    'tollgate_proxy_spend_decisions_total',
    'Spend guard admission decisions: admitted, untracked (no limit, postpaid), key_limit, credits, unavailable',
    ['decision'],
    registry,
  );

  const pendingExpired = new Counter({
    name: 'tollgate_proxy_spend_pending_holds_expired_total',
    help: "Pending spend holds (a settled request holds one on its key's hash if limited, one on its prepaid account's) dropped after 7 days uncounted by billing: usage that never reached billing (see the dead-letter queue)",
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
  // Counters whose value is read from the publisher at scrape time (they only grow).
  const fromStats = (
    name: string,
    help: string,
    read: (s: ReturnType<PublisherStatsSource['stats']>) => number,
  ) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const value = publisher ? read(publisher.stats()) : 0;
        this.reset();
        if (value > 0) this.inc(value);
      },
    });
  fromStats(
    'tollgate_proxy_publisher_dropped_events_total',
    'Usage events dropped because the publisher buffer was full',
    (s) => s.dropped,
  );
  fromStats(
    'tollgate_proxy_publisher_confirmed_events_total',
    'Usage events RabbitMQ confirmed (persisted to the queue)',
    (s) => s.published ?? 0,
  );

  /** HTTP statuses as label values, made once each. */
  const statusText: string[] = [];
  const statusLabel = (status: number): string => {
    let text = statusText[status];
    if (text === undefined) {
      text = String(status);
      statusText[status] = text;
    }
    return text;
  };

  /** The completion's timings, read when its response closes. */
  function observeCompletion(c: CompletionTiming, status: number, start: number, end: number): void {
    const model = c.model.id;
    const provider = c.provider.name;
    completions.labels(model, provider, statusLabel(status)).inc();
    if (c.upstreamStartedAt > 0) {
      const upstreamEnd = c.upstreamEndedAt > 0 ? c.upstreamEndedAt : end;
      const waited = upstreamEnd - c.upstreamStartedAt;
      upstream
        .labels('chat', provider, model, status < 400 ? '' : statusLabel(status))
        .observe(waited / 1000);
      overhead.labels(c.request.stream ? 'true' : 'false').observe(Math.max(0, end - start - waited) / 1000);
    }
    if (c.firstTokenAt > 0 && status < 400)
      ttft.labels('chat', provider, model).observe((c.firstTokenAt - start) / 1000);
  }

  function responseClosed(res: { locals: object; statusCode: number }): void {
    const locals = res.locals as RouteLocals;
    const route = locals.route ?? 'other';
    const status = res.statusCode;
    requests.labels(route, statusLabel(status)).inc();
    const start = locals.metricsStart;
    if (start === undefined) return;
    const end = performance.now();
    duration.labels(route).observe((end - start) / 1000);
    if (locals.completion) observeCompletion(locals.completion, status, start, end);
  }
  // Hoisted: one listener function for every response (reads its state from res.locals).
  function onFinish(this: Response) {
    responseClosed(this);
  }

  return {
    registry,
    track(_req, res, next) {
      (res.locals as RouteLocals).metricsStart = performance.now();
      res.once('close', onFinish);
      next();
    },
    responseClosed,
    watchPublisher(source) {
      publisher = source;
    },
    pendingHoldsExpired(count) {
      pendingExpired.inc(count);
    },
    usageEvent(event) {
      usageEvents.inc();
      tokenUsage.labels('chat', event.provider_name, event.model, 'input').observe(event.tokens.prompt);
      tokenUsage.labels('chat', event.provider_name, event.model, 'output').observe(event.tokens.completion);
      const usd = Number(event.cost);
      if (usd > 0) cost.labels(event.model, event.provider_name).inc(usd);
    },
    instrumentGuard(guard) {
      return {
        checks: guard.checks,
        async admit(input) {
          try {
            const reservation = await guard.admit(input);
            spend.labels(reservation ? 'admitted' : 'untracked').inc();
            return reservation;
          } catch (err) {
            // A recalled key record's check: no spend decision was made (the request is authenticated
            // afresh, or refused by its rate limit).
            if (err instanceof StaleKeyRecord || err instanceof KeyRateLimited) throw err;
            const type = (err as { type?: unknown }).type;
            spend
              .labels(
                type === 'key_limit_exceeded'
                  ? 'key_limit'
                  : type === 'team_limit_exceeded'
                    ? 'team_limit'
                    : type === 'payment_required'
                      ? 'credits'
                      : type === 'rate_limited'
                        ? 'token_rate'
                        : 'unavailable',
              )
              .inc();
            throw err;
          }
        },
        settle: (reservation, costUnits, tokensUsed) => guard.settle(reservation, costUnits, tokensUsed),
        flush: () => guard.flush?.() ?? Promise.resolve(),
      };
    },
  };
}
