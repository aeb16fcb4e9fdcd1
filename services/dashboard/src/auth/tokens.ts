import { createHash, randomBytes } from 'node:crypto';

/** A 256-bit random token, base64url (cookie values, CSRF tokens, invitation links). */
export const newToken = (): string => randomBytes(32).toString('base64url');

/** What is stored of a session cookie or invitation token: its SHA-256. */
export const digestToken = (token: string): string => createHash('sha256').update(token).digest('hex');
