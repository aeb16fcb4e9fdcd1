import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashing with scrypt (memory-hard) at OWASP's recommendation: N=2^17, r=8, p=1 (128 MiB per
 * hash), 16-byte random salt, 32-byte hash. Stored as `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`, so
 * older hashes (N=2^15 before) still verify, and `needsRehash` tells sign-in to store a new one.
 * Plaintext passwords are never stored or logged.
 */
const PARAMS = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r + 16 * 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, PARAMS);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** A hash of a random password: verified against when the email is unknown, so timing tells nothing. */
let decoy: Promise<string> | undefined;

/** True when `password` matches `stored`; a null `stored` (unknown user, no password yet) is false after the same work. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (stored === null) decoy ??= hashPassword(randomBytes(16).toString('hex'));
  const target = stored ?? (await decoy!);
  const [scheme, n, r, p, salt, hash] = target.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return stored !== null && expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** True when `stored` was hashed with weaker parameters than today's (sign-in then stores a new hash). */
export function needsRehash(stored: string): boolean {
  const [scheme, n, r, p] = stored.split('$');
  return scheme !== 'scrypt' || Number(n) < PARAMS.N || Number(r) < PARAMS.r || Number(p) < PARAMS.p;
}

/** Password rules: 12–200 characters. */
export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 200;
