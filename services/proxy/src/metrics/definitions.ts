import { Counter, type Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound';

/**
 * The definitions of the proxy's own series (names, help, labels, buckets), registered in the order
 * the registry lists them. The per-request series bind their label children once (bound.ts): an
 * observation allocates nothing. Labels are bounded: routes are names, models and providers are the
 * catalog's, statuses are HTTP codes; never key, account or request ids.
 */

/** HTTP request durations: from a millisecond to two minutes (long streams). */
const REQUEST_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
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

const GENAI_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'];

/** What a request observes when its response closes: route timing, and a completion's. */
export type RequestSeries = ReturnType<typeof requestSeries>;

export function requestSeries(registry: Registry) {
  return {
    requests: new BoundCounter(
      'tollgate_proxy_requests_total',
      'HTTP requests answered, by route and status',
      ['route', 'status'],
      registry,
    ),
    duration: new BoundHistogram(
      'tollgate_proxy_request_duration_seconds',
      'Time from request to the end of the response (streams: until [DONE]), by route',
      ['route'],
      REQUEST_SECONDS,
      registry,
    ),
    completions: new BoundCounter(
      'tollgate_proxy_completions_total',
      'Chat completions answered, by model, provider (the one that served) and HTTP status',
      ['model', 'provider', 'status'],
      registry,
    ),
    overhead: new BoundHistogram(
      'tollgate_gateway_overhead_seconds',
      "The gateway's own time per chat completion: total time minus the time waiting on the provider",
      ['streamed'],
      OVERHEAD_SECONDS,
      registry,
    ),
    upstream: new BoundHistogram(
      'gen_ai_client_operation_duration_seconds',
      'Provider call duration as the gateway (client) saw it: first attempt sent to the end of the answer',
      [...GENAI_LABELS, 'error_type'],
      GENAI_SECONDS,
      registry,
    ),
    ttft: new BoundHistogram(
      'gen_ai_server_time_to_first_token_seconds',
      'Time from the request reaching the gateway to the first byte of the answer content',
      GENAI_LABELS,
      TTFT_SECONDS,
      registry,
    ),
  };
}

/** What a usage event handed to the publisher adds: tokens and cost by model. */
export function usageSeries(registry: Registry) {
  return {
    tokenUsage: new BoundHistogram(
      'gen_ai_client_token_usage',
      'Tokens per completion, by type (input = prompt, output = completion)',
      [...GENAI_LABELS, 'gen_ai_token_type'],
      TOKEN_BUCKETS,
      registry,
    ),
    cost: new BoundCounter(
      'tollgate_proxy_cost_usd_total',
      'Cost of completions (USD, as billed), by model; billing holds the exact figures',
      ['model', 'provider'],
      registry,
    ),
    events: new BoundCounter(
      'tollgate_proxy_usage_events_total',
      'Usage events handed to the publisher (one per billed completion)',
      [],
      registry,
    ),
  };
}

/** The spend guard's decisions and the pending holds its sweep expired. */
export type SpendSeries = ReturnType<typeof spendSeries>;

export function spendSeries(registry: Registry) {
  return {
    decisions: new BoundCounter(
      'tollgate_proxy_spend_decisions_total',
      'Spend guard admission decisions: admitted, untracked (no limit, postpaid), key_limit, credits, unavailable',
      ['decision'],
      registry,
    ),
    pendingExpired: new Counter({
      name: 'tollgate_proxy_spend_pending_holds_expired_total',
      help: "Pending spend holds (a settled request holds one on its key's hash if limited, one on its prepaid account's) dropped after 7 days uncounted by billing: usage that never reached billing (see the dead-letter queue)",
      registers: [registry],
    }),
  };
}
