import { type ServiceSigner, serviceTokenSource } from '@tollgate/auth';
import { type KeyOwner, keyOwners } from '@tollgate/contracts';
import { createServiceClient } from '@tollgate/http';
import type { Logger } from '@tollgate/logger';

/**
 * Billing's view of who owns a key, asked of the keys service (`POST /internal/keys/owners`): billing
 * never reads keys' tables. A key never changes account, so `accountsOf` caches each answer for the
 * life of the process (bounded, oldest dropped first): the usage worker asks once per key, not per
 * event. `read` always asks (a caller's key may have been disabled a moment ago).
 */
export interface KeyOwners {
  /** key id → account id for the ids the keys service knows (unknown ids are absent). */
  accountsOf(ids: Iterable<string>): Promise<Map<string, string>>;
  /** The key as it is now (no cache), or null when no key has this id. */
  read(id: string): Promise<KeyOwner | null>;
  /** These keys as they are now (no cache; limits for threshold alerts); unknown ids are absent. */
  current(ids: readonly string[]): Promise<KeyOwner[]>;
  close(): Promise<void>;
}

/** Most key → account entries kept (≈100 bytes each). */
const CACHE_MAX = 200_000;
/** Ids per request to the keys service (its contract's bound). */
const CHUNK = 1000;

export function keysServiceOwners(options: {
  keysUrl: string;
  /** Billing's identity. */
  signer: ServiceSigner;
  timeoutMs?: number;
  logger?: Logger;
  cacheMax?: number;
}): KeyOwners {
  const keys = createServiceClient({
    service: 'keys',
    url: options.keysUrl,
    token: serviceTokenSource(options.signer, 'keys'),
    timeoutMs: options.timeoutMs ?? 3000,
    logger: options.logger,
    ownerErrors: 'unavailable',
  });
  const cacheMax = options.cacheMax ?? CACHE_MAX;
  const cache = new Map<string, string>();
  const remember = (id: string, accountId: string) => {
    if (cache.size >= cacheMax) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
    cache.set(id, accountId);
  };
  const ask = async (ids: string[]): Promise<KeyOwner[]> => {
    const answer = await keys.call({
      method: keyOwners.method,
      path: keyOwners.path,
      body: { ids },
      response: keyOwners.response,
    });
    return answer.data;
  };

  return {
    async accountsOf(ids) {
      const out = new Map<string, string>();
      const wanted = new Set<string>();
      for (const id of ids) {
        const accountId = cache.get(id);
        if (accountId !== undefined) out.set(id, accountId);
        else wanted.add(id);
      }
      const missing = [...wanted];
      for (let i = 0; i < missing.length; i += CHUNK) {
        for (const k of await ask(missing.slice(i, i + CHUNK))) {
          remember(k.id, k.accountId);
          out.set(k.id, k.accountId);
        }
      }
      return out;
    },
    async read(id) {
      const [key] = await ask([id]);
      if (key) remember(key.id, key.accountId);
      return key ?? null;
    },
    async current(ids) {
      const out: KeyOwner[] = [];
      for (let i = 0; i < ids.length; i += CHUNK) out.push(...(await ask(ids.slice(i, i + CHUNK))));
      return out;
    },
    close: () => keys.close(),
  };
}
