import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { resolveKey } from '@tollgate/contracts';
import { AppError } from '@tollgate/errors';
import { createServiceClient } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';

/** Asks the keys service for a key record on a cache miss (contract `resolveKey` in @tollgate/contracts). */
export interface KeyResolver {
  /** The record (disabled/revoked ones included) or null for an unknown digest. Throws 503 if unreachable. */
  resolve(digest: string): Promise<CachedKey | null>;
  close(): Promise<void>;
}

const UNAVAILABLE = 'Key service unavailable, try again shortly';

/**
 * `maxInFlight` bounds the lookups waiting on the keys service (default 256): beyond, 503 at once
 * instead of an unbounded queue in front of a slow or overloaded keys service.
 */
export function createKeyResolver(options: {
  url: string;
  /** The proxy's identity. */
  signer: ServiceSigner;
  timeoutMs: number;
  maxInFlight?: number;
  logger?: Logger;
}): KeyResolver {
  const maxInFlight = options.maxInFlight ?? 256;
  let inFlight = 0;
  const keys = createServiceClient({
    service: 'keys',
    url: options.url,
    token: serviceTokenSource(options.signer, 'keys'),
    timeoutMs: options.timeoutMs,
    connections: 16,
    logger: options.logger,
    ownerErrors: 'unavailable',
    unavailableMessage: UNAVAILABLE,
  });
  return {
    async resolve(digest) {
      if (inFlight >= maxInFlight)
        throw new AppError('service_unavailable', UNAVAILABLE, { service: 'keys' });
      inFlight++;
      try {
        const answer = await keys.call({
          method: resolveKey.method,
          path: resolveKey.path,
          body: { digest },
          response: resolveKey.response,
          nullOn404: true,
        });
        return answer?.data ?? null;
      } finally {
        inFlight--;
      }
    },
    close: () => keys.close(),
  };
}
