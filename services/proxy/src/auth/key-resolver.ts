import { serviceTokenSource } from '@tollgate/auth';
import { resolveKey } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { CachedKey } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';

/** Asks the keys service for a key record on a cache miss (contract `resolveKey` in @tollgate/contracts). */
export interface KeyResolver {
  /** The record (disabled/revoked ones included) or null for an unknown digest. Throws 503 if unreachable. */
  resolve(digest: string): Promise<CachedKey | null>;
  close(): Promise<void>;
}

export function createKeyResolver(options: {
  url: string;
  secret: string;
  timeoutMs: number;
  logger?: Logger;
}): KeyResolver {
  const keys = createServiceClient({
    service: 'keys',
    url: options.url,
    token: serviceTokenSource(options.secret, 'proxy'),
    timeoutMs: options.timeoutMs,
    connections: 16,
    logger: options.logger,
    ownerErrors: 'unavailable',
    unavailableMessage: 'Key service unavailable, try again shortly',
  });
  return {
    async resolve(digest) {
      const answer = await keys.call({
        method: resolveKey.method,
        path: resolveKey.path,
        body: { digest },
        response: resolveKey.response,
        nullOn404: true,
      });
      return answer?.data ?? null;
    },
    close: () => keys.close(),
  };
}
