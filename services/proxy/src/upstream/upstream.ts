import { AppError } from '@tollgate/errors';
import { Pool } from 'undici';
import { wireFormatOf } from '../providers';
import type { WireFormatName } from '../providers/wire-format';

/**
 * One keep-alive undici Pool per provider origin. The provider's base URL may carry a path
 * (`https://api.openai.com/v1`); the path and headers of a request are its wire format's
 * (providers/: `<base path>/chat/completions` with a Bearer key, or `<base path>/messages` with
 * `x-api-key` and `anthropic-version`).
 */
export interface ProviderEndpoint {
  name: string;
  baseUrl: string;
  apiKey?: string | undefined;
  format?: WireFormatName;
}

export interface UpstreamTarget {
  pool: Pool;
  path: string;
  /** Request headers, built once per provider. */
  headers: Record<string, string>;
  /** Requests in flight to the pool's origin (shared by every provider on it) and their cap. */
  load: { inFlight: number; limit: number };
}

export interface UpstreamOptions {
  timeoutMs: number;
  /** Connections per origin (default 256). */
  connections?: number;
  /** Requests that may wait for a connection beyond those (default 256); more fail at once with 503. */
  maxQueued?: number;
}

export class Upstreams {
  private readonly pools = new Map<string, Pool>();
  private readonly loads = new Map<string, UpstreamTarget['load']>();
  private readonly targets = new Map<string, UpstreamTarget>();

  constructor(private readonly options: UpstreamOptions) {}

  /** The target for `provider` with one of its API keys (default its first). */
  target(provider: ProviderEndpoint, apiKey: string | undefined = provider.apiKey): UpstreamTarget {
    const cacheKey = `${provider.name}\u0000${provider.baseUrl}\u0000${apiKey ?? ''}`;
    let target = this.targets.get(cacheKey);
    if (target) return target;
    const base = new URL(provider.baseUrl);
    const connections = this.options.connections ?? 256;
    let pool = this.pools.get(base.origin);
    let load = this.loads.get(base.origin);
    if (!pool || !load) {
      load = { inFlight: 0, limit: connections + (this.options.maxQueued ?? 256) };
      this.loads.set(base.origin, load);
      pool = new Pool(base.origin, {
        connections,
        keepAliveTimeout: 30_000,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
        connectTimeout: Math.min(this.options.timeoutMs, 10_000),
      });
      this.pools.set(base.origin, pool);
    }
    const format = wireFormatOf(provider.format);
    target = { pool, path: format.path(provider.baseUrl), headers: format.headers(apiKey), load };
    this.targets.set(cacheKey, target);
    return target;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }
}

/**
 * A request body's bytes in a buffer of their own, for undici, which keeps the body for the
 * request's whole life (a stream's: seconds to minutes). Given a string, undici encodes it with
 * `Buffer.from`, a slice of Node's shared allocation pool (`Buffer.poolSize`, 64 KB on Node 24):
 * each open stream's few hundred bytes of body then kept a whole 64 KB slab alive, with everything
 * else allocated from it meanwhile (≈ 2.4 KB of slab per stream at 1,000 open streams, heap
 * snapshot; bench/README.md "Memory per open stream").
 */
export function ownedBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/**
 * Takes one request slot of the target's origin, or throws 503 `service_unavailable` when every
 * connection is busy and the wait queue is full (fail fast instead of queueing without bound).
 * Returns the release function (call exactly once).
 */
export function acquireUpstream(target: UpstreamTarget, providerName: string): () => void {
  const load = target.load;
  if (load.inFlight >= load.limit) {
    throw new AppError('service_unavailable', `Provider ${providerName} is at capacity; retry later`, {
      provider_name: providerName,
    });
  }
  load.inFlight++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    load.inFlight--;
  };
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

export const isAbortError = (err: unknown): boolean =>
  (err as { name?: string } | null)?.name === 'AbortError' ||
  (err as { code?: string } | null)?.code === 'UND_ERR_ABORTED';

/** Maps an undici failure (connect, timeout, socket) to the gateway error of DESIGN.md (502/504). */
export function transportError(err: unknown, providerName: string): AppError {
  const code = (err as { code?: string } | null)?.code;
  if (code && TIMEOUT_CODES.has(code)) {
    return new AppError('timeout', `Provider ${providerName} timed out`, { provider_name: providerName });
  }
  return new AppError('provider_error', `Provider ${providerName} is unreachable or closed the connection`, {
    provider_name: providerName,
  });
}

/** Reads at most `limit` bytes of an error body (it is only used for its message). */
export async function readSome(body: AsyncIterable<Uint8Array> & { destroy?(): void }, limit = 64 * 1024) {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      parts.push(Buffer.from(chunk));
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // a broken error body still yields the status
  }
  return Buffer.concat(parts).toString('utf8');
}
