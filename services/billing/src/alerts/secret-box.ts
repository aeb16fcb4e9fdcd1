import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets at rest: AES-256-GCM under `WEBHOOK_SECRET_KEY` (32 bytes, base64). Billing
 * must sign with the secret, so a one-way digest (as for API keys) cannot do; the database holds
 * only `version ‖ iv ‖ tag ‖ ciphertext`, bound to its endpoint id (additional data), so a dump or a
 * row copied onto another endpoint reveals or verifies nothing without the key.
 */
export interface SecretBox {
  seal(plaintext: string, endpointId: string): Buffer;
  open(sealed: Buffer, endpointId: string): string;
}

const VERSION = 1;
const IV = 12;
const TAG = 16;

/** The development key (public, in this repository): production refuses it (config.ts). */
export const DEV_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

/** Decodes a base64 key of exactly 32 bytes, or throws. */
export function parseSecretKey(base64: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== 32 || key.toString('base64') !== base64.trim())
    throw new Error('must be 32 bytes, base64 (openssl rand -base64 32)');
  return key;
}

export function createSecretBox(keyBase64: string): SecretBox {
  const key = parseSecretKey(keyBase64);
  return {
    seal(plaintext, endpointId) {
      const iv = randomBytes(IV);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(endpointId));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
    },
    open(sealed, endpointId) {
      if (sealed.length < 1 + IV + TAG || sealed[0] !== VERSION) throw new Error('not a sealed secret');
      const iv = sealed.subarray(1, 1 + IV);
      const tag = sealed.subarray(1 + IV, 1 + IV + TAG);
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAAD(Buffer.from(endpointId));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(sealed.subarray(1 + IV + TAG)), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}

/** A new Standard Webhooks signing secret: `whsec_` + base64 of 32 random bytes. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
