import { digestKey, type KeyScope, looksLikeKey } from '@tollgate/auth';
import { AppError, forbiddenScope, unauthorized } from '@tollgate/errors';
import type { ClientAddress } from '@tollgate/http';
import {
  type CachedKey,
  expiredKeyMessage,
  isExpired,
  type KeyCache,
  type RequestCount,
} from '@tollgate/key-cache';
import type { Logger } from '@tollgate/logger';
import type { RedisClient } from '@tollgate/redis';
import type { Handler, Next, ProxyRequest, ProxyResponse } from '../http/types';
import { withRefusedKey } from '../pipeline/refusal';
import type { KeyResolver } from './key-resolver';
import type { UnknownKeyLimiter, UnknownKeyRefusal } from './unknown-keys';

/**
 * Authentication on the hot path: sha256 of the bearer key, one Redis HMGET through the key cache,
 * and only on a miss/pending/Redis failure a call to the keys service.
 *
 * The front doors may instead `recall` the record this process read last time, with no I/O, because
 * their admission script checks that record's version in Redis atomically with the admission (and
 * counts the rate limit there): a changed, disabled or revoked key is still refused on its very next
 * request, and that request costs one round trip before the provider instead of two (the check fails,
 * the request is authenticated afresh). Nothing else trusts a recalled record.
 */
export interface Authenticator {
  /** `client`: the caller's address, for the unknown-key rate limit. */
  authenticate(authorization: string | undefined, client?: string): Promise<Authenticated>;
  /**
   * The record last read from the key cache for this bearer key (no I/O), unverified: its use is
   * recorded by `used` once the admission has checked it (a key revoked meanwhile records none).
   */
  recall(authorization: string | undefined): Recalled | null;
  /** Records a use of a recalled key whose record was then checked (the key's `last_used_at`). */
  used(keyId: string): void;
  /**
   * The same record, without recording a use: what an early account read is signed for (it is
   * authenticated right after, forward/account-read.ts). Null when none, or revoked, disabled, expired.
   */
  peek(authorization: string | undefined): CachedKey | null;
  /** Drops a recalled record (its check found it stale). */
  forget(digest: string): void;
}

/** A record this process read before, and the digest whose cache entry must still hold it. */
interface Recalled {
  key: CachedKey;
  digest: string;
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
  redis: RedisClient;
  /** The last-used hash of a key id (`lastUsedHashKey` of @tollgate/key-cache: one of 16 buckets). */
  lastUsedKey: (keyId: string) => string;
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
/** Bounds the recalled records; clearing it only costs one extra key-cache read per active key. */
const RECALLED_MAX = 10_000;

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

  /** Fire-and-forget (in the turn's Redis write, `batchWrites`); the keys service flushes it to last_used_at. */
  function recordLastUse(keyId: string): void {
    const t = now();
    const previous = lastWritten.get(keyId);
    if (previous !== undefined && t - previous < intervalMs) return;
    if (lastWritten.size >= LAST_USED_TRACKED_MAX) lastWritten.clear();
    lastWritten.set(keyId, t);
    redis.hset(lastUsedKey(keyId), keyId, t).catch(onLastUsedError);
  }

  const unknownKeys = deps.unknownKeys;
  /** digest → the record last read from the key cache (only cache hits: their version is checkable). */
  const recalled = new Map<string, CachedKey>();

  async function countOnMiss(digest: string): Promise<RequestCount | null> {
    try {
      return await keyCache.countRequest(digest, now());
    } catch (err) {
      logger.warn({ err }, 'could not count a request in its rate window');
      return null;
    }
  }

  /** The key-cache read and the rate-limit count (cached keys only) in one round trip. */
  async function lookup(
    digest: string,
    client: string,
  ): Promise<{ key: CachedKey | null; count: RequestCount | null }> {
    let count: RequestCount | null = null;
    try {
      const read = await keyCache.getCounting(digest, now());
      count = read.count;
      if (read.lookup.state === 'hit') {
        if (recalled.size >= RECALLED_MAX) recalled.clear();
        recalled.set(digest, read.lookup.key);
        return { key: read.lookup.key, count };
      }
      recalled.delete(digest);
      if (read.lookup.state === 'absent') return { key: null, count };
    } catch (err) {
      logger.warn({ err }, 'key cache unavailable, asking the keys service');
    }
    const refused = unknownKeys?.blocked(client);
    if (refused) throw unknownKeysRefusal(refused);
    const record = await resolver.resolve(digest);
    if (record === null) unknownKeys?.recordUnknown(client);
    // A key the cache did not hold was not counted in its rate window (only cached keys are: random
    // keys cost no Redis write); a known key with a rate limit is counted now, one extra round trip
    // on a cache miss only.
    if (record !== null && count === null && record.rateLimitRpm != null) {
      count = await countOnMiss(digest);
    }
    return { key: record, count };
  }

