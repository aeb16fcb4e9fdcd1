import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { decodeJwt, type JWTPayload, jwtVerify, SignJWT } from 'jose';

/**
 * Service identity (docs/architecture.md "Service identity"): every caller signs its internal calls
 * with its own Ed25519 private key; every callee holds the public keys of the callers it trusts and
 * accepts, per route, only the callers that route names. A token is a compact EdDSA JWT, signed and
 * verified by `jose`:
 *
 *   header  {"alg":"EdDSA","typ":"JWT"}
 *   payload {"iss": caller, "aud": callee, "iat", "exp", "kind": "service" | "key", "sub", "acc"?, "scope"?}
 *
 * `kind: "key"` carries an authenticated API key's identity (only the proxy signs those);
 * `kind: "service"` is a service calling another's internal API. Header: `X-Service-Token: <jwt>`.
 * The proxy cannot mint a token billing accepts on its credit routes: those accept `admin` only, and
 * the proxy holds only its own private key.
 */
export const SERVICE_TOKEN_HEADER = 'x-service-token';

/** Every identity that signs internal calls; `admin` is the operator's CLI (`pnpm tollgate`). */
export const SERVICE_NAMES = ['proxy', 'keys', 'billing', 'dashboard', 'admin'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
export const isServiceName = (v: unknown): v is ServiceName => SERVICE_NAMES.includes(v as ServiceName);

export type KeyScope = 'inference' | 'management';

/** What a token says about the call: an authenticated API key, or the calling service itself. */
export type ServiceClaims =
  | { kind: 'key'; keyId: string; accountId: string; scope: KeyScope }
  | { kind: 'service' };

/** Verified claims, with the caller (`iss`) whose key signed them. */
export type VerifiedClaims = ServiceClaims & { caller: ServiceName };

/**
 * Development keypairs (PKCS#8 / SPKI DER, base64): PUBLIC, in this repository, so `make dev`,
 * `make test`, the CLI and `docker compose` work with no setup. Refused when NODE_ENV=production.
 */
export const DEV_SERVICE_KEYS: Readonly<Record<ServiceName, { privateKey: string; publicKey: string }>> = {
  proxy: {
    privateKey: 'MC4CAQAwBQYDK2VwBCIEIHPKfBntaF45Mtw4XZQqASvuzORoJu9pSQLVBphp/BbI',
    publicKey: 'MCowBQYDK2VwAyEAMLVUOxwfkXv5ypFdh+LDl5nRg0Ke+QaNWlXmg3647ME=',
  },
  keys: {
    privateKey: 'MC4CAQAwBQYDK2VwBCIEIDtjl5ywLaFiU5fRVwjN/Ea2ADDvpOtzfq4TdTST2DJ4',
    publicKey: 'MCowBQYDK2VwAyEAH9gy5gVXzPksiufAV2cb3LZxmQ0vQV0BrWibk0yfFf8=',
  },
  billing: {
    privateKey: 'MC4CAQAwBQYDK2VwBCIEICjMCnhtBxKKicDZddr5QCijTrsId1lewdeMtkB6D9KC',
    publicKey: 'MCowBQYDK2VwAyEA5FSO4xQezIjZVXT3hJIJPDReoBFk/47BC8mnIQIKHX8=',
  },
  dashboard: {
    privateKey: 'MC4CAQAwBQYDK2VwBCIEIHQRJDnsXSqq8a6kcowdGa7x+fgAF+tRaAT57UuEeHby',
    publicKey: 'MCowBQYDK2VwAyEAi+Fr6sXqDpqhgEMGKe6mrQGdPKMeZ9tcK9ITo0giDfM=',
  },
  admin: {
    privateKey: 'MC4CAQAwBQYDK2VwBCIEICwGmF8QLuGizHeGjy8n/d4HQt1wtqe8RsIzjZGcVrhg',
    publicKey: 'MCowBQYDK2VwAyEATe1icyZCKdE5lA1ZuXLIlJP1dMNNNpDJbsnVVy7MSOI=',
  },
};

/** `SERVICE_PUBLIC_KEYS` of the development stack: every dev identity. */
export const DEV_SERVICE_PUBLIC_KEYS = SERVICE_NAMES.map((n) => `${n}=${DEV_SERVICE_KEYS[n].publicKey}`).join(
  ',',
);

const pem = (text: string) => text.includes('-----BEGIN');

/** An Ed25519 private key from PEM or base64 PKCS#8 DER; throws an Error saying what is wrong. */
export function parsePrivateKey(text: string): KeyObject {
  let key: KeyObject;
  try {
    const t = text.trim();
    key = pem(t)
      ? createPrivateKey(t)
      : createPrivateKey({ key: Buffer.from(t, 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error('not a private key (expected PEM or base64 PKCS#8 DER)');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('must be an Ed25519 key');
  return key;
}

/** An Ed25519 public key from PEM or base64 SPKI DER; throws an Error saying what is wrong. */
export function parsePublicKey(text: string): KeyObject {
  let key: KeyObject;
  try {
    const t = text.trim();
    key = pem(t)
      ? createPublicKey(t)
      : createPublicKey({ key: Buffer.from(t, 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw new Error('not a public key (expected PEM or base64 SPKI DER)');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('must be an Ed25519 key');
  return key;
}

/**
 * `SERVICE_PUBLIC_KEYS`: `name=<key>,name=<key>` (commas or newlines between entries; a name from
 * SERVICE_NAMES; each name once). Throws an Error naming the bad entry.
 */
export function parsePublicKeys(text: string): Map<ServiceName, KeyObject> {
  const keys = new Map<ServiceName, KeyObject>();
  const entries = pem(text) ? text.split(/,(?=\s*[a-z]+\s*=)/) : text.split(/[,\n]/);
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    const eq = entry.indexOf('=');
    const name = eq > 0 ? entry.slice(0, eq).trim() : '';
    if (!isServiceName(name)) {
      throw new Error(
        `"${name || entry.slice(0, 20)}" is not a service name (one of ${SERVICE_NAMES.join(', ')})`,
      );
    }
    if (keys.has(name)) throw new Error(`${name} is listed twice`);
    try {
      keys.set(name, parsePublicKey(entry.slice(eq + 1)));
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`);
    }
  }
  return keys;
}

/** A new Ed25519 keypair as `SERVICE_PRIVATE_KEY` / `SERVICE_PUBLIC_KEYS` take it (base64 DER). */
export function generateServiceKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

const spki = (key: KeyObject): string =>
  (key.type === 'private' ? createPublicKey(key) : key)
    .export({ type: 'spki', format: 'der' })
    .toString('base64');

const DEV_PUBLIC = new Set(SERVICE_NAMES.map((n) => DEV_SERVICE_KEYS[n].publicKey));

/** True for a development key (private or public, whatever its encoding): never for production. */
export const isDevServiceKey = (key: KeyObject): boolean => DEV_PUBLIC.has(spki(key));

/** The one protected header every token carries (a token with any other is refused before its signature). */
const HEADER = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' })).toString('base64url');
/** Longest lifetime a callee accepts (a stolen token is useful for at most this long). */
export const MAX_SERVICE_TOKEN_TTL_SECONDS = 300;
/** Clock difference between hosts tolerated on `iat`. */
const CLOCK_SKEW_SECONDS = 30;
const MAX_TOKEN_LENGTH = 2048;

export interface ServiceSigner {
  readonly name: ServiceName;
  /** A token from this service for `audience`, valid `ttlSeconds` (default 60). */
  sign(audience: ServiceName, claims?: ServiceClaims, ttlSeconds?: number): Promise<string>;
}

/** Signs compact EdDSA JWTs with `jose` (docs/architecture.md "Service identity"). */
export function createServiceSigner(name: ServiceName, privateKey: KeyObject | string): ServiceSigner {
  // `jose` converts a KeyObject to its WebCrypto form once and keeps it (per key object).
  const key = typeof privateKey === 'string' ? parsePrivateKey(privateKey) : privateKey;
  return {
    name,
    sign(audience, claims = { kind: 'service' }, ttlSeconds = 60) {
      const iat = Math.floor(Date.now() / 1000);
      const payload =
        claims.kind === 'key'
          ? { kind: 'key', sub: claims.keyId, acc: claims.accountId, scope: claims.scope }
          : { kind: 'service', sub: name };
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
        .setIssuer(name)
        .setAudience(audience)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSeconds)
        .sign(key);
    },
  };
}

export interface ServiceVerifier {
  /** This service: the audience every accepted token must name. */
  readonly name: ServiceName;
  /** The claims of a valid, unexpired token for this service signed by a trusted caller; else null. */
  verify(token: string): Promise<VerifiedClaims | null>;
}

/**
 * The claims checks, on the payload before its signature is checked (a token that fails them costs no
 * signature check) and again by `jose` on the verified one: this service is the audience, the issuer
 * is a trusted caller, unexpired, issued no later than CLOCK_SKEW_SECONDS from now, living at most
 * MAX_SERVICE_TOKEN_TTL_SECONDS.
 */
function acceptable(
  p: JWTPayload,
  audience: ServiceName,
  nowSeconds: number,
): p is JWTPayload & {
  iss: ServiceName;
  exp: number;
  iat: number;
} {
  if (!isServiceName(p.iss) || p.aud !== audience) return false;
  if (typeof p.exp !== 'number' || typeof p.iat !== 'number') return false;
  if (p.exp <= nowSeconds || p.iat > nowSeconds + CLOCK_SKEW_SECONDS) return false;
  return p.exp - p.iat <= MAX_SERVICE_TOKEN_TTL_SECONDS;
}

/** The caller identity of a verified payload (`kind` service or key), or null for any other shape. */
function claimsOf(p: JWTPayload & { iss: ServiceName }): VerifiedClaims | null {
  if (p.kind === 'service' && p.sub === p.iss) return { kind: 'service', caller: p.iss };
  if (
    p.kind === 'key' &&
    typeof p.sub === 'string' &&
    typeof p.acc === 'string' &&
    (p.scope === 'inference' || p.scope === 'management')
  ) {
    return { kind: 'key', keyId: p.sub, accountId: p.acc, scope: p.scope, caller: p.iss };
  }
  return null;
}

/**
 * The callee's side: `jose` checks the signature (EdDSA only, header `typ: JWT`) and the claims.
 * Verified tokens are cached by their exact string until they expire (a caller re-uses one token for
 * half its life, so an Ed25519 verification happens about once per caller per 30 s, not per call);
 * the cache holds at most `cacheSize` tokens. Any invalid token is null, never an exception.
 */
export function createServiceVerifier(
  name: ServiceName,
  publicKeys: ReadonlyMap<ServiceName, KeyObject> | string,
  options: { cacheSize?: number } = {},
): ServiceVerifier {
  const keys = typeof publicKeys === 'string' ? parsePublicKeys(publicKeys) : publicKeys;
  const cacheSize = options.cacheSize ?? 4096;
  const cache = new Map<string, { claims: VerifiedClaims; expiresAt: number }>();

  const remember = (token: string, claims: VerifiedClaims, expiresAt: number) => {
    if (cache.size >= cacheSize) {
      const now = Date.now();
      for (const [t, e] of cache) if (e.expiresAt <= now) cache.delete(t);
      if (cache.size >= cacheSize) cache.clear();
    }
    cache.set(token, { claims, expiresAt });
  };

  const verifyNew = async (token: string, now: number): Promise<VerifiedClaims | null> => {
    if (!token.startsWith(`${HEADER}.`)) return null;
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return null;
    }
    if (!acceptable(unverified, name, now / 1000)) return null;
    const key = keys.get(unverified.iss);
    if (!key) return null;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: ['EdDSA'],
        typ: 'JWT',
        audience: name,
        issuer: unverified.iss,
        requiredClaims: ['iat', 'exp', 'sub'],
        currentDate: new Date(now),
      }));
    } catch {
      return null;
    }
    if (!acceptable(payload, name, now / 1000)) return null;
    const claims = claimsOf(payload);
    if (claims) remember(token, claims, payload.exp * 1000);
    return claims;
  };

  return {
    name,
    async verify(token) {
      if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return null;
      const now = Date.now();
      const hit = cache.get(token);
      if (hit) {
        if (hit.expiresAt > now) return hit.claims;
        cache.delete(token);
        return null;
      }
      return verifyNew(token, now);
    },
  };
}

/**
 * A cached service token for one callee: re-signed when it is half-way through its life (one
 * signature per 30 s, not per call). For the service client (`@tollgate/http`).
 */
export function serviceTokenSource(
  signer: ServiceSigner,
  audience: ServiceName,
  ttlSeconds = 60,
): () => Promise<string> {
  let token: Promise<string> = Promise.resolve('');
  let renewAt = 0;
  return () => {
    const now = Date.now();
    if (now >= renewAt) {
      token = signer.sign(audience, { kind: 'service' }, ttlSeconds);
      renewAt = now + (ttlSeconds * 1000) / 2;
      // A failed signature is not kept: the next call signs again.
      token.catch(() => {
        renewAt = 0;
      });
    }
    return token;
  };
}

/** The caller identity a `kind: key` token carries. */
export type KeyClaims = Extract<ServiceClaims, { kind: 'key' }>;

/**
 * Cached caller-identity (`kind: key`) tokens for one callee, one per key (id, account and scope):
 * re-signed half-way through their life like serviceTokenSource. A key's forwarded account calls
 * (`/key`, `/credits`, …) then cost one Ed25519 signature in the caller per 30 s instead of one each,
 * and the callee, which caches verified tokens by their exact string, one verification. A token still
 * names exactly the key it was signed for, for this callee only, and lives `ttlSeconds`; reusing it is
 * safe because the caller authenticates the key on every request before it uses the token.
 * At most `max` keys are held (all forgotten when full: one signature each to refill).
 */
export function keyTokenSource(
  signer: ServiceSigner,
  audience: ServiceName,
  options: { ttlSeconds?: number; max?: number } = {},
): (claims: KeyClaims) => Promise<string> {
  const ttlSeconds = options.ttlSeconds ?? 60;
  const max = options.max ?? 10_000;
  const tokens = new Map<string, { token: Promise<string>; renewAt: number }>();
  return (claims) => {
    const id = `${claims.keyId}\u0000${claims.accountId}\u0000${claims.scope}`;
    const now = Date.now();
    const cached = tokens.get(id);
    if (cached !== undefined && now < cached.renewAt) return cached.token;
    const token = signer.sign(audience, claims, ttlSeconds);
    if (cached === undefined && tokens.size >= max) tokens.clear();
    const entry = { token, renewAt: now + (ttlSeconds * 1000) / 2 };
    tokens.set(id, entry);
    // A failed signature is not kept: the next call for this key signs again.
    token.catch(() => {
      if (tokens.get(id) === entry) tokens.delete(id);
    });
    return token;
  };
}

/** The development signer of `name` (tests, tools; its key is public). */
export const devServiceSigner = (name: ServiceName): ServiceSigner =>
  createServiceSigner(name, DEV_SERVICE_KEYS[name].privateKey);

/** A verifier for `name` trusting every development identity (tests, tools). */
export const devServiceVerifier = (name: ServiceName): ServiceVerifier =>
  createServiceVerifier(name, DEV_SERVICE_PUBLIC_KEYS);
