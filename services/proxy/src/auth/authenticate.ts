import { digestKey, type KeyScope, looksLikeKey } from '@tollgate/auth';
import { AppError, forbiddenScope, unauthorized } from '@tollgate/errors';
import type { CachedKey, KeyCache } from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { KeyResolver } from './key-resolver';
import type { UnknownKeyLimiter } from './unknown-keys';

/**
 * Authentication on the hot path: sha256 of the bearer key, one Redis HMGET through the key cache,
 * and only on a miss/pending/Redis failure a call to the keys service. No in-process cache of key
 * records: a disabled or revoked key is refused on its very next request.
 */
export interface Authenticator {
  /** `client`: the caller's address, for the unknown-key rate limit. */
  authenticate(authorization: string | undefined, client?: string): Promise<CachedKey>;
}

export interface AuthDeps {
  keyCache: KeyCache;
  resolver: KeyResolver;
  /** For the fire-and-forget last-used write. */
  redis: Redis;
  lastUsedKey: string;
  logger: Logger;
  /**
   * At most one last-used write per key per this many ms (default 1000). The keys service flushes
   * every few seconds anyway, so this loses no precision that reaches Postgres and takes a Redis
   * round trip off almost every request of a busy key.
   */
  lastUsedIntervalMs?: number;
  now?: () => number;
  /** Rate limit of lookups that find no key, per client address (none when absent). */
  unknownKeys?: UnknownKeyLimiter;
}

/** Bounds the coalescing map; clearing it only costs one extra write per active key. */
const LAST_USED_TRACKED_MAX = 100_000;

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export function bearerKey(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = BEARER.exec(authorization);
  return m?.[1] ?? null;
}

export function createAuthenticator(deps: AuthDeps): Authenticator {
  const { keyCache, resolver, redis, lastUsedKey, logger } = deps;
  const intervalMs = deps.lastUsedIntervalMs ?? 1000;
  const now = deps.now ?? Date.now;
  const onLastUsedError = (err: unknown) => logger.warn({ err }, 'could not record key last use');
  const lastWritten = new Map<string, number>();

  /** Fire-and-forget (auto-pipelined by ioredis); the keys service flushes it to last_used_at. */
  function recordLastUse(keyId: string): void {
    const t = now();
    const previous = lastWritten.get(keyId);
    if (previous !== undefined && t - previous < intervalMs) return;
    if (lastWritten.size >= LAST_USED_TRACKED_MAX) lastWritten.clear();
    lastWritten.set(keyId, t);
    redis.hset(lastUsedKey, keyId, t).catch(onLastUsedError);
  }

  const unknownKeys = deps.unknownKeys;

  async function lookup(digest: string, client: string): Promise<CachedKey | null> {
    try {
      const hit = await keyCache.get(digest);
      if (hit.state === 'hit') return hit.key;
      if (hit.state === 'absent') return null;
    } catch (err) {
      logger.warn({ err }, 'key cache unavailable, asking the keys service');
    }
    if (unknownKeys?.blocked(client)) {
      throw new AppError(
        'rate_limited',
        'Too many requests with unknown API keys from this address; retry in a minute',
        { reason: 'unknown_keys' },
      );
    }
    const record = await resolver.resolve(digest);
    if (record === null) unknownKeys?.recordUnknown(client);
    return record;
  }

  return {
    async authenticate(authorization, client = '') {
      const key = bearerKey(authorization);
      if (key === null)
        throw unauthorized('Missing or malformed Authorization header (expected "Bearer <key>")');
      if (!looksLikeKey(key)) throw unauthorized('Invalid API key');
      const record = await lookup(digestKey(key), client);
      if (record === null) throw unauthorized('Invalid API key');
      if (record.revoked) throw unauthorized('This API key has been revoked');
      if (record.disabled) throw unauthorized('This API key is disabled');
      recordLastUse(record.id);
      return record;
    },
  };
}

/** res.locals of an authenticated request. */
export interface AuthLocals {
  key: CachedKey;
}

export const authenticatedKey = (res: Response): CachedKey => (res.locals as AuthLocals).key;

export function authMiddleware(auth: Authenticator): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    let key: CachedKey;
    try {
      key = await auth.authenticate(req.headers.authorization, req.socket.remoteAddress);
    } catch (err) {
      next(err);
      return;
    }
    (res.locals as AuthLocals).key = key;
    next();
  };
}

/** Spec §5: the wrong kind of key gets 403 forbidden with required_scope. */
export function requireScope(scope: KeyScope): RequestHandler {
  return (_req, res, next) => {
    if (authenticatedKey(res).scope !== scope) next(forbiddenScope(scope));
    else next();
  };
}