  function remembered(authorization: string | undefined): Recalled | null {
    if (recalled.size === 0) return null;
    const key = bearerKey(authorization);
    if (key === null || !looksLikeKey(key)) return null;
    const digest = digestKey(key);
    const record = recalled.get(digest);
    if (!record || record.revoked || record.disabled || isExpired(record, now())) return null;
    return { key: record, digest };
  }

  return {
    recall: remembered,
    used: recordLastUse,
    peek(authorization) {
      return remembered(authorization)?.key ?? null;
    },
    forget(digest) {
      recalled.delete(digest);
    },
    async authenticate(authorization, client = '') {
      const key = bearerKey(authorization);
      if (key === null)
        throw unauthorized('Missing or malformed Authorization header (expected "Bearer <key>")');
      if (!looksLikeKey(key)) throw unauthorized('Invalid API key');
      const { key: record, count } = await lookup(digestKey(key), client);
      if (record === null) throw unauthorized('Invalid API key');
      // A known key refused: the error carries its record (the refusal is counted for it, http/doors.ts).
      if (record.revoked) throw withRefusedKey(unauthorized('This API key has been revoked'), record);
      if (record.disabled) throw withRefusedKey(unauthorized('This API key is disabled'), record);
      if (record.expiresAt != null && isExpired(record, now())) {
        throw withRefusedKey(unauthorized(expiredKeyMessage(record.expiresAt)), record);
      }
      recordLastUse(record.id);
      return { key: record, count };
    },
  };
}

function unknownKeysRefusal(scope: UnknownKeyRefusal): AppError {
  const message =
    scope === 'address'
      ? 'Too many requests with unknown API keys from this address; retry in a minute'
      : 'Too many requests with unknown API keys; retry shortly';
  return new AppError('rate_limited', message, { reason: 'unknown_keys', scope });
}

/** res.locals of an authenticated request. */
export interface AuthLocals {
  key: CachedKey;
  /** Set when `key` was recalled, not read: the digest whose record the admission must check. */
  unchecked?: string;
}

export const authenticatedKey = (res: ProxyResponse): CachedKey => (res.locals as AuthLocals).key;
/** The digest of a recalled (not yet checked) key record, else null. */
export const uncheckedDigest = (res: ProxyResponse): string | null =>
  (res.locals as AuthLocals).unchecked ?? null;

/**
 * The key's rate-limit headers for this request's `count` in its window, and the 429 when it is over
 * the limit (null when the key has no rate limit or the request is within it).
 */
export function rateLimitVerdict(
  res: ProxyResponse,
  key: CachedKey,
  count: RequestCount,
  nowMs: number,
): AppError | null {
  const limit = key.rateLimitRpm;
  if (limit == null) return null;
  res.setHeader('X-RateLimit-Limit', limit);
  res.setHeader('X-RateLimit-Remaining', Math.max(0, limit - count.count));
  res.setHeader('X-RateLimit-Reset', count.windowEndMs);
  if (count.count <= limit) return null;
  const retryAfter = Math.max(1, Math.ceil((count.windowEndMs - nowMs) / 1000));
  res.setHeader('Retry-After', retryAfter);
  return new AppError(
    'rate_limited',
    `This key is limited to ${limit} requests per minute; retry in ${retryAfter} s`,
    {
      limit,
      interval: '1m',
      retry_after_seconds: retryAfter,
    },
  );
}

/**
 * `clientAddress`: the caller's address for the unknown-key limit (TRUSTED_PROXIES; default the TCP peer).
 * `recall: true` (the front doors, with a spend guard that checks): a key whose record this process
 * read before passes with that record marked unchecked, no I/O; the pipeline's admission checks it
 * (see `Authenticator`, auth/recall.ts).
 */
export function authMiddleware(
  auth: Authenticator,
  now: () => number = Date.now,
  options: { recall?: boolean; clientAddress?: ClientAddress } = {},
): Handler {
  const clientOf = options.clientAddress ?? ((req: ProxyRequest) => req.socket.remoteAddress);
  return async (req: ProxyRequest, res: ProxyResponse, next: Next) => {
    const locals = res.locals as AuthLocals;
    if (options.recall) {
      const r = auth.recall(req.headers.authorization);
      if (r && r.key.scope === 'inference') {
        locals.key = r.key;
        locals.unchecked = r.digest;
        next();
        return;
      }
    }
    let authenticated: Authenticated;
    try {
      authenticated = await auth.authenticate(req.headers.authorization, clientOf(req));
    } catch (err) {
      next(err);
      return;
    }
    const { key, count } = authenticated;
    const limited = count === null ? null : rateLimitVerdict(res, key, count, now());
    if (limited) {
      next(withRefusedKey(limited, key));
      return;
    }
    locals.key = key;
    locals.unchecked = undefined;
    next();
  };
}

/** Spec §5: the wrong kind of key gets 403 forbidden with required_scope. */
export function requireScope(scope: KeyScope): Handler {
  return (_req, res, next) => {
    if (authenticatedKey(res).scope !== scope) next(forbiddenScope(scope));
    else next();
  };
}
