import { createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
import jwt from 'jsonwebtoken';

export type KeyScope = 'inference' | 'management';
export const KEY_SCOPES: readonly KeyScope[] = ['inference', 'management'];

export const KEY_PREFIX = 'sk-tg-v1-';
const KEY_PATTERN = /^sk-tg-v1-[0-9a-f]{64}$/;

/** A new plaintext key: `sk-tg-v1-` + 64 hex chars from a CSPRNG. Shown once, never stored. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('hex');
}

export const looksLikeKey = (value: string): boolean => KEY_PATTERN.test(value);

/** SHA-256 hex digest: the only form of a key that is stored or used as a cache key. */
export function digestKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Display label: first 12 chars + `...` + last 3. */
export function keyLabel(key: string): string {
  return `${key.slice(0, 12)}...${key.slice(-3)}`;
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/**
 * Service JWTs: how the proxy hands a caller's identity to the owning service, and how services
 * call each other's internal APIs. HS256 with a shared secret, 60 s lifetime, fixed issuer/audience.
 * Header: `X-Service-Token: <jwt>`.
 */
export const SERVICE_TOKEN_HEADER = 'x-service-token';
const ISSUER = 'tollgate';
const AUDIENCE = 'tollgate-internal';

/** A caller's identity (an authenticated API key) or a service identity (for internal endpoints). */
export type ServiceClaims =
  | { kind: 'key'; keyId: string; accountId: string; scope: KeyScope }
  | { kind: 'service'; service: string };

interface RawClaims {
  kind: 'key' | 'service';
  sub: string;
  acc?: string;
  scope?: KeyScope;
}

export function signServiceToken(claims: ServiceClaims, secret: string, ttlSeconds = 60): string {
  const payload: RawClaims =
    claims.kind === 'key'
      ? { kind: 'key', sub: claims.keyId, acc: claims.accountId, scope: claims.scope }
      : { kind: 'service', sub: claims.service };
  return jwt.sign(payload, secret, {
    algorithm: 'HS256',
    expiresIn: ttlSeconds,
    issuer: ISSUER,
    audience: AUDIENCE,
  });
}

/** Returns the claims, or null for anything that is not a valid, unexpired Tollgate service token. */
export function verifyServiceToken(token: string, secret: string): ServiceClaims | null {
  try {
    const raw = jwt.verify(token, secret, {
      algorithms: ['HS256'],
      issuer: ISSUER,
      audience: AUDIENCE,
    }) as Partial<RawClaims> | string;
    if (typeof raw !== 'object' || typeof raw.sub !== 'string') return null;
    if (raw.kind === 'service') return { kind: 'service', service: raw.sub };
    if (
      raw.kind === 'key' &&
      typeof raw.acc === 'string' &&
      (raw.scope === 'inference' || raw.scope === 'management')
    ) {
      return { kind: 'key', keyId: raw.sub, accountId: raw.acc, scope: raw.scope };
    }
    return null;
  } catch {
    return null;
  }
}

/** Request id: `gen-<unix seconds>-<20 random alphanumerics>`. */
const ALPHANUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export function newRequestId(now = Date.now()): string {
  const bytes = randomBytes(20);
  let s = '';
  for (const b of bytes) s += ALPHANUM[b % 62];
  return `gen-${Math.floor(now / 1000)}-${s}`;
}
export const REQUEST_ID_PATTERN = /^gen-\d+-[A-Za-z0-9]{20}$/;

/**
 * `newRequestId` for hot paths: the same format and alphabet, but one CSPRNG call (randomFillSync)
 * per `batch` ids instead of one per id. Every random byte is used once.
 */
export function requestIdSource(batch = 256): (now?: number) => string {
  const pool = Buffer.allocUnsafe(20 * Math.max(1, Math.floor(batch)));
  let offset = pool.length;
  return (now = Date.now()) => {
    if (offset === pool.length) {
      randomFillSync(pool);
      offset = 0;
    }
    let s = '';
    for (let i = offset; i < offset + 20; i++) s += ALPHANUM[pool[i]! % 62];
    offset += 20;
    return `gen-${Math.floor(now / 1000)}-${s}`;
  };
}

/**
 * A cached service token: re-signed when it is half-way through its life (one HMAC per 30 s, not per
 * call). For the service client (`@tollgate/http`); caller-identity tokens are signed per request.
 */
export function serviceTokenSource(secret: string, service: string, ttlSeconds = 60): () => string {
  let token = '';
  let expiresAt = 0;
  return () => {
    const now = Date.now();
    if (now >= expiresAt) {
      token = signServiceToken({ kind: 'service', service }, secret, ttlSeconds);
      expiresAt = now + (ttlSeconds * 1000) / 2;
    }
    return token;
  };
}
