import { digestKey, type KeyScope, looksLikeKey } from '@tollgate/auth';
import { AppError, forbiddenScope, unauthorized } from '@tollgate/errors';
import {
  type CachedKey,
  expiredKeyMessage,
  isExpired,
  type KeyCache,
  type RequestCount,
} from '@tollgate/key-cache';
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
  authenticate(authorization: string | undefined, client?: string): Promise<Authenticated>;
}

interface Authenticated {
  key: CachedKey;
  /** This request counted in the key's current minute (null when Redis could not be reached). */
  count: RequestCount | null;
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

function bearerKey(authorization: string | undefined): string | null {
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

  /** The key-cache read and the rate-limit count in one pipelined round trip. */
  async function lookup(
    digest: string,
    client: string,
  ): Promise<{ key: CachedKey | null; count: RequestCount | null }> {
    let count: RequestCount | null = null;
    try {
      const read = await keyCache.getCounting(digest, now());
      count = read.count;
      if (read.lookup.state === 'hit') return { key: read.lookup.key, count };
      if (read.lookup.state === 'absent') return { key: null, count };
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
    return { key: record, count };
  }

  return {
    async authenticate(authorization, client = '') {
      const key = bearerKey(authorization);
      if (key === null)
        throw unauthorized('Missing or malformed Authorization header (expected "Bearer <key>")');
      if (!looksLikeKey(key)) throw unauthorized('Invalid API key');
      const { key: record, count } = await lookup(digestKey(key), client);
      if (record === null) throw unauthorized('Invalid API key');
      if (record.revoked) throw unauthorized('This API key has been revoked');
      if (record.disabled) throw unauthorized('This API key is disabled');
      if (record.expiresAt != null && isExpired(record, now())) {
        throw unauthorized(expiredKeyMessage(record.expiresAt));
      }
      recordLastUse(record.id);
      return { key: record, count };
    },
  };
}

/** res.locals of an authenticated request. */
export interface AuthLocals {
  key: CachedKey;
}

export const authenticatedKey = (res: Response): CachedKey => (res.locals as AuthLocals).key;

export function authMiddleware(auth: Authenticator, now: () => number = Date.now): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    let authenticated: Authenticated;
    try {
      authenticated = await auth.authenticate(req.headers.authorization, req.socket.remoteAddress);
    } catch (err) {
      next(err);
      return;
    }
    const { key, count } = authenticated;
    const limit = key.rateLimitRpm;
    if (limit != null && count !== null) {
      res.setHeader('X-RateLimit-Limit', limit);
      res.setHeader('X-RateLimit-Remaining', Math.max(0, limit - count.count));
      res.setHeader('X-RateLimit-Reset', count.windowEndMs);
      if (count.count > limit) {
        const retryAfter = Math.max(1, Math.ceil((count.windowEndMs - now()) / 1000));
        res.setHeader('Retry-After', retryAfter);
        next(
          new AppError(
            'rate_limited',
            `This key is limited to ${limit} requests per minute; retry in ${retryAfter} s`,
            { limit, interval: '1m', retry_after_seconds: retryAfter },
          ),
        );
        return;
      }
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
