import { SERVICE_TOKEN_HEADER, signServiceToken } from '@tollgate/auth';
import { AppError } from '@tollgate/errors';
import type { CachedKey } from '@tollgate/key-cache';
import { Pool } from 'undici';

/** Asks the keys service for a key record on a cache miss (contracts.md "Proxy → keys"). */
export interface KeyResolver {
  /** The record (disabled/revoked ones included) or null for an unknown digest. Throws 503 if unreachable. */
  resolve(digest: string): Promise<CachedKey | null>;
  close(): Promise<void>;
}

/** Re-signs the service token when it is half-way through its 60 s life: one HMAC per 30 s, not per call. */
export function serviceTokenSource(secret: string, service = 'proxy'): () => string {
  let token = '';
  let expiresAt = 0;
  return () => {
    const now = Date.now();
    if (now >= expiresAt) {
      token = signServiceToken({ kind: 'service', service }, secret, 60);
      expiresAt = now + 30_000;
    }
    return token;
  };
}

const unavailable = () => new AppError('service_unavailable', 'Key service unavailable, try again shortly');

function isCachedKey(v: unknown): v is CachedKey {
  const k = v as Partial<CachedKey> | null;
  return (
    typeof k === 'object' &&
    k !== null &&
    typeof k.id === 'string' &&
    typeof k.accountId === 'string' &&
    (k.scope === 'inference' || k.scope === 'management') &&
    typeof k.disabled === 'boolean' &&
    typeof k.revoked === 'boolean'
  );
}

/**
 * `maxInFlight` bounds the lookups waiting on the keys service (default 256): beyond, 503 at once
 * instead of an unbounded queue in front of a slow or overloaded keys service.
 */
export function createKeyResolver(options: {
  url: string;
  secret: string;
  timeoutMs: number;
  maxInFlight?: number;
}): KeyResolver {
  const maxInFlight = options.maxInFlight ?? 256;
  let inFlight = 0;
  const pool = new Pool(options.url, {
    connections: 16,
    keepAliveTimeout: 30_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: options.timeoutMs,
  });
  const token = serviceTokenSource(options.secret);
  return {
    async resolve(digest) {
      if (inFlight >= maxInFlight) throw unavailable();
      inFlight++;
      try {
        return await resolveOnce(digest);
      } finally {
        inFlight--;
      }
    },
    close: () => pool.close(),
  };

  async function resolveOnce(digest: string): Promise<CachedKey | null> {
    let res: Awaited<ReturnType<Pool['request']>>;
    try {
      res = await pool.request({
        method: 'POST',
        path: '/internal/keys/resolve',
        headers: { 'content-type': 'application/json', [SERVICE_TOKEN_HEADER]: token() },
        body: JSON.stringify({ digest }),
      });
    } catch {
      throw unavailable();
    }
    if (res.statusCode === 404) {
      await res.body.dump();
      return null;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw unavailable();
    }
    let body: { data?: unknown };
    try {
      body = (await res.body.json()) as { data?: unknown };
    } catch {
      throw unavailable();
    }
    if (!isCachedKey(body.data)) throw unavailable();
    return body.data;
  }
}
