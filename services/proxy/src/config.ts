import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  commonEnv,
  envPort,
  loadConfig as load,
  redisEnv,
  refuseDevSecretInProduction,
  servicePrivateKeyEnv,
} from '@tollgate/config';
// The packages' own files, not their indexes: a cluster primary loads this module too, and the
// indexes import amqplib, express and undici (≈ 25 MB of RSS in a process that never serves).
import { usagePartitionsEnv } from '@tollgate/events/partition';
import { trustedProxiesEnv } from '@tollgate/http/client-address';
import { metricsEnv } from '@tollgate/metrics';
import { z } from 'zod';
import { compilePatterns, DEFAULT_REDACT_PATTERNS } from './bodies/redact';

/** The dev catalog of the repo, resolved relative to this file (works from any cwd). */
export const DEFAULT_CATALOG_PATH = fileURLToPath(
  new URL('../../../infra/catalog/dev.yaml', import.meta.url),
);

const url = z.string().url();

/** BODIES_REDACT: a JSON array of valid regular expressions, compiled once (bodies/redact.ts). */
const bodiesRedact = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    try {
      const sources: unknown =
        raw === undefined || raw.trim() === '' ? DEFAULT_REDACT_PATTERNS : JSON.parse(raw);
      if (!Array.isArray(sources) || !sources.every((s) => typeof s === 'string' && s.length > 0)) {
        throw new Error('expected a JSON array of non-empty regular expression strings');
      }
      return compilePatterns(sources);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
const positiveMs = z.coerce.number().int().positive();

export const proxyEnv = z
  .object({
    ...commonEnv,
    ...redisEnv,
    ...servicePrivateKeyEnv('proxy'),
    PORT: envPort(8080),
    HOST: z.string().min(1).default('0.0.0.0'),
    /** Which X-Forwarded-For entries name the client (hop count or CIDRs; @tollgate/http client-address). */
    ...trustedProxiesEnv,
    /** Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT), never on PORT. */
    ...metricsEnv(9464),
    AMQP_URL: url.default('amqp://guest:guest@127.0.0.1:5672'),
    /** Prefix of the usage exchange and queues (see @tollgate/events usageTopology). */
    AMQP_PREFIX: z.string().min(1).default('tollgate'),
    /**
     * Usage partitions: each event goes to queue `usagePartition(account, N)` (@tollgate/events), so
     * billing workers share the load while an account's events stay in order. Billing's value must
     * be the same (docs/operations.md "Usage partitions": drain, then switch).
     */
    USAGE_PARTITIONS: usagePartitionsEnv,
    KEYS_URL: url.default('http://127.0.0.1:8081'),
    BILLING_URL: url.default('http://127.0.0.1:8082'),
    CATALOG_PATH: z.string().min(1).default(DEFAULT_CATALOG_PATH),
    /** SSE comment sent while a stream has been silent this long (slow first token). */
    KEEPALIVE_INTERVAL_MS: positiveMs.default(15_000),
    /** Upstream time to response headers, and the longest silence inside a response body. */
    UPSTREAM_TIMEOUT_MS: positiveMs.default(120_000),
    /** Timeout of calls to the keys and billing services. */
    SERVICE_TIMEOUT_MS: positiveMs.default(5_000),
    /** How long SIGTERM waits for in-flight requests before cutting them. */
    SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
    /** Usage events held in memory before further ones go to the disk spool. */
    PUBLISHER_MAX_BUFFERED: z.coerce.number().int().positive().default(100_000),
    /** Most usage events per AMQP message (`usage.batch.v1`); 1 = one message per event. */
    PUBLISHER_EVENTS_PER_MESSAGE: z.coerce.number().int().min(1).max(1000).default(100),
    /** How long an event waits for others to share its message, ms (0 = the current event-loop turn only). */
    PUBLISHER_LINGER_MS: z.coerce.number().int().min(0).max(1000).default(5),
    /**
     * The service's state directory (what must outlive a restart: the usage spool). Default
     * `$XDG_STATE_HOME/tollgate/proxy`, else `~/.local/state/tollgate/proxy`; the image sets
     * /var/lib/tollgate.
     */
    STATE_DIR: z.string().min(1).optional(),
    /**
     * Base directory of the durable usage-event spool (events RabbitMQ cannot take are fsync'd here
     * and replayed). Default `<STATE_DIR>/spool`; in production a persistent volume. The segments are
     * in its private (0700) subdirectory `<AMQP_PREFIX>/`, and only those are replayed.
     */
    SPOOL_DIR: z.string().min(1).optional(),
    /** Size bound of the spool; beyond it (with RabbitMQ away) new billable requests get 503. */
    SPOOL_MAX_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(1024 * 1024 * 1024),
    /** Maximum JSON body of a chat completion request. */
    BODY_LIMIT: z
      .string()
      .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/i, 'expected a size like 10mb')
      .default('10mb'),
    /**
     * Spend limits and credits (packages/spend): `redis` checks the Redis spend counters before each
     * completion (rebuilt through billing at BILLING_URL when missing); `off` admits everything
     * (tests with a billing stand-in only).
     */
    SPEND_GUARD: z.enum(['redis', 'off']).default('redis'),
    /**
     * Public-edge deadlines and caps (issue 14; docs/operations.md "Security"). Time to receive a
     * request's headers; to receive the whole request; idle time of a keep-alive connection between
     * requests (65 s: above the 60 s idle timeout of the usual load balancers, which must close an
     * idle connection before the server does or they may send a request onto a closing one: 502);
     * and inactivity of a socket while a request is open (must exceed UPSTREAM_TIMEOUT_MS: a
     * non-streamed answer may take that long to start).
     */
    SERVER_HEADERS_TIMEOUT_MS: positiveMs.default(10_000),
    SERVER_REQUEST_TIMEOUT_MS: positiveMs.default(60_000),
    SERVER_KEEPALIVE_TIMEOUT_MS: positiveMs.default(65_000),
    SERVER_SOCKET_TIMEOUT_MS: positiveMs.default(180_000),
    /**
     * Open client connections served per process (0: no cap of its own); at most the open-files limit
     * less a reserve and the provider connections, whatever this says. Past it: 503 (connection-cap.ts).
     */
    SERVER_MAX_CONNECTIONS: z.coerce.number().int().min(0).default(10_000),
    /**
     * Connections the kernel queues for the process to accept (listen backlog; Linux caps it at
     * net.core.somaxconn). Node's default, 511, drops the connections of a burst beyond it (2,000
     * agent streams opened in a second): their clients retry after 1, 3, 7 s (SYN retransmits),
     * which is where a burst's first bytes took 14 s (issue 30). Queued, they wait only their turn.
     */
    SERVER_LISTEN_BACKLOG: z.coerce.number().int().positive().default(4096),
    /**
     * Listening sockets per process on PORT (SO_REUSEPORT, Linux): libuv accepts one connection per
     * socket per event-loop wake-up, so a process busy with streams took a burst of new connections
     * at a few hundred a second with one (issue 30). 1: one socket, without SO_REUSEPORT.
     */
    SERVER_ACCEPT_SOCKETS: z.coerce
      .number()
      .int()
      .min(1)
      .max(64)
      .default(process.platform === 'linux' ? 8 : 1),
    /**
     * A streaming client that does not read for this long (its socket buffer stays full) is cut:
     * the upstream request is aborted and what was produced is billed, marked cancelled.
     */
    STREAM_WRITE_TIMEOUT_MS: positiveMs.default(30_000),
    /** Longest a completion (streamed or not) may run; then it ends with a 504 timeout error. */
    COMPLETION_MAX_DURATION_MS: positiveMs.default(900_000),
    /**
     * A client that goes away after a provider accepted its request: the provider's answer is read on
     * (discarded) this long for its usage, which is billed (0 = abort at once and bill the upper bound).
     */
    CANCEL_DRAIN_MS: z.coerce.number().int().min(0).default(30_000),
    /** Most image parts one completion request may carry; more is a 400 naming this setting. */
    MAX_IMAGES_PER_REQUEST: z.coerce.number().int().positive().default(100),
    /** Most providers tried for one request before its first byte (failover), the first included. */
    ROUTING_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(4),
    /** Failover stops trying new candidates this long after the request started. */
    ROUTING_DEADLINE_MS: positiveMs.default(30_000),
    /** Consecutive failed attempts that open a provider's circuit (it is skipped while others exist). */
    CIRCUIT_FAILURE_THRESHOLD: z.coerce.number().int().min(1).default(3),
    /** How long an open circuit skips the provider before one probe request tries it again. */
    CIRCUIT_COOLDOWN_MS: positiveMs.default(30_000),
    /** Chat completions one key may have in flight in this process (0 = no limit); more get 429. */
    MAX_CONCURRENT_COMPLETIONS_PER_KEY: z.coerce.number().int().min(0).default(64),
    /**
     * Chat completions one account (all its keys) may have in flight in this process (0 = no limit);
     * more get 429. Half of UPSTREAM_CONNECTIONS' default: keys are free to mint, so without it one
     * account could hold every connection to a provider. Single-tenant deployments may raise it.
     */
    MAX_CONCURRENT_COMPLETIONS_PER_ACCOUNT: z.coerce.number().int().min(0).default(128),
    /** Connections per provider origin, and requests that may wait for one; beyond: 503 at once. */
    UPSTREAM_CONNECTIONS: z.coerce.number().int().positive().default(256),
    UPSTREAM_MAX_QUEUED: z.coerce.number().int().min(0).default(256),
    /**
     * Lookups of keys that turn out unknown, per client address per minute; beyond, requests from
     * that address whose key is not cached get 429 without a keys-service call (0 = no limit).
     */
    UNKNOWN_KEY_LOOKUPS_PER_MINUTE: z.coerce.number().int().min(0).default(60),
    /**
     * All clients together (this process): lookups of unknown keys per second, and the burst allowed
     * above that rate (a token bucket sized to what the keys service absorbs, divided among the proxy
     * processes). Beyond, requests whose key is not cached get 429 without a keys-service call.
     * 0 = no global bound.
     */
    UNKNOWN_KEY_LOOKUPS_PER_SECOND: z.coerce.number().min(0).default(100),
    UNKNOWN_KEY_LOOKUP_BURST: z.coerce.number().int().min(1).default(200),
    /** Key lookups waiting on the keys service at once; beyond, 503 at once. */
    KEY_LOOKUP_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(256),
    /** node:cluster workers (1 = no cluster). */
    WORKERS: z.coerce.number().int().min(1).max(256).default(1),
    /**
     * Opt-in bodies (issue 28; only for keys with `store_bodies`): most UTF-8 bytes kept of a prompt,
     * and of an answer (then a truncation marker), and the patterns redacted before they leave the
     * proxy — a JSON array of regular expressions (flags `gu`); unset: API keys, bearer tokens and
     * e-mail addresses (bodies/redact.ts); `[]`: none.
     */
    BODIES_MAX_BYTES: z.coerce.number().int().min(256).max(262_144).default(32_768),
    BODIES_REDACT: bodiesRedact,
  })
  .superRefine(refuseDevSecretInProduction)
  .superRefine((c, ctx) => {
    if (c.SERVER_SOCKET_TIMEOUT_MS <= c.UPSTREAM_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SERVER_SOCKET_TIMEOUT_MS'],
        message:
          'must be greater than UPSTREAM_TIMEOUT_MS (a non-streamed answer may take that long to start)',
      });
    }
  });

export type ProxyConfig = z.output<typeof proxyEnv>;

/** The proxy's state directory: STATE_DIR, else the user's XDG state directory (never a shared /tmp). */
export function stateDir(
  config: Pick<ProxyConfig, 'STATE_DIR'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (config.STATE_DIR) return config.STATE_DIR;
  const base = env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'tollgate', 'proxy');
}

/** The base directory of the usage spool (SPOOL_DIR, else `<state dir>/spool`). */
export const spoolDir = (config: Pick<ProxyConfig, 'STATE_DIR' | 'SPOOL_DIR'>): string =>
  config.SPOOL_DIR ?? join(stateDir(config), 'spool');

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ProxyConfig {
  return load(proxyEnv, env);
}

/**
 * The environment that loads back into `config` (a test starting a second proxy like a first one):
 * every value as its env text — the redaction patterns as the JSON array of their sources, an absent
 * value as empty.
 */
export function configEnv(config: ProxyConfig): Record<string, string> {
  const text = (v: unknown): string => {
    if (v === undefined || v === null) return '';
    if (Array.isArray(v) && v.length > 0 && v.every((x) => x instanceof RegExp))
      return JSON.stringify(v.map((x: RegExp) => x.source));
    return String(v);
  };
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, text(v)]));
}
