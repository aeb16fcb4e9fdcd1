import { type KeyObject, sign, verify } from 'node:crypto';

/**
 * Signed usage messages. The proxy signs every AMQP message it publishes (one Ed25519 signature per
 * message, not per event: a message packs up to 100 events, so billing verifies a few hundred
 * signatures a second at full rate) with its service key; billing verifies with the proxy's public
 * key and dead-letters what is unsigned or signed by anyone else. Anyone holding the proxy's broker
 * credentials but not its private key can no longer bill an account.
 *
 * Signed bytes: `tollgate-usage-v1\n<signer>\n<sent at, ms>\n` + the message body, so the signer and
 * the time it stamped travel with the body and cannot be swapped.
 */
export const SIGNATURE_HEADER = 'x-tollgate-signature';
export const SIGNER_HEADER = 'x-tollgate-signer';
/**
 * When the events of the message were handed to the publisher (ms since the epoch; the oldest event
 * of the message, spooled ones included): billing's reference for an event's `finished_at`.
 */
export const SENT_AT_HEADER = 'x-tollgate-sent-at';

const PREFIX = 'tollgate-usage-v1\n';

function signedBytes(signer: string, sentAt: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${PREFIX}${signer}\n${sentAt}\n`), body]);
}

export interface MessageSigner {
  /** Who signs (a service name the verifier knows a public key of). */
  readonly name: string;
  /** The headers that sign `body` as sent at `sentAt` (ms). */
  headers(body: Buffer, sentAt: number): Record<string, string | number>;
}

/** A signer for usage messages from an Ed25519 private key. */
export function createMessageSigner(name: string, privateKey: KeyObject): MessageSigner {
  return {
    name,
    headers(body, sentAt) {
      const at = Math.floor(sentAt);
      return {
        [SIGNER_HEADER]: name,
        [SENT_AT_HEADER]: at,
        [SIGNATURE_HEADER]: sign(null, signedBytes(name, at, body), privateKey).toString('base64'),
      };
    },
  };
}

export type SignatureCheck = { ok: true; signer: string; sentAt: number } | { ok: false; reason: string };

/**
 * Checks a message's signature against the public keys of the signers billing accepts
 * (`trusted`: name → Ed25519 public key). Cheap refusals (missing or malformed headers, an
 * unknown signer) come before the verification itself.
 */
export function verifyMessageSignature(
  headers: Record<string, unknown> | undefined,
  body: Buffer,
  trusted: ReadonlyMap<string, KeyObject>,
): SignatureCheck {
  const signature = headers?.[SIGNATURE_HEADER];
  const signer = headers?.[SIGNER_HEADER];
  const sentAt = Number(headers?.[SENT_AT_HEADER]);
  if (typeof signature !== 'string' || signature.length === 0)
    return { ok: false, reason: 'signature: the message is not signed' };
  if (typeof signer !== 'string') return { ok: false, reason: 'signature: the message names no signer' };
  const key = trusted.get(signer);
  if (!key) return { ok: false, reason: `signature: ${JSON.stringify(signer)} is not a trusted signer` };
  if (!Number.isSafeInteger(sentAt) || sentAt <= 0)
    return { ok: false, reason: 'signature: the message carries no valid sent-at time' };
  const raw = Buffer.from(signature, 'base64');
  if (raw.length !== 64) return { ok: false, reason: 'signature: malformed' };
  if (!verify(null, signedBytes(signer, sentAt, body), key, raw))
    return { ok: false, reason: `signature: does not verify with ${signer}'s public key` };
  return { ok: true, signer, sentAt };
}
