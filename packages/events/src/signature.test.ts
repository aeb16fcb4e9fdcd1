import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMessageSigner, SENT_AT_HEADER, SIGNER_HEADER, verifyMessageSignature } from './signature';

const proxy = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const trusted = new Map([['proxy', proxy.publicKey]]);
const body = Buffer.from('{"type":"usage"}\n{"type":"usage"}');

describe('usage message signatures', () => {
  it('verifies what the proxy signed, with its signer and sent-at time', () => {
    const headers = createMessageSigner('proxy', proxy.privateKey).headers(body, 1_700_000_000_123);
    expect(verifyMessageSignature(headers, body, trusted)).toEqual({
      ok: true,
      signer: 'proxy',
      sentAt: 1_700_000_000_123,
    });
  });

  it('refuses a missing signature, an unknown signer, another key, a changed body, signer or time', () => {
    const headers = createMessageSigner('proxy', proxy.privateKey).headers(body, 1_700_000_000_000);
    const reason = (h: Record<string, unknown> | undefined, b = body) => {
      const r = verifyMessageSignature(h, b, trusted);
      return r.ok ? 'ok' : r.reason;
    };
    expect(reason(undefined)).toBe('signature: the message is not signed');
    expect(reason({ ...headers, [SIGNER_HEADER]: 'keys' })).toBe('signature: "keys" is not a trusted signer');
    const forged = createMessageSigner('proxy', other.privateKey).headers(body, 1_700_000_000_000);
    expect(reason(forged)).toBe("signature: does not verify with proxy's public key");
    expect(reason(headers, Buffer.from('{"type":"usage"}'))).toMatch(/does not verify/);
    expect(reason({ ...headers, [SENT_AT_HEADER]: 1_700_000_000_001 })).toMatch(/does not verify/);
    expect(reason({ ...headers, [SENT_AT_HEADER]: 'soon' })).toBe(
      'signature: the message carries no valid sent-at time',
    );
  });
});
