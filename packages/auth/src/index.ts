import { hash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

import type { KeyScope } from './service-token';

export * from './request-id-pattern';
export * from './service-token';
export const KEY_SCOPES: readonly KeyScope[] = ['inference', 'management'];

export const KEY_PREFIX = 'sk-tg-v1-';
const KEY_PATTERN = /^sk-tg-v1-[0-9a-f]{64}$/;

/** A new plaintext key: `sk-tg-v1-` + 64 hex chars from a CSPRNG. Shown once, never stored. */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('hex');
}

export const looksLikeKey = (value: string): boolean => KEY_PATTERN.test(value);

/**
 * SHA-256 hex digest: the only form of a key that is stored or used as a cache key. One-shot
 * `crypto.hash` (once per proxied request): no Hash object and stream wrapper per call, ≈ 5× cheaper
 * than `createHash(…).update(…).digest(…)` (bench/README.md, issue 30 saturate).
 */
export function digestKey(key: string): string {
  return hash('sha256', key, 'hex');
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

/** Request id: `gen-<unix seconds>-<20 random alphanumerics>`. */
const ALPHANUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export function newRequestId(now = Date.now()): string {
  const bytes = randomBytes(20);
  let s = '';
  for (const b of bytes) s += ALPHANUM[b % 62];
  return `gen-${Math.floor(now / 1000)}-${s}`;
}

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
